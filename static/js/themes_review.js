// Review meetings: decision forms show only the fields of the chosen kind;
// presenter mode walks the agenda with ←/→ (or j/k) unless you are typing.
(function () {
  "use strict";

  // Without this script every field shows, labelled with the kinds it serves; with it, a field shared by two
  // kinds (the name of a rename or of a split) takes the wording of the chosen one.
  function sync(form) {
    var kind = form.querySelector(".decision-kind").value;
    form.querySelectorAll("[data-kinds]").forEach(function (field) {
      field.hidden = field.getAttribute("data-kinds").split(" ").indexOf(kind) < 0;
    });
    form.querySelectorAll("[data-label-" + kind + "]").forEach(function (label) {
      label.textContent = label.getAttribute("data-label-" + kind);
    });
  }

  document.querySelectorAll(".decision-form").forEach(sync);
  document.addEventListener("change", function (event) {
    if (event.target.classList && event.target.classList.contains("decision-kind")) { sync(event.target.closest("form")); }
  });

  // Presenter mode only (the page with the keyboard list, themes/shortcuts.py PRESENTER).
  function follow(id) {
    var link = document.getElementById(id);
    if (!link) return false;  // the first or last theme: the key does its usual thing
    window.location.assign(link.href);
  }
  if (document.getElementById("keyboard-shortcuts")) {
    window.RTA.shortcuts({
      next: function () { follow("present-next"); },
      previous: function () { follow("present-prev"); },
    });
    document.getElementById("show-help").addEventListener("click", function () {
      document.getElementById("help-dialog").showModal();
    });
  }
})();
