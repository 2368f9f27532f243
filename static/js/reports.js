// Excerpt table builder: move columns up and down (the order of the checkboxes is the
// order of the columns), then ask htmx for a fresh preview.
(function () {
  "use strict";

  function refresh(form) {
    form.dispatchEvent(new Event("change", { bubbles: true }));
  }

  function setUpColumns() {
    var list = document.getElementById("column-list");
    var form = document.getElementById("excerpt-builder");
    if (!list || !form) { return; }
    list.addEventListener("click", function (event) {
      var button = event.target.closest("button[data-move]");
      if (!button) { return; }
      var item = button.closest("li");
      if (button.getAttribute("data-move") === "up" && item.previousElementSibling) {
        list.insertBefore(item, item.previousElementSibling);
      } else if (button.getAttribute("data-move") === "down" && item.nextElementSibling) {
        list.insertBefore(item.nextElementSibling, item);
      } else {
        return;
      }
      button.focus();  // keep keyboard users where they were
      refresh(form);
    });
  }

  document.addEventListener("DOMContentLoaded", setUpColumns);
}());
