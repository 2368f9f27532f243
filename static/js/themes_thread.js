// Theme discussion: reply targeting, clearing the composer after posting.
// New comments arrive by htmx polling (hx-trigger="every 4s" on #thread); #thread's data-since says
// which older threads the page has loaded, and a post keeps them in the answer.
(function () {
  "use strict";

  document.addEventListener("click", function (event) {
    var reply = event.target.closest && event.target.closest(".reply-btn");
    var composer = document.getElementById("composer");
    if (!composer) { return; }
    if (reply) {
      composer.querySelector("[name=parent]").value = reply.getAttribute("data-parent");
      composer.querySelector(".replying-to").textContent = reply.getAttribute("data-author");
      composer.querySelector(".replying").hidden = false;
      composer.querySelector("textarea").focus();
    }
    if (event.target.closest && event.target.closest(".cancel-reply")) {
      composer.querySelector("[name=parent]").value = "";
      composer.querySelector(".replying").hidden = true;
    }
  });

  document.addEventListener("htmx:configRequest", function (event) {
    var thread = document.getElementById("thread");
    if (thread && event.detail.elt.id === "composer") {
      event.detail.parameters.since = thread.getAttribute("data-since");
    }
  });

  document.addEventListener("htmx:afterRequest", function (event) {
    var composer = document.getElementById("composer");
    if (composer && event.detail.elt === composer && event.detail.successful) {
      composer.reset();
      composer.querySelector("[name=parent]").value = "";
      // The next comment is a new submission: a resend of this one's key would be answered as this one was
      // (projects/submissions.py), without posting.
      var key = composer.querySelector("[name=submission_key]");
      if (key) { key.value = newSubmissionKey(); }
      composer.querySelector(".replying").hidden = true;
    }
  });

  function newSubmissionKey() {
    if (window.crypto && window.crypto.randomUUID) { return window.crypto.randomUUID().replace(/-/g, ""); }
    var bytes = new Uint8Array(16);
    window.crypto.getRandomValues(bytes);
    return Array.prototype.map.call(bytes, function (b) { return ("0" + b.toString(16)).slice(-2); }).join("");
  }

  // A comment refused because a colleague trashed or merged the theme meanwhile (409): the comment stays in the form
  // and the server's sentence says what happened, instead of the generic "Something went wrong".
  document.addEventListener("htmx:responseError", function (event) {
    var xhr = event.detail.xhr;
    if (event.detail.elt && event.detail.elt.id === "composer" && xhr.status === 409 && xhr.responseText) {
      event.stopPropagation();
      window.RTA.flash(xhr.responseText, "error");
    }
  }, true);

  // Ctrl/Cmd+Enter posts, as in the live interview; "@" offers the project's members.
  document.addEventListener("keydown", function (event) {
    var box = event.target;
    if (!box || box.id !== "comment-body") { return; }
    var list = document.getElementById("mention-list");
    if (list && !list.hidden) {
      var items = Array.prototype.slice.call(list.children);
      var at = items.findIndex(function (li) { return li.getAttribute("aria-selected") === "true"; });
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        var next = (at + (event.key === "ArrowDown" ? 1 : -1) + items.length) % items.length;
        items.forEach(function (li, i) { li.setAttribute("aria-selected", i === next ? "true" : "false"); });
        event.preventDefault();
        return;
      }
      if ((event.key === "Enter" || event.key === "Tab") && !event.ctrlKey && !event.metaKey) {
        insertMention(box, items[Math.max(0, at)].dataset.username);
        event.preventDefault();
        return;
      }
      if (event.key === "Escape") { list.hidden = true; event.preventDefault(); return; }
    }
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      box.form.requestSubmit();
    }
  });

  document.addEventListener("input", function (event) {
    var box = event.target;
    if (!box || box.id !== "comment-body") { return; }
    var list = document.getElementById("mention-list");
    var source = document.getElementById("thread-members");
    if (!list || !source) { return; }
    var typed = /(^|\s)@([\w.@+-]*)$/.exec(box.value.slice(0, box.selectionStart));
    var names = typed ? JSON.parse(source.textContent).filter(function (name) {
      return name.toLowerCase().indexOf(typed[2].toLowerCase()) === 0;
    }) : [];
    list.textContent = "";
    names.slice(0, 8).forEach(function (name, i) {
      var li = document.createElement("li");
      li.setAttribute("role", "option");
      li.setAttribute("aria-selected", i === 0 ? "true" : "false");
      li.dataset.username = name;
      li.textContent = "@" + name;
      list.appendChild(li);
    });
    list.hidden = names.length === 0;
  });

  document.addEventListener("mousedown", function (event) {
    var li = event.target.closest && event.target.closest("#mention-list li");
    if (li) { event.preventDefault(); insertMention(document.getElementById("comment-body"), li.dataset.username); }
  });

  function insertMention(box, username) {
    var before = box.value.slice(0, box.selectionStart).replace(/@[\w.@+-]*$/, "@" + username + " ");
    box.value = before + box.value.slice(box.selectionStart);
    box.selectionStart = box.selectionEnd = before.length;
    document.getElementById("mention-list").hidden = true;
    box.focus();
  }
})();
