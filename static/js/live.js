// Live updates: one EventSource per page on the project's stream (projects/views_live.py).
// Events carry only a kind and ids; a part of the page that cares about a kind says so with
// data-live-on="comment decision ..." (optionally data-live-theme / -review / -interview to narrow it)
// and is fetched again through its normal view: an hx-get element gets the "live" trigger, any other
// element is re-read from this page's URL by its id. Other scripts listen to the "rta:live" DOM event.
// While the stream is up, polling of data-live-on elements is skipped; when it fails, polling carries on.
(function () {
  "use strict";

  var root = document.getElementById("live");
  if (!root || !window.EventSource) { return; }
  var state = window.rtaLive = { connected: false, me: root.dataset.me };
  // One id per tab, kept from page to page: the next page's presence replaces this one's at once.
  var client = window.sessionStorage.getItem("rta-live-client");
  if (!client) {
    client = window.crypto && window.crypto.randomUUID ? window.crypto.randomUUID() : String(Math.random()).slice(2);
    window.sessionStorage.setItem("rta-live-client", client);
  }
  state.client = client;
  // This tab's own requests say which tab they come from: the events they cause carry it back (projects/live.py),
  // so a part that already shows its own change from the answer can tell that news from a colleague's.
  document.addEventListener("htmx:configRequest", function (event) { event.detail.headers["X-Live-Tab"] = client; });
  var since = root.dataset.since || "";
  var source = null;

  function connect() {
    var url = root.dataset.stream + "&client=" + encodeURIComponent(client) + "&since=" + encodeURIComponent(since);
    source = new EventSource(url);
    source.addEventListener("open", function () {
      state.connected = true;
      document.documentElement.classList.add("live-on");
    });
    source.addEventListener("message", function (message) {
      if (message.lastEventId) { since = message.lastEventId; }
      var event;
      try { event = JSON.parse(message.data); } catch (e) { return; }
      dispatch(event);
    });
    source.addEventListener("error", function () {
      state.connected = false;
      document.documentElement.classList.remove("live-on");
      // The browser reconnects by itself (with Last-Event-ID) unless the server refused the stream;
      // then polling carries on and a fresh stream is tried later.
      if (source.readyState === EventSource.CLOSED) { setTimeout(connect, 30000); }
    });
  }

  function concerns(el, event) {
    var kinds = (el.getAttribute("data-live-on") || "").split(/\s+/);
    if (event.kind !== "resync" && kinds.indexOf(event.kind) < 0) { return false; }
    return ["theme", "review", "interview"].every(function (key) {
      var want = el.getAttribute("data-live-" + key);
      return !want || !event[key] || want === event[key];
    });
  }

  function dispatch(event) {
    document.dispatchEvent(new CustomEvent("rta:live", { detail: event }));
    document.querySelectorAll("[data-live-on]").forEach(function (el) {
      if (concerns(el, event)) { schedule(el); }
    });
  }

  // A burst of events (a replay after reconnecting, a merge touching many rows) refreshes each part once.
  var pending = {};
  function schedule(el) {
    if (!el.id || pending[el.id]) { return; }
    pending[el.id] = setTimeout(function () {
      delete pending[el.id];
      var now = document.getElementById(el.id);
      if (!now) { return; }
      // One request at a time per part: the answer in flight brings the token the next request sends,
      // so a second render of the same news (which would, e.g., already count a comment as read) never races it.
      if (now.classList.contains("htmx-request")) { schedule(now); return; }
      if (now.hasAttribute("hx-get")) { window.htmx.trigger(now, "live"); return; }
      // The part itself is the request's source: htmx queues requests per source element and keeps only the
      // last one waiting, so with the page's body as every part's source a part's refresh could be dropped.
      // The event marks the request as live news, not polling: without it the check below cancels it while the
      // stream is up, and such a part never changed.
      window.htmx.ajax("GET", window.location.pathname + window.location.search,
                       { source: now, event: new CustomEvent("live"), target: now, select: "#" + el.id, swap: "outerHTML" });
    }, 25);
  }

  // Polling (hx-trigger "every Ns") of parts the stream keeps fresh is skipped while the stream is up.
  document.addEventListener("htmx:beforeRequest", function (event) {
    var elt = event.detail.elt;
    var polled = !(event.detail.requestConfig && event.detail.requestConfig.triggeringEvent);
    if (state.connected && polled && elt && elt.hasAttribute && elt.hasAttribute("data-live-on")) { event.preventDefault(); }
  });

  window.addEventListener("pagehide", function () { if (source) { source.close(); } });
  connect();
})();
