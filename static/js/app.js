// Behaviour shared by every page. No inline scripts anywhere (Content-Security-Policy).
(function () {
  "use strict";

  // Forms and buttons marked data-confirm ask before submitting (e.g. emptying the trash).
  document.addEventListener("submit", function (event) {
    var form = event.target;
    var message = form.getAttribute("data-confirm");
    if (message && !window.confirm(message)) {
      event.preventDefault();
    }
  }, true);

  // htmx errors: show the server's message instead of failing silently.
  document.addEventListener("htmx:responseError", function (event) {
    var xhr = event.detail.xhr;
    var text = xhr.status === 403 ? "Your role in this project is read-only."
      : xhr.status === 404 ? "Not found: it may have been deleted."
      : xhr.status === 503 ? "The server is temporarily unavailable; your last change was not saved. Try again."
      : "Something went wrong (" + xhr.status + "). Try again.";
    window.RTA.flash(text, "error");
  });
  // A form that htmx swaps with its own answer (data-answer-replaces-form) keeps what was changed while that
  // answer was on its way: a stale answer is not swapped in, and the form as it is now is sent instead.
  function formState(form) { return new URLSearchParams(new FormData(form)).toString(); }
  // The form whose request this is, if it is such a form (in beforeSwap, detail.elt is the swap's target).
  function answerReplaces(event) {
    var elt = event.detail.requestConfig && event.detail.requestConfig.elt;
    return elt && elt.matches && elt.matches("form[data-answer-replaces-form]") ? elt : null;
  }
  document.addEventListener("htmx:beforeRequest", function (event) {
    var form = answerReplaces(event);
    if (form) { form.dataset.sentState = formState(form); }
  });
  document.addEventListener("htmx:beforeSwap", function (event) {
    var form = answerReplaces(event);
    if (!form || formState(form) === form.dataset.sentState) { return; }
    event.detail.shouldSwap = false;
    form.dataset.sendAgain = "1";
  });
  document.addEventListener("htmx:afterRequest", function (event) {
    var form = answerReplaces(event);  // sent again once this request is done: htmx drops one made meanwhile
    if (form && form.dataset.sendAgain) {
      delete form.dataset.sendAgain;
      window.htmx.trigger(form, "change");
    }
  });

  // A field the browser finds invalid (a number under its min) stopped an htmx request without a word: say
  // which field and why, as a plain submit would.
  document.addEventListener("htmx:validation:halted", function (event) {
    var form = event.detail.elt && event.detail.elt.closest("form");
    if (form) { form.reportValidity(); }
  });
  document.addEventListener("htmx:sendError", function () {
    window.RTA.flash("The server could not be reached; your last change was not saved.", "error");
  });

  window.RTA = {
    flash: function (text, level) {
      var region = document.querySelector("div.messages"), list = region && region.querySelector("ul");
      if (!region) { return; }  // a page without the base template's message region
      if (!list) { list = region.appendChild(document.createElement("ul")); }
      var item = document.createElement("li");
      item.className = "message " + (level || "info");
      item.textContent = text;
      list.appendChild(item);
      setTimeout(function () { item.remove(); }, 8000);
    },

    // A page's keys come from its list (projects/shortcuts.py, rendered as #keyboard-shortcuts with the
    // `?` dialog); `actions` maps each listed action to a function. Only listed keys are handled, and a
    // list and script that disagree show up as console errors. An action returning false lets the key through.
    shortcuts: function (actions) {
      var source = document.getElementById("keyboard-shortcuts"), help = document.getElementById("help-dialog");
      if (!source || !help) { console.error("This page has no keyboard list ({% keyboard_help %})."); return; }
      var listed = JSON.parse(source.textContent), keymap = {};
      if (!actions.help) actions.help = function () { help.showModal(); };
      listed.forEach(function (entry) {
        if (!actions[entry.action]) { console.error("The keyboard list names an unknown action: " + entry.action); return; }
        entry.keys.forEach(function (key) { keymap[key] = actions[entry.action]; });
      });
      Object.keys(actions).forEach(function (name) {
        if (!listed.some(function (entry) { return entry.action === name; })) console.error("Action missing from the keyboard list: " + name);
      });
      help.setAttribute("data-handled", Object.keys(keymap).join(" "));
      document.addEventListener("keydown", function (event) {
        if (document.querySelector("dialog[open]")) return;
        var target = event.target;
        if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) return;
        if (event.ctrlKey || event.metaKey || event.altKey) return;
        var run = keymap[event.key];
        if (run && run(event) !== false) event.preventDefault();
      });
    }
  };
})();
