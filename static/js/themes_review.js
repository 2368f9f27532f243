// Review meetings: decision forms show only the fields of the chosen kind;
// presenter mode walks the agenda with ←/→ (or j/k) unless you are typing, and can drive the room's screens.
(function () {
  "use strict";

  // Without this script every field shows, labelled with the kinds it serves; with it, a field shared by two
  // kinds (the name of a rename or of a split) takes the wording of the chosen one.
  function sync(form) {
    var kind = form.querySelector(".decision-kind").value;
    form.querySelectorAll("[data-kinds]").forEach(function (field) {
      field.hidden = field.getAttribute("data-kinds").split(" ").indexOf(kind) < 0;
    });
    form.querySelectorAll("[data-label-" + kind + "]").forEach(function (label) {
      label.textContent = label.getAttribute("data-label-" + kind);
    });
  }

  document.querySelectorAll(".decision-form").forEach(sync);
  document.addEventListener("change", function (event) {
    if (event.target.classList && event.target.classList.contains("decision-kind")) { sync(event.target.closest("form")); }
  });

  // The meeting page's agenda is fetched again when a decision is applied or the board changes (live.js). A
  // "Record a decision…" form someone has open is carried over as it is (what they typed, the theme version they
  // decided on, the focus); everything else comes fresh.
  var carried = null;
  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail && event.detail.target;
    if (!target || target.id !== "live-agenda") { return; }
    carried = { root: target, open: {}, focus: document.activeElement };
    target.querySelectorAll("details.record-decision[open]").forEach(function (d) { carried.open[d.getAttribute("data-theme")] = d; });
  });
  function agendaSwapped() {
    var root = document.getElementById("live-agenda");
    if (!carried || !root || root === carried.root) { return; }
    var was = carried;
    carried = null;
    root.querySelectorAll(".decision-form").forEach(sync);
    root.querySelectorAll("details.record-decision").forEach(function (d) {
      var open = was.open[d.getAttribute("data-theme")];
      if (open) { d.replaceWith(open); }
    });
    if (was.focus && root.contains(was.focus)) { was.focus.focus({ preventScroll: true }); }
  }
  document.addEventListener("htmx:afterSettle", agendaSwapped);
  document.addEventListener("htmx:load", agendaSwapped);

  // The notes, saved by a colleague: shown at once, unless this person has unsaved text in the box. That text stays;
  // a note says whose notes changed, and saving shows both versions (the conflict page).
  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail && event.detail.target;
    var box = document.getElementById("notes");
    if (!target || target.id !== "live-notes" || !box || !target.contains(box)) { return; }
    if (box.value === box.defaultValue && !box.hasAttribute("data-unsaved")) { return; }
    event.detail.shouldSwap = false;
    var holder = document.createElement("div");
    holder.innerHTML = event.detail.serverResponse;
    var saved = holder.querySelector("#notes-saved");
    var note = document.getElementById("notes-changed");
    note.textContent = "Notes changed by " + (saved ? saved.getAttribute("data-by") : "a colleague") +
      " while you were writing: yours are kept here; saving shows both versions to combine.";
    note.hidden = false;
  });

  // Presenter mode only (the page with the keyboard list, themes/shortcuts.py PRESENTER).
  function follow(id) {
    var link = document.getElementById(id);
    if (!link) return false;  // the first or last theme: the key does its usual thing
    window.location.assign(link.href);
  }
  if (document.getElementById("keyboard-shortcuts")) {
    window.RTA.shortcuts({
      next: function () { follow("present-next"); },
      previous: function () { follow("present-prev"); },
    });
    document.getElementById("show-help").addEventListener("click", function () {
      document.getElementById("help-dialog").showModal();
    });
  }

  // The whole room in presenter mode: whoever presents moves every follower's screen (live.js events);
  // each participant can stop following (remembered per meeting in this browser).
  var presenter = document.getElementById("presenter");
  if (!presenter) { return; }
  var review = presenter.dataset.review, index = Number(presenter.dataset.index), me = presenter.dataset.me;
  var followBox = document.getElementById("follow-presenter"), leadButton = document.getElementById("lead-meeting");
  var status = document.getElementById("presenter-status");
  var followKey = "rta-follow:" + review, leadKey = "rta-lead:" + review;
  var leadIndex = presenter.dataset.leadIndex === "" ? null : Number(presenter.dataset.leadIndex);
  var leadBy = presenter.dataset.leadBy;
  var leading = !!leadButton && window.localStorage.getItem(leadKey) === "on";
  var following = window.localStorage.getItem(followKey) !== "off";

  function urlFor(i) { return presenter.dataset.presentUrl.replace(/\/0\/$/, "/" + i + "/"); }
  function csrf() {
    try { return JSON.parse(document.body.getAttribute("hx-headers"))["X-CSRFToken"]; } catch (e) { return ""; }
  }
  function tell(stop) {
    var body = new URLSearchParams(stop ? { stop: "1" } : {});
    return fetch(presenter.dataset.leadUrl, { method: "POST", body: body, credentials: "same-origin",
                                               headers: { "X-CSRFToken": csrf() } });
  }
  function paint() {
    followBox.checked = following && !leading;
    followBox.disabled = leading;
    if (leadButton) {
      leadButton.setAttribute("aria-pressed", leading ? "true" : "false");
      leadButton.textContent = leading ? "Stop presenting" : "Present to everyone";
    }
    status.textContent = leading ? "You are presenting: followers see this theme." :
      following ? (leadIndex === null ? "Following the presenter (nobody is presenting yet)." : "Following the presenter.") :
      "Not following: you browse on your own" + (leadIndex === null ? "." : " (the presenter is on theme " + (leadIndex + 1) + ").");
  }
  function goToPresenter() {
    if (!leading && following && leadIndex !== null && leadIndex !== index && leadBy !== me) {
      window.location.assign(urlFor(leadIndex));
    }
  }

  followBox.addEventListener("change", function () {
    following = followBox.checked;
    window.localStorage.setItem(followKey, following ? "on" : "off");
    paint();
    goToPresenter();
  });
  if (leadButton) {
    leadButton.addEventListener("click", function () {
      leading = !leading;
      window.localStorage.setItem(leadKey, leading ? "on" : "off");
      tell(!leading);
      paint();
    });
  }
  document.addEventListener("rta:live", function (event) {
    var e = event.detail;
    if (e.kind !== "present" || e.review !== review) { return; }
    leadIndex = e.index;
    leadBy = String(e.by);
    if (leadBy === me && !leading) { return; }  // my own presenting, from another tab
    paint();
    goToPresenter();
  });

  if (leading) { tell(false); }
  paint();
  goToPresenter();
})();
