// Review queue of the AI second reader: j/k move between suggestions, y accepts, r rejects.
(function () {
  "use strict";
  function items() { return Array.from(document.querySelectorAll("[data-suggestion]")); }
  function current() { return document.activeElement && document.activeElement.closest("[data-suggestion]"); }
  function move(step) {
    const all = items();
    if (!all.length) return;
    const at = all.indexOf(current());
    const next = all[Math.min(all.length - 1, Math.max(0, at < 0 ? 0 : at + step))];
    next.focus();
    next.scrollIntoView({block: "nearest"});
  }
  // The keys and the help come from coding/shortcuts.py SECOND_READER.
  window.RTA.shortcuts({
    down: function () { move(1); },
    up: function () { move(-1); },
    accept: function () {
      const item = current(), button = item && item.querySelector("[data-accept]");
      if (!button) return false;
      button.click();
    },
    reject: function () {
      const item = current(), reason = item && item.querySelector("[data-reject]") && item.querySelector("input[name=reason]");
      if (!reason) return false;
      reason.focus();
    },
  });
  // After a decision the row is replaced: keep the keyboard in the queue on the next pending one.
  document.body.addEventListener("htmx:afterSwap", function (event) {
    const swapped = event.detail.target && document.getElementById(event.detail.target.id);
    if (!swapped || !swapped.matches("[data-suggestion]")) return;
    const all = items();
    const next = all.slice(all.indexOf(swapped) + 1).find(function (el) { return el.querySelector("[data-accept]"); });
    (next || swapped).focus();
  });
})();
