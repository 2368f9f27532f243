// Themes board: drag codes into/between themes, with a keyboard "Move…" menu doing the same.
// Each move is one small POST; the server answers with the parts of the board it changed.
// A colleague's change (a live event, live.js) fetches the board again once nothing of one's own is under way.
(function () {
  "use strict";

  function csrfToken() {
    try { return JSON.parse(document.body.getAttribute("hx-headers"))["X-CSRFToken"]; } catch (e) { return ""; }
  }

  function board() { return document.getElementById("board"); }

  function announce(text) {
    var status = document.getElementById("board-status");
    if (status) { status.textContent = text; }
  }

  // One move = one request. The answer holds only what the move changed (the columns around the themes it
  // touched, the code's chip in the list, the count of codes in no theme), each with the id of the element
  // it replaces; an error answer is the whole board, with the message inside.
  function send(fields, message) {
    var form = new FormData();
    Object.keys(fields).forEach(function (key) { if (fields[key]) { form.append(key, fields[key]); } });
    ownStarted();
    return fetch(board().getAttribute("data-place-url"), {
      method: "POST", body: form, credentials: "same-origin",
      headers: { "X-CSRFToken": csrfToken(), "X-Fragment": "changes", "X-Live-Tab": (window.rtaLive && window.rtaLive.client) || "" }
    }).then(function (response) {
      return response.text().then(function (html) {
        var holder = document.createElement("div");
        holder.innerHTML = html;
        var fresh = holder.querySelector("#board");
        if (fresh) {
          replace(board(), fresh);
        } else if (response.ok && !replacePieces(holder)) {
          return refresh().then(function () { announce(message); return true; });
        }
        if (!response.ok) { refused(fresh, response.status); }
        else { announce(message); }
        return response.ok;
      });
    }).catch(function () {
      window.RTA.flash("The server could not be reached; the change was not saved.", "error");
    }).finally(ownDone);
  }

  // A refused change (a colleague moved the code first) comes back as the whole board with the reason inside; the
  // reason is also said where a colleague's change, refreshing the board a moment later, does not wipe it.
  function refused(fresh, status) {
    var reason = fresh && fresh.querySelector(".form-errors");
    var text = reason ? reason.textContent.trim() : "The change was not saved (" + status + ").";
    window.RTA.flash(text, "error");
    announce(text);
  }

  function replace(old, fresh) {
    old.replaceWith(fresh);
    if (window.htmx) { window.htmx.process(fresh); }
    applyFilter();
  }

  // False when a piece has no place on this page (a colleague added a theme since it loaded): the caller
  // then fetches the whole board.
  function replacePieces(holder) {
    var pieces = Array.prototype.slice.call(holder.children);
    var olds = pieces.map(function (piece) { return piece.id ? document.getElementById(piece.id) : null; });
    if (!pieces.length || olds.indexOf(null) >= 0) { return false; }
    pieces.forEach(function (piece, i) { replace(olds[i], piece); });
    return true;
  }

  // The board again from the server, keeping what the person has under way in it: text typed and not yet sent,
  // an open "Add sub-theme", where each list is scrolled to, and the focus. `onlyIfQuiet`: a colleague's change,
  // whose answer is dropped (and fetched again later) if a drag or a move of one's own started meanwhile, even one
  // already answered: the board it read is from before that move, whose own news this tab skips.
  // A refresh that fails (a proxy's 502, a moment offline) leaves the board marked out of date and is tried again,
  // later each time, until one succeeds: the news that asked for it is not sent twice.
  function refresh(onlyIfQuiet) {
    var movesBefore = ownMoves;
    return fetch(window.location.pathname, { credentials: "same-origin", headers: { "X-Fragment": "1" } })
      .then(function (response) { return response.ok ? response.text() : ""; })
      .then(function (html) {
        var holder = document.createElement("div");
        holder.innerHTML = html;
        var fresh = holder.querySelector("#board");
        if (!board()) { return; }
        if (!fresh) { refreshFailed(); return; }
        if (onlyIfQuiet && (!quiet() || ownMoves !== movesBefore)) { markStale(); settle(); return; }
        var kept = keep(board());
        replace(board(), fresh);
        restore(board(), kept);
        upToDate();
      }, refreshFailed);
  }

  var retryDelay = 0;
  var retryTimer = null;

  function refreshFailed() {
    markStale();
    var note = document.getElementById("board-out-of-date");
    if (note) { note.hidden = false; }
    if (retryTimer) { return; }
    retryDelay = Math.min(retryDelay ? retryDelay * 2 : 1000, 30000);
    retryTimer = setTimeout(retryNow, retryDelay);
  }

  function retryNow() {
    clearTimeout(retryTimer);
    retryTimer = null;
    if (stale) { colleagueChanged(); }
  }

  function upToDate() {
    retryDelay = 0;
    var note = document.getElementById("board-out-of-date");
    if (note) { note.hidden = true; }
  }

  function keep(root) {
    var active = document.activeElement && root.contains(document.activeElement) ? document.activeElement : null;
    return {
      typed: Array.prototype.slice.call(root.querySelectorAll("input[id]:not([type=hidden]), textarea[id]"))
        .filter(function (field) { return field.value !== field.defaultValue; })
        .map(function (field) { return { id: field.id, value: field.value }; }),
      open: Array.prototype.slice.call(root.querySelectorAll("details[open]")).map(detailsKey),
      scroll: Array.prototype.slice.call(root.querySelectorAll(".columns, .codebook-panel, .code-tree"))
        .map(function (el) { return { key: scrollKey(el), left: el.scrollLeft, top: el.scrollTop }; }),
      focus: active && focusKey(active),
      selection: active && typeof active.selectionStart === "number" ? [active.selectionStart, active.selectionEnd] : null
    };
  }

  function restore(root, kept) {
    kept.typed.forEach(function (t) { var field = document.getElementById(t.id); if (field && root.contains(field)) { field.value = t.value; } });
    root.querySelectorAll("details").forEach(function (d) { if (kept.open.indexOf(detailsKey(d)) >= 0) { d.open = true; } });
    kept.scroll.forEach(function (s) {
      var el = root.querySelector(s.key);
      if (el) { el.scrollLeft = s.left; el.scrollTop = s.top; }
    });
    var again = kept.focus && root.querySelector(kept.focus);
    if (again) {
      again.focus({ preventScroll: true });
      if (kept.selection && again.setSelectionRange) { try { again.setSelectionRange(kept.selection[0], kept.selection[1]); } catch (e) { /* not a text field */ } }
    }
  }

  function detailsKey(details) {
    var card = details.closest("[data-theme-card]");
    return (card ? card.getAttribute("data-theme-card") : "") + " " + details.className;
  }

  function scrollKey(el) { return "." + el.className.split(/\s+/)[0]; }

  // A selector finding "the same" control in the fresh board: by id, else a code's Move… button, else a theme's arrows.
  function focusKey(el) {
    if (el.id) { return "#" + window.CSS.escape(el.id); }
    if (el.classList.contains("move-btn")) {
      return '.move-btn[data-code="' + el.getAttribute("data-code") + '"]' +
        (el.getAttribute("data-source") ? '[data-source="' + el.getAttribute("data-source") + '"]' : ":not([data-source])");
    }
    var card = el.closest("[data-theme-card]");
    if (card && el.name && el.value) {
      return '[data-theme-card="' + card.getAttribute("data-theme-card") + '"] [name="' + el.name + '"][value="' + el.value + '"]';
    }
    return null;
  }

  // ---- live: what colleagues change appears here without clobbering what this person is doing. While a code or
  // theme is being dragged, the Move… dialog is open or a move of one's own is on its way, the news waits
  // (data-waiting on the board) and the board is fetched once that ends.
  var busy = 0;  // own requests changing the board, not yet answered
  var ownMoves = 0;  // own requests changing the board, ever sent
  var pressed = false;  // a button is down on the board: a drag may be about to start, or a click to land
  var stale = false;
  var pendingLive = null;

  function moveDialogOpen() { var dialog = document.getElementById("move-dialog"); return !!dialog && dialog.open; }
  function quiet() { return !dragged && !draggedTheme && !pressed && busy === 0 && !moveDialogOpen(); }

  function markStale() {
    stale = true;
    if (board()) { board().setAttribute("data-waiting", "1"); }
  }

  function colleagueChanged() {
    if (pendingLive) { return; }
    // A burst (a move is two events, a merge many) fetches once.
    pendingLive = setTimeout(function () {
      pendingLive = null;
      if (!board()) { return; }
      if (!quiet()) { markStale(); return; }
      stale = false;
      refresh(true);
    }, 60);
  }

  function settle() { if (stale && quiet()) { colleagueChanged(); } }

  function ownStarted() { busy += 1; ownMoves += 1; }

  function ownDone() { busy = Math.max(0, busy - 1); settle(); }

  // The news of a change this board made itself is already on screen from its request's answer; fetching it again
  // would only race the next drag. Its event names this tab and this person (a colleague cannot pass for them).
  function ownNews(event) {
    var live = window.rtaLive;
    return !!live && !!event.tab && event.tab === live.client && String(event.by) === String(live.me);
  }

  var LIVE_KINDS = ["board", "codebook", "comment", "resync"];
  document.addEventListener("rta:live", function (event) {
    var news = event.detail || {};
    if (LIVE_KINDS.indexOf(news.kind) >= 0 && !ownNews(news)) { colleagueChanged(); }
  });
  document.addEventListener("pointerdown", function (event) {
    if (event.target.closest && event.target.closest("#board")) { pressed = true; }
  });
  ["pointerup", "pointercancel"].forEach(function (type) {
    document.addEventListener(type, function () { if (pressed) { pressed = false; settle(); } });
  });
  // Without the stream (a proxy refusing it, too many open pages) the board still catches up now and then; with it,
  // at a quarter of the rate, for changes that announce nothing (an import, a restore) or news lost on the way.
  var quietPolls = 0;
  setInterval(function () {
    if (!(window.rtaLive && window.rtaLive.connected) || ++quietPolls % 4 === 0) { colleagueChanged(); }
  }, 20000);
  window.addEventListener("online", retryNow);

  // The board's own htmx forms (new theme, status, ← →) count as moves of one's own while they are on their way.
  // Told apart by their request: the answer replaces the form, so htmx announces the end from an element outside it.
  var ownRequests = [];
  document.addEventListener("htmx:beforeRequest", function (event) {
    var elt = event.detail.elt;
    if (elt && elt.closest && elt.closest("#board")) { ownRequests.push(event.detail.xhr); ownStarted(); }
  });
  document.addEventListener("htmx:afterRequest", function (event) {
    var i = ownRequests.indexOf(event.detail.xhr);
    if (i >= 0) { ownRequests.splice(i, 1); ownDone(); }
  });
  var moveDialog = document.getElementById("move-dialog");
  if (moveDialog) { moveDialog.addEventListener("close", settle); }

  // A refused name (the new theme's or a sub-theme's) comes back with the whole board: the focus goes back to the
  // field, whose message (aria-describedby, role=alert) says what is wrong, rather than to the page.
  document.addEventListener("htmx:afterSettle", function (event) {
    var target = event.detail && event.detail.target;
    if (!target || target.id !== "board") { return; }  // the presence line and others settle too
    var refused = board() && board().querySelector('[aria-invalid="true"]');
    if (refused && document.activeElement !== refused) {
      refused.focus();
      if (refused.setSelectionRange) { refused.setSelectionRange(refused.value.length, refused.value.length); }
    }
  });

  // Filtering the code list: by name and, optionally, to the codes in no theme yet. The parents of a
  // code shown stay shown (dimmed), so the tree still reads. The same rule as themes/queries.py code_tree,
  // which renders the first page; the fields sit outside #board, so the filter survives board refreshes.
  function filterState() {
    var field = document.getElementById("code-filter");
    var show = document.querySelector('#code-filter-form input[name="show"]:checked');
    return { query: field ? field.value.trim().toLowerCase() : "", unassignedOnly: !!show && show.value === "unassigned" };
  }

  function applyFilter() {
    var state = filterState();
    var chips = Array.prototype.slice.call(document.querySelectorAll(".code-tree .code-chip"));
    var revealed = {};
    var shown = 0;
    chips.reverse().forEach(function (chip) {  // children come after their parent: reveal ancestors on the way up
      var matches = (!state.unassignedOnly || chip.getAttribute("data-themes") === "0") &&
        chip.getAttribute("data-code-name").toLowerCase().indexOf(state.query) >= 0;
      var context = !matches && revealed[chip.getAttribute("data-code")] === true;
      chip.hidden = !matches && !context;
      chip.classList.toggle("context", context);
      if (!chip.hidden) {
        shown += 1;
        if (chip.getAttribute("data-parent")) { revealed[chip.getAttribute("data-parent")] = true; }
      }
    });
    var none = document.getElementById("no-code-matches");
    if (none) { none.hidden = shown > 0; }
  }
  document.addEventListener("input", function (event) { if (event.target.closest && event.target.closest("#code-filter-form")) { applyFilter(); } });
  document.addEventListener("change", function (event) { if (event.target.closest && event.target.closest("#code-filter-form")) { applyFilter(); } });
  document.addEventListener("submit", function (event) {
    // With scripts the list filters as one types; the button is for pages without them.
    if (event.target.id === "code-filter-form") { event.preventDefault(); applyFilter(); }
  });
  document.addEventListener("htmx:afterSwap", applyFilter);

  function themeName(uuid) {
    var card = document.querySelector('[data-theme-card="' + uuid + '"]');
    return card ? card.getAttribute("data-theme-name") : "";
  }

  // ---- drag and drop
  var dragged = null;
  var over = null;  // the drop zone shown as the target

  // Where a dragged code lands: a list of codes, or anywhere on a theme's card (its title, its header) for that
  // theme's own list, which is what a researcher aims at.
  function dropZone(target) {
    if (!target.closest) { return null; }
    var zone = target.closest(".drop-zone");
    var card = zone ? null : target.closest("[data-theme-card]");
    return zone || (card && card.querySelector('.drop-zone[data-theme="' + card.getAttribute("data-theme-card") + '"]'));
  }

  document.addEventListener("dragstart", function (event) {
    var chip = event.target.closest && event.target.closest(".code-chip[draggable=true]");
    if (!chip) { return; }
    dragged = { code: chip.getAttribute("data-code"), source: chip.getAttribute("data-source") || "", name: chip.getAttribute("data-code-name") };
    event.dataTransfer.effectAllowed = "copyMove";
    event.dataTransfer.setData("text/plain", dragged.name);
    chip.classList.add("dragging");
  });

  document.addEventListener("dragend", function (event) {
    var chip = event.target.closest && event.target.closest(".code-chip");
    if (chip) { chip.classList.remove("dragging"); }
    if (over) { over.classList.remove("over"); }
    dragged = over = null;  // dropped outside any theme, or cancelled with Escape
    pressed = false;  // a drag ends without a pointerup
    settle();
  });

  document.addEventListener("dragover", function (event) {
    var zone = dropZone(event.target);
    if (!zone || !dragged) { return; }
    event.preventDefault();
    if (over && over !== zone) { over.classList.remove("over"); }
    over = zone;
    zone.classList.add("over");
  });

  document.addEventListener("dragleave", function (event) {
    var zone = dropZone(event.target);
    if (zone && zone === over && !(event.relatedTarget && dropZone(event.relatedTarget) === zone)) {
      zone.classList.remove("over");
      over = null;
    }
  });

  document.addEventListener("drop", function (event) {
    var zone = dropZone(event.target);
    if (!zone || !dragged) { return; }
    event.preventDefault();
    zone.classList.remove("over");
    over = null;
    var target = zone.getAttribute("data-theme");
    var beforeChip = event.target.closest(".code-chip");
    var before = beforeChip && beforeChip.getAttribute("data-code") !== dragged.code ? beforeChip.getAttribute("data-code") : "";
    var d = dragged;
    dragged = null;
    if (!target) {
      // Dropped back on the codebook: take it out of the theme it came from.
      if (d.source) { send({ action: "remove", code: d.code, source: d.source }, "“" + d.name + "” taken out of " + themeName(d.source)); }
      return;
    }
    // From the codebook, or with Ctrl/Alt held: add (a code may sit in several themes). Otherwise move.
    var copy = !d.source || d.source === target || event.ctrlKey || event.altKey;
    send({ action: copy ? "add" : "move", code: d.code, source: d.source, theme: target, before: before },
      "“" + d.name + "” " + (copy ? "placed in " : "moved to ") + themeName(target));
  });

  // ---- dragging a theme by its handle: drop on another theme to place it just before that one
  var draggedTheme = null;

  document.addEventListener("dragstart", function (event) {
    var handle = event.target.closest && event.target.closest("[data-theme-drag]");
    if (!handle) { return; }
    draggedTheme = handle.getAttribute("data-theme-drag");
    event.dataTransfer.effectAllowed = "move";
    event.dataTransfer.setData("text/plain", themeName(draggedTheme));
  });

  document.addEventListener("dragover", function (event) {
    if (!draggedTheme) { return; }
    var card = event.target.closest && event.target.closest("[data-theme-card]");
    if (card && card.getAttribute("data-theme-card") !== draggedTheme && !card.closest('[data-theme-card="' + draggedTheme + '"]')) {
      event.preventDefault();
    }
  });

  document.addEventListener("drop", function (event) {
    if (!draggedTheme) { return; }
    var card = event.target.closest && event.target.closest("[data-theme-card]");
    var moving = draggedTheme;
    draggedTheme = null;
    if (!card) { return; }
    event.preventDefault();
    var before = card.getAttribute("data-theme-card");
    if (before === moving) { return; }
    var form = new FormData();
    form.append("before", before);
    ownStarted();
    fetch(board().getAttribute("data-reorder-url") + moving + "/reorder/", {
      method: "POST", body: form, credentials: "same-origin", headers: { "X-CSRFToken": csrfToken(), "X-Fragment": "1" }
    }).then(function (response) { return response.text(); }).then(function (html) {
      var holder = document.createElement("div");
      holder.innerHTML = html;
      var fresh = holder.querySelector("#board");
      if (fresh) { replace(board(), fresh); }
      announce(themeName(moving) + " placed before " + themeName(before));
    }).finally(ownDone);
  });

  document.addEventListener("dragend", function () { draggedTheme = null; pressed = false; settle(); });

  // ---- keyboard alternative: the Move… menu
  function menuButton(label, fields, message) {
    var button = document.createElement("button");
    button.type = "button";
    button.textContent = label;
    button.addEventListener("click", function () {
      document.getElementById("move-dialog").close();
      send(fields, message).then(function () {
        var again = document.querySelector('.move-btn[data-code="' + fields.code + '"]' + (fields.theme ? '[data-source="' + fields.theme + '"]' : ""));
        if (again) { again.focus(); }
      });
    });
    return button;
  }

  document.addEventListener("click", function (event) {
    var trigger = event.target.closest && event.target.closest(".move-btn");
    if (!trigger) { return; }
    var code = trigger.getAttribute("data-code");
    var source = trigger.getAttribute("data-source") || "";
    var name = trigger.closest(".code-chip").getAttribute("data-code-name");
    var dialog = document.getElementById("move-dialog");
    var actions = dialog.querySelector(".move-actions");
    actions.innerHTML = "";
    dialog.querySelector("h2").textContent = "Move “" + name + "”" + (source ? " (now in " + themeName(source) + ")" : "");
    var list = document.createElement("ul");
    function add(button) { var li = document.createElement("li"); li.appendChild(button); list.appendChild(li); }
    if (source) {
      add(menuButton("Move up", { action: "up", code: code, source: source }, "“" + name + "” moved up"));
      add(menuButton("Move down", { action: "down", code: code, source: source }, "“" + name + "” moved down"));
      add(menuButton("Take out of " + themeName(source), { action: "remove", code: code, source: source }, "“" + name + "” taken out"));
    }
    document.querySelectorAll("[data-theme-card]").forEach(function (card) {
      var uuid = card.getAttribute("data-theme-card");
      if (uuid === source) { return; }
      var theme = card.getAttribute("data-theme-name");
      if (source) { add(menuButton("Move to " + theme, { action: "move", code: code, source: source, theme: uuid }, "“" + name + "” moved to " + theme)); }
      add(menuButton((source ? "Also add to " : "Add to ") + theme, { action: "add", code: code, theme: uuid }, "“" + name + "” placed in " + theme));
    });
    actions.appendChild(list);
    dialog.showModal();
    var first = actions.querySelector("button");
    if (first) { first.focus(); }
  });
})();
