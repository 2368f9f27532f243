// Theme discussion: reply targeting, clearing the composer after posting.
// New comments arrive by htmx polling (hx-trigger="every 4s" on #thread).
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

  document.addEventListener("htmx:afterRequest", function (event) {
    var composer = document.getElementById("composer");
    if (composer && event.detail.elt === composer && event.detail.successful) {
      composer.reset();
      composer.querySelector("[name=parent]").value = "";
      composer.querySelector(".replying").hidden = true;
    }
  });
})();
