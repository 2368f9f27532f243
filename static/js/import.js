// Import pages: drag-and-drop upload, tick all/none, the "new participant" field.
(function () {
  "use strict";

  function listFiles(input, list) {
    list.textContent = "";
    Array.prototype.forEach.call(input.files, function (file) {
      var item = document.createElement("li");
      item.textContent = file.name + " (" + Math.max(1, Math.round(file.size / 1024)) + " KB)";
      list.appendChild(item);
    });
  }

  function setUpDropzone() {
    var zone = document.getElementById("dropzone");
    var input = document.getElementById("id_files");
    var list = document.getElementById("file-list");
    if (!zone || !input) { return; }
    input.addEventListener("change", function () { listFiles(input, list); });
    ["dragenter", "dragover"].forEach(function (name) {
      zone.addEventListener(name, function (event) {
        event.preventDefault();
        zone.classList.add("dragging");
      });
    });
    ["dragleave", "drop"].forEach(function (name) {
      zone.addEventListener(name, function () { zone.classList.remove("dragging"); });
    });
    zone.addEventListener("drop", function (event) {
      event.preventDefault();
      if (event.dataTransfer && event.dataTransfer.files.length) {
        input.files = event.dataTransfer.files;
        listFiles(input, list);
      }
    });
  }

  function setUpChoices() {
    var form = document.getElementById("import-choices");
    if (!form) { return; }
    form.addEventListener("click", function (event) {
      var mode = event.target.getAttribute && event.target.getAttribute("data-tick");
      if (!mode) { return; }
      form.querySelectorAll("input[name=conversations]").forEach(function (box) {
        if (!box.closest("tr").hidden) { box.checked = mode === "all"; }
      });
    });
    var filter = document.getElementById("conversation-filter");
    if (filter) {
      filter.addEventListener("input", function () {
        var words = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
        form.querySelectorAll("#conversation-list tbody tr").forEach(function (row) {
          var text = row.textContent.toLowerCase();
          row.hidden = !words.every(function (w) { return text.indexOf(w) !== -1; });
        });
      });
      // Enter in the filter must not submit the import.
      filter.addEventListener("keydown", function (event) {
        if (event.key === "Enter") { event.preventDefault(); }
      });
    }
    var select = document.getElementById("id_participant");
    var field = document.getElementById("new-participant-field");
    if (select && field) {
      var toggle = function () {
        var hide = select.value !== "new";
        field.hidden = hide;
        field.style.display = hide ? "none" : "";  // .field sets display, which beats [hidden]
      };
      select.addEventListener("change", toggle);
      toggle();
    }
  }

  document.addEventListener("DOMContentLoaded", function () {
    setUpDropzone();
    setUpChoices();
  });
}());
