// Excerpt table builder: move columns up and down (the order of the checkboxes is the
// order of the columns), then ask htmx for a fresh preview.
(function () {
  "use strict";

  function refresh(form) {
    form.dispatchEvent(new Event("change", { bubbles: true }));
  }

  function ticked(li) {
    var box = li.querySelector("input[type=checkbox]");
    return !box || box.checked;
  }

  // The nearest ticked column above (or below) `item`, else the nearest column at all.
  function neighbour(item, up) {
    var step = up ? "previousElementSibling" : "nextElementSibling";
    for (var li = item[step]; li; li = li[step]) {
      if (ticked(li)) { return li; }
    }
    return item[step];
  }

  function setUpColumns() {
    var list = document.getElementById("column-list");
    var form = document.getElementById("excerpt-builder");
    if (!list || !form) { return; }
    list.addEventListener("click", function (event) {
      var button = event.target.closest("button[data-move]");
      if (!button) { return; }
      var item = button.closest("li");
      // Past the unticked columns to the next ticked one: swapping with a column not shown changes nothing
      // the researcher can see.
      var up = button.getAttribute("data-move") === "up";
      var other = neighbour(item, up);
      if (!other) { return; }
      list.insertBefore(item, up ? other : other.nextElementSibling);
      button.focus();  // keep keyboard users where they were
      refresh(form);
    });
  }

  document.addEventListener("DOMContentLoaded", setUpColumns);
}());
