// Conduct page behaviour: inserting planned questions, Ctrl+Enter to send,
// keeping streaming columns scrolled to the newest words.
(function () {
  "use strict";

  // The question box the interviewer used last; planned questions go there.
  let lastBox = null;

  function boxes() {
    return Array.from(document.querySelectorAll("textarea[data-question-box]"));
  }

  document.addEventListener("focusin", function (event) {
    if (event.target.matches && event.target.matches("textarea[data-question-box]")) {
      lastBox = event.target;
    }
  });

  document.addEventListener("click", function (event) {
    const button = event.target.closest("[data-insert-question]");
    if (!button) return;
    event.preventDefault();
    const box = lastBox && document.body.contains(lastBox) ? lastBox : boxes()[0];
    if (!box) return;
    const text = button.getAttribute("data-insert-question");
    box.value = box.value.trim() ? box.value.trimEnd() + "\n\n" + text : text;
    // A planned question sent from this box is ticked on the checklist.
    const planned = button.getAttribute("data-planned-index");
    const slot = box.form && box.form.querySelector("input[name=planned]");
    if (slot && planned !== null) slot.value = planned;
    box.focus();
    box.setSelectionRange(box.value.length, box.value.length);
  });

  // Ctrl/Cmd+Enter sends the form the question box belongs to.
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Enter" || !(event.ctrlKey || event.metaKey)) return;
    const box = event.target.closest && event.target.closest("textarea[data-question-box]");
    if (!box || !box.form) return;
    event.preventDefault();
    box.form.requestSubmit();
  });

  // Clear a question box once its question has been saved and sent.
  document.addEventListener("htmx:afterRequest", function (event) {
    const form = event.detail.elt;
    if (!event.detail.successful || !form.matches || !form.matches("form[data-clears]")) return;
    if (form.querySelector("[role=alert]")) return; // keep the question when it was refused
    form.querySelectorAll("textarea[data-question-box]").forEach(function (box) {
      box.value = "";
    });
    const slot = form.querySelector("input[name=planned]");
    if (slot) slot.value = "";
  });

  // Follow the stream: keep each column pinned to its newest words unless the
  // reader scrolled up to read; scrolling back to the bottom pins it again.
  function atBottom(column) {
    return column.scrollHeight - column.scrollTop - column.clientHeight < 80;
  }
  document.addEventListener("scroll", function (event) {
    const column = event.target;
    if (column.matches && column.matches("[data-transcript]")) {
      column.dataset.pinned = atBottom(column) ? "true" : "false";
    }
  }, true);
  function follow() {
    document.querySelectorAll("[data-transcript]").forEach(function (column) {
      if (column.dataset.pinned !== "false") column.scrollTop = column.scrollHeight;
    });
  }
  document.addEventListener("htmx:afterSettle", follow);
  document.addEventListener("DOMContentLoaded", follow);

  // Four or more models are wider than the screen: the columns scroll sideways. Their own scrollbar sits
  // at the bottom of tall columns, below the fold, so a second one above the columns mirrors it.
  function mirrorScrollbar() {
    const columns = document.querySelector("[data-columns]");
    const bar = document.querySelector("[data-columns-scrollbar]");
    if (!columns || !bar) return;
    const spacer = bar.firstElementChild;
    function measure() {
      spacer.style.width = columns.scrollWidth + "px";
      bar.hidden = columns.scrollWidth <= columns.clientWidth + 1;
    }
    function mirror(from, to) {
      // Setting an equal value fires no scroll event, so the two boxes do not echo each other forever.
      return function () { if (to.scrollLeft !== from.scrollLeft) to.scrollLeft = from.scrollLeft; };
    }
    bar.addEventListener("scroll", mirror(bar, columns));
    columns.addEventListener("scroll", mirror(columns, bar));
    new ResizeObserver(measure).observe(columns);
    measure();
  }
  document.addEventListener("DOMContentLoaded", mirrorScrollbar);
})();
