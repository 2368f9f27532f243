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

  document.addEventListener("keydown", function (event) {
    var tag = (event.target.tagName || "").toLowerCase();
    if (tag === "input" || tag === "textarea" || tag === "select" || event.target.isContentEditable) { return; }
    if (event.altKey || event.ctrlKey || event.metaKey) { return; }
    var link = null;
    if (event.key === "ArrowRight" || event.key === "j") { link = document.getElementById("present-next"); }
    if (event.key === "ArrowLeft" || event.key === "k") { link = document.getElementById("present-prev"); }
    if (link) { event.preventDefault(); window.location.assign(link.href); }
  });
})();
