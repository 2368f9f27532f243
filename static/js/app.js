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
  document.addEventListener("htmx:sendError", function () {
    window.RTA.flash("The server could not be reached; your last change was not saved.", "error");
  });

  window.RTA = {
    flash: function (text, level) {
      var list = document.querySelector("ul.messages");
      if (!list) {
        list = document.createElement("ul");
        list.className = "messages";
        list.setAttribute("role", "status");
        var main = document.getElementById("main");
        main.parentNode.insertBefore(list, main);
      }
      var item = document.createElement("li");
      item.className = "message " + (level || "info");
      item.textContent = text;
      list.appendChild(item);
      setTimeout(function () { item.remove(); }, 8000);
    }
  };
})();
