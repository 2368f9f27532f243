/* Coding workspace: selection, keyboard, code picker, apply/remove/undo, filters, notes.
   Each apply/remove is one htmx request; the server answers with out-of-band chips and counts. */
(function () {
  "use strict";

  function ready(fn) {
    if (document.readyState !== "loading") fn();
    else document.addEventListener("DOMContentLoaded", fn);
  }

  ready(function () {
    var cfgEl = document.getElementById("coding-config");
    if (!cfgEl) return;
    var cfg = JSON.parse(cfgEl.textContent);
    // Every code (archived ones too, for chips); the picker offers only the live ones.
    var allCodes = JSON.parse(document.getElementById("coding-codes").textContent);
    var codes = allCodes.filter(function (c) { return !c.archived; });
    var kindOf = {};
    allCodes.forEach(function (c) { kindOf[c.id] = c.kind; });
    var transcript = document.getElementById("transcript");
    var statusEl = document.getElementById("ws-status");
    var picker = document.getElementById("picker");
    var pickerInput = document.getElementById("picker-input");
    var pickerList = document.getElementById("picker-list");
    var pickerLabel = document.getElementById("picker-label");
    var pickerKindEl = document.getElementById("picker-kind");
    var pickerError = document.getElementById("picker-error");
    var newCodeButton = document.getElementById("new-code");
    var noteDialog = document.getElementById("note-dialog");
    var helpDialog = document.getElementById("help-dialog");
    var me = String(cfg.me);
    var recentKey = "rta:recent:" + cfg.project;
    var segs = Array.prototype.slice.call(transcript.querySelectorAll(".seg.codable"));
    var indexOf = new Map();
    segs.forEach(function (el, i) { indexOf.set(el, i); });
    var cursor = -1, anchor = -1;
    // The undo stack lives on the server (the user's latest codings here), so it survives a reload.
    var undoPending = false;
    var pickerMode = "apply", pickerItems = [], pickerActive = 0, newKind = "semantic";
    var filters = { code: "", kind: "", coder: "" };

    function codeById(id) {
      id = Number(id);
      for (var i = 0; i < codes.length; i++) if (codes[i].id === id) return codes[i];
      return null;
    }
    function say(msg) { statusEl.textContent = msg; }

    /* ---- selection ---- */
    function selection() {
      if (cursor < 0) return [];
      var lo = Math.min(anchor, cursor), hi = Math.max(anchor, cursor);
      return segs.slice(lo, hi + 1);
    }
    function paintSelection() {
      transcript.querySelectorAll(".seg.sel").forEach(function (el) { el.classList.remove("sel", "cur"); });
      selection().forEach(function (el) { el.classList.add("sel"); });
      if (cursor >= 0) {
        segs[cursor].classList.add("cur");
        segs[cursor].scrollIntoView({ block: "nearest" });
      }
    }
    function moveTo(i, extend) {
      if (!segs.length) return;
      i = Math.max(0, Math.min(segs.length - 1, i));
      cursor = i;
      if (!extend || anchor < 0) anchor = i;
      paintSelection();
    }
    function selectedIds() { return selection().map(function (el) { return el.id.slice(2); }); }

    transcript.addEventListener("click", function (e) {
      if (e.target.closest("button, a")) return;
      var seg = e.target.closest(".seg.codable");
      if (!seg) return;
      var i = indexOf.get(seg);
      if (e.shiftKey && cursor >= 0) { cursor = i; } else { cursor = anchor = i; }
      paintSelection();
      transcript.focus({ preventScroll: true });
    });

    /* ---- recent codes ---- */
    function recent() {
      try { return (JSON.parse(localStorage.getItem(recentKey)) || []).filter(function (id) { return codeById(id); }); }
      catch (err) { return []; }
    }
    function pushRecent(id) {
      var r = recent().filter(function (x) { return x !== Number(id); });
      r.unshift(Number(id));
      localStorage.setItem(recentKey, JSON.stringify(r.slice(0, 9)));
      paintRecent();
    }
    function paintRecent() {
      var ol = document.getElementById("recent-codes");
      ol.textContent = "";
      recent().forEach(function (id, i) {
        var c = codeById(id), li = document.createElement("li"), b = document.createElement("button");
        b.type = "button"; b.className = "code-row"; b.dataset.code = id;
        var k = document.createElement("kbd"); k.textContent = String(i + 1);
        var sw = document.createElement("span"); sw.className = "sw"; sw.style.setProperty("--c", c.colour);
        b.append(k, " ", sw, c.name);
        li.appendChild(b); ol.appendChild(li);
      });
      if (!ol.children.length) {
        var li = document.createElement("li"); li.className = "empty"; li.textContent = "Codes you apply appear here.";
        ol.appendChild(li);
      }
    }

    /* ---- requests ---- */
    function send(url, values) {
      if (!cfg.canWrite) { say("Your role in this project is read-only."); return; }
      htmx.ajax("POST", url, { source: transcript, swap: "none", values: values });
    }
    function apply(codeId, ids) {
      ids = ids || selectedIds();
      if (!ids.length) { say("Select a segment first (click it, or press j)."); return; }
      send(cfg.apply, { code: codeId, segments: ids.join(",") });
    }
    function removeCode(codeId, ids) {
      ids = ids || selectedIds();
      if (!ids.length) return;
      send(cfg.remove, { code: codeId, segments: ids.join(",") });
    }
    // What the picker sent to create (or bring back) a code: a refusal reopens the picker with it, nothing lost.
    var pendingPick = null;
    function createAndApply(values) {
      pendingPick = { text: pickerInput.value, opener: pickerOpener };
      values.segments = selectedIds().join(",");
      send(cfg.create, values);
    }
    // A code archived here: it leaves the picker, the panel, the filter and the recent list; its chips keep their look.
    function retireCode(id) {
      id = Number(id);
      codes = codes.filter(function (c) { return c.id !== id; });
      allCodes.forEach(function (c) { if (c.id === id) c.archived = true; });
      var opt = document.querySelector("#filter-code option[value='" + id + "']");
      if (opt) opt.remove();
      var row = document.querySelector("#code-list-panel .code-row[data-code='" + id + "']");
      if (row) row.parentElement.hidden = true;
      paintRecent();
      paintPanelEmpty();
    }
    // "No codes yet" while no code is in use; the panel's filter hiding every row is not that.
    function paintPanelEmpty() {
      var empty = document.getElementById("code-list-empty");
      if (empty) empty.hidden = codes.length > 0;
    }

    // A code created or brought back from the archive, here or by a colleague (seen by polling): usable at once
    // unless archived. `uses`: its codings here, for a panel row the page does not have yet.
    function addCode(code, uses) {
      kindOf[code.id] = code.kind;
      var known = allCodes.filter(function (c) { return c.id === code.id; })[0];
      if (known) known.archived = !!code.archived;
      else allCodes.push(code);
      if (code.archived || codeById(code.id)) return;
      codes.push(known || code);
      if (!document.querySelector("#filter-code option[value='" + code.id + "']")) {
        var opt = document.createElement("option");
        opt.value = code.id; opt.textContent = code.name;
        document.getElementById("filter-code").appendChild(opt);
      }
      var row = document.querySelector("#code-list-panel .code-row[data-code='" + code.id + "']");
      if (row) row.parentElement.hidden = false;
      else addPanelRow(code, uses || 0);
      paintPanelEmpty();
    }

    // What the server says a code is now (polled, or named by a refused create): a code new to the page is added,
    // a known one follows its colleague's rename, recolouring, archiving or bringing back. `uses`: as for addCode.
    function learnCode(code, uses) {
      var known = allCodes.filter(function (c) { return c.id === code.id; })[0];
      if (!known) { addCode(code, uses); return; }
      renameCode(known, code);
      // A merged code's name leads to the code it went into.
      known.mergedInto = code.mergedInto;
      if (known.archived !== !!code.archived) {
        if (code.archived) retireCode(code.id); else addCode({ id: known.id, kind: known.kind, archived: false });
      }
    }
    // A known code's name, colour or kind changed: its chips, panel row, recent entry, filter option and the
    // picker show it as it is now (the picker reads the same objects).
    function renameCode(known, now) {
      if (known.name === now.name && known.colour === now.colour && known.kind === now.kind) return;
      known.name = now.name; known.colour = now.colour; known.kind = kindOf[known.id] = now.kind;
      var selector = "[data-c='" + known.id + "']";
      transcript.querySelectorAll(".chip" + selector).forEach(function (ch) {
        ch.firstChild.textContent = now.name;  // a chip's text is the name, then the coder's initials (or AI)
        ch.style.setProperty("--c", now.colour);
        var x = ch.querySelector(".chip-x");
        if (x) x.setAttribute("aria-label", "Remove " + now.name + " from this sentence");
        if (ch.dataset.sugg) ch.setAttribute("aria-label", "AI suggests " + now.name + ". " + ch.title);
        else ch.title = "";  // the hover writes it again
      });
      var row = document.querySelector("#code-list-panel .code-row[data-code='" + known.id + "']");
      if (row) {
        var swatch = row.querySelector(".sw");
        swatch.style.setProperty("--c", now.colour);
        swatch.nextSibling.textContent = now.name;
        row.querySelector("small").textContent = now.kind;
      }
      var opt = document.querySelector("#filter-code option[value='" + known.id + "']");
      if (opt) opt.textContent = now.name;
      paintRecent();
      if (picker.open) renderPicker();
      if (filters.kind) applyFilters();
    }

    // The codebook panel's row for a code created here or seen by polling.
    function addPanelRow(code, uses) {
      var li = document.createElement("li"), button = document.createElement("button");
      var swatch = document.createElement("span"), kind = document.createElement("small"), count = document.createElement("span");
      button.type = "button"; button.className = "code-row"; button.dataset.code = code.id;
      swatch.className = "sw"; swatch.style.setProperty("--c", code.colour);
      kind.className = "muted"; kind.textContent = code.kind;
      count.id = "uses-" + code.id; count.className = "uses"; count.title = "Uses in this interview"; count.textContent = uses;
      button.append(swatch, code.name, kind, count);
      li.appendChild(button);
      document.getElementById("code-list-panel").appendChild(li);
    }

    document.body.addEventListener("coding-changed", function (e) {
      var d = e.detail || {};
      // Fired before the response is swapped in: the panel row exists when its count arrives.
      if (d.newCode) { pendingPick = null; addCode(d.newCode, 0); }
      if (d.action === "create" && d.newCode) say("Created “" + d.newCode.name + "”: select sentences and choose it to apply it.");
      if (d.action === "apply" || d.action === "remove") {
        var c = codeById(d.code), n = (d.segments || []).length;
        if (d.undo) {
          undoPending = false;
          if (d.undo.archivedCode) retireCode(d.undo.archivedCode);
          say(d.undo.message);
          return;
        }
        if (d.action === "apply") pushRecent(d.code);
        say((d.action === "apply" ? "Applied " : "Removed ") + (c ? "“" + c.name + "”" : "code") +
            (n ? " on " + n + " segment" + (n > 1 ? "s" : "") : " (nothing changed)") + ".");
      }
    });
    // Creating was refused as a code has the name (one a colleague renamed since the page loaded, perhaps): the
    // page learns that code before the picker opens again with the name typed, so the picker offers to apply it.
    document.body.addEventListener("code-name-taken", function (e) {
      var code = e.detail;
      learnCode(code, transcript.querySelectorAll(".chip[data-c='" + code.id + "']:not(.suggested)").length);
    });
    document.body.addEventListener("coding-undo", function (e) {
      undoPending = false;
      say(e.detail.message);
    });
    document.body.addEventListener("htmx:responseError", function (e) {
      var xhr = e.detail.xhr, path = (e.detail.pathInfo || {}).requestPath || (e.detail.requestConfig || {}).path;
      undoPending = false;
      refocus = null;
      if (xhr.status === 400 && pendingPick && path === cfg.create) {
        // The name typed stays: the picker opens again with it and the server's reason.
        var pick = pendingPick;
        pendingPick = null;
        reopenPicker(pick, xhr.responseText);
        say(xhr.responseText);
      }
      else if (xhr.status === 400) say(xhr.responseText);
      else if (xhr.status === 403) say("Your role in this project is read-only.");
      else say("That did not work (" + xhr.status + "). Nothing was changed; please try again.");
    });
    document.body.addEventListener("htmx:sendError", function () {
      undoPending = false;
      say("No connection to the server; nothing was saved.");
    });
    document.body.addEventListener("htmx:oobAfterSwap", function (e) {
      // The swapped-in element replaces the old one; look it up again by id.
      var old = e.detail.target, el = old && old.id ? document.getElementById(old.id) : null;
      if (el && el.classList.contains("chips")) {
        el.parentElement.classList.toggle("coded", el.children.length > 0);
        applyFilters(el);
        if (refocus && refocus.box === el.id) focusAfterRemove(el);
      }
    });

    /* ---- a chip's remove button (the user's own chips): mouse, touch, or Tab then Enter ---- */
    // Where focus goes once the chips come back: the next remove button of the sentence, else the sentence itself.
    var refocus = null;
    transcript.addEventListener("click", function (e) {
      var x = e.target.closest(".chip-x");
      if (!x) return;
      var chip = x.closest(".chip"), box = chip.parentElement;
      refocus = { box: box.id, index: Array.prototype.indexOf.call(box.querySelectorAll(".chip-x"), x) };
      removeCode(chip.dataset.c, [box.id.slice(6)]);
    });
    function focusAfterRemove(box) {
      var buttons = box.querySelectorAll(".chip-x"), index = refocus.index;
      refocus = null;
      if (buttons.length) { buttons[Math.min(index, buttons.length - 1)].focus(); return; }
      var seg = box.closest(".seg");
      if (indexOf.has(seg)) moveTo(indexOf.get(seg), false);
      transcript.focus({ preventScroll: true });
    }

    // One undo at a time: a second press waits for the first, so each takes back a different action.
    function undo() {
      if (undoPending || !cfg.canWrite) { if (!cfg.canWrite) say("Your role in this project is read-only."); return; }
      undoPending = true;
      say("Undoing…");
      send(cfg.undo, {});
    }

    function removeFromSelection() {
      var mine = {};
      selection().forEach(function (el) {
        el.querySelectorAll(".chip.mine").forEach(function (ch) { mine[ch.dataset.c] = true; });
      });
      var ids = Object.keys(mine);
      if (!ids.length) { say("None of your codes is on the selection."); return; }
      if (ids.length === 1) { removeCode(ids[0]); return; }
      openPicker("remove", ids.map(Number));
    }

    /* ---- picker ---- */
    function fuzzy(query, text) {
      // Subsequence match; contiguous runs and word starts score higher. -1: no match.
      query = query.toLowerCase(); text = text.toLowerCase();
      if (!query) return 0;
      var score = 0, ti = 0, run = 0;
      for (var qi = 0; qi < query.length; qi++) {
        var ch = query[qi], found = text.indexOf(ch, ti);
        if (found < 0) return -1;
        run = found === ti ? run + 1 : 0;
        score += 1 + run * 2 + (found === 0 || text[found - 1] === " " ? 3 : 0) - Math.min(found - ti, 3) * 0.1;
        ti = found + 1;
      }
      return score - text.length * 0.01;
    }
    // Where in a code's definition every word of the query occurs (-1: somewhere they don't).
    function definitionHit(query, definition) {
      var words = query.toLowerCase().split(/\s+/).filter(Boolean), text = (definition || "").toLowerCase();
      if (!words.length) return -1;
      var first = Infinity;
      for (var i = 0; i < words.length; i++) {
        var at = text.indexOf(words[i]);
        if (at < 0) return -1;
        first = Math.min(first, at);
      }
      return first;
    }
    // Name matches rank above every definition-only match; -1: neither matches.
    var NAME_RANK = 1000;
    function codeMatch(query, code) {
      var byName = fuzzy(query, code.name);
      if (byName >= 0) return { s: NAME_RANK + byName, inDefinition: -1 };
      var at = definitionHit(query, code.definition);
      return at < 0 ? { s: -1, inDefinition: -1 } : { s: NAME_RANK - 1 - at * 0.001, inDefinition: at };
    }
    function definitionExcerpt(definition, at) {
      var start = Math.max(0, at - 20), text = definition.slice(start, start + 70);
      return (start > 0 ? "…" : "") + text + (start + 70 < definition.length ? "…" : "");
    }
    function renderPicker() {
      var q = pickerInput.value.trim();
      var pool = pickerMode === "remove" ? codes.filter(function (c) { return pickerOnly.indexOf(c.id) >= 0; }) : codes;
      pickerItems = pool.map(function (c) { var m = codeMatch(q, c); return { code: c, s: m.s, inDefinition: m.inDefinition }; })
        .filter(function (x) { return x.s >= 0; })
        .sort(function (a, b) { return b.s - a.s; }).slice(0, 30);
      var named = sameName(q);
      var exact = codes.some(function (c) { return sameName(c.name) === named; });
      if (pickerMode === "apply" && q && !exact && cfg.canWrite) pickerItems.push(newNameItem(q, named));
      pickerActive = Math.min(pickerActive, Math.max(0, pickerItems.length - 1));
      pickerList.textContent = "";
      pickerItems.forEach(function (item, i) {
        var li = document.createElement("li");
        li.setAttribute("role", "option");
        li.id = "pick-" + i;
        li.dataset.index = i;
        if (i === pickerActive) { li.className = "active"; li.setAttribute("aria-selected", "true"); }
        if (item.create) {
          li.classList.add("create");
          li.textContent = "Create “" + item.create + "” (" + newKind + ")";
        } else if (item.bringBack) {
          li.classList.add("bring-back");
          li.textContent = "“" + item.bringBack.name + "” is archived: bring it back into use" +
            (selection().length ? " and apply it" : "");
        } else if (item.notice) {
          li.className = "notice";
          li.removeAttribute("role");
          li.removeAttribute("data-index");
          li.textContent = item.notice;
        } else {
          var sw = document.createElement("span"); sw.className = "sw"; sw.style.setProperty("--c", item.code.colour);
          var k = document.createElement("small"); k.className = "muted"; k.textContent = " " + item.code.kind;
          li.append(sw, item.code.name, k);
          if (item.mergedFrom) {
            var from = document.createElement("small"); from.className = "pick-definition muted";
            from.textContent = "“" + item.mergedFrom.name + "” was merged into it";
            li.appendChild(from);
          }
          if (item.inDefinition >= 0) {
            var hit = document.createElement("small"); hit.className = "pick-definition muted";
            hit.textContent = "definition: " + definitionExcerpt(item.code.definition, item.inDefinition);
            li.appendChild(hit);
          }
          if (item.code.definition) li.title = item.code.definition;
        }
        pickerList.appendChild(li);
      });
      if (!pickerItems.length) {
        var li = document.createElement("li"); li.className = "empty"; li.textContent = "No code matches.";
        pickerList.appendChild(li);
      }
      pickerInput.setAttribute("aria-activedescendant", pickerItems.length ? "pick-" + pickerActive : "");
    }
    // Names compare as the server compares them: case and runs of spaces aside.
    function sameName(name) { return name.trim().split(/\s+/).join(" ").toLowerCase(); }
    // The code a merged code's codings went to, followed along merges; null when it is archived too.
    function mergeTarget(code) {
      for (var seen = 0; code && code.mergedInto && seen < 20; seen++) {
        var into = code.mergedInto;
        code = allCodes.filter(function (c) { return c.id === into; })[0];
      }
      return code && !code.archived ? code : null;
    }
    // A name no live code has: an archived code's is offered back (not refused as taken), a merged code's leads to
    // the code it went into; any other name creates a code.
    function newNameItem(q, named) {
      var archived = allCodes.filter(function (c) { return c.archived && sameName(c.name) === named; })[0];
      if (!archived) return { create: q };
      if (!archived.mergedInto) return { bringBack: archived };
      var target = mergeTarget(archived);
      if (target) return { code: target, mergedFrom: archived, s: 0, inDefinition: -1 };
      return { notice: "“" + archived.name + "” was merged into a code that is archived too; bring that one back in the codebook." };
    }
    var pickerOnly = [], pickerOpener = null;
    // opener: the button that opened the picker (focus goes back to it), none for a key. Only the panel's
    // "New code…" opens it without a selection: a code can be created before any sentence is chosen.
    function openPicker(mode, only, opener) {
      if (!cfg.canWrite) { say("Your role in this project is read-only."); return; }
      var n = selection().length;
      if (!n && !(opener && opener === newCodeButton)) { say("Select a segment first (click or tap it, or press j)."); return; }
      pickerMode = mode; pickerOnly = only || []; pickerActive = 0; pickerOpener = opener || null;
      pickerLabel.textContent = mode === "remove" ? "Remove one of your codes" :
        n ? "Apply a code to " + n + " segment(s)" : "Create a code (to apply one, select sentences first)";
      pickerInput.value = "";
      pickerError.textContent = "";
      renderPicker();
      picker.showModal();
      pickerInput.focus();
    }
    function reopenPicker(pick, message) {
      pickerMode = "apply"; pickerOpener = pick.opener; pickerActive = 0;
      pickerInput.value = pick.text;
      pickerError.textContent = message;
      renderPicker();
      picker.showModal();
      pickerInput.focus();
    }
    function choose(i) {
      var item = pickerItems[i];
      if (!item || item.notice) return;
      if (!item.create && !item.bringBack && pickerMode === "apply" && !selection().length) {
        pickerError.textContent = "“" + item.code.name + "” already exists: select sentences first to apply it.";
        return;
      }
      if (item.create) createAndApply({ name: item.create, kind: newKind });
      else if (item.bringBack) createAndApply({ bring_back: item.bringBack.id });
      else if (pickerMode === "remove") removeCode(item.code.id);
      else apply(item.code.id);
      picker.close();
    }
    pickerInput.addEventListener("input", function () { pickerActive = 0; renderPicker(); });
    pickerInput.addEventListener("keydown", function (e) {
      if (e.key === "ArrowDown") { pickerActive = Math.min(pickerItems.length - 1, pickerActive + 1); renderPicker(); e.preventDefault(); }
      else if (e.key === "ArrowUp") { pickerActive = Math.max(0, pickerActive - 1); renderPicker(); e.preventDefault(); }
      else if (e.key === "Enter") { e.preventDefault(); choose(pickerActive); }
      else if (e.key === "Tab") { e.preventDefault(); toggleKind(); }
    });
    function toggleKind() {
      newKind = newKind === "semantic" ? "latent" : "semantic";
      if (pickerKindEl) pickerKindEl.textContent = newKind;
      renderPicker();
    }
    if (pickerKindEl) pickerKindEl.addEventListener("click", function () { toggleKind(); pickerInput.focus(); });
    pickerList.addEventListener("click", function (e) {
      var li = e.target.closest("li[data-index]");
      if (li) choose(Number(li.dataset.index));
    });
    picker.addEventListener("close", function () {
      var back = pickerOpener && document.body.contains(pickerOpener) ? pickerOpener : transcript;
      back.focus({ preventScroll: true });
    });
    // The buttons are there for writers only.
    [document.getElementById("open-picker"), newCodeButton].forEach(function (button) {
      if (button) button.addEventListener("click", function () { openPicker("apply", null, button); });
    });

    /* the code panel: click applies to the selection */
    document.querySelector(".ws-codes").addEventListener("click", function (e) {
      var b = e.target.closest(".code-row[data-code]");
      if (b) { apply(b.dataset.code); transcript.focus({ preventScroll: true }); }
    });
    document.getElementById("panel-filter").addEventListener("input", function (e) {
      var q = e.target.value;
      document.querySelectorAll("#code-list-panel .code-row").forEach(function (b) {
        var c = codeById(b.dataset.code);
        b.parentElement.hidden = !c || !!(q.trim() && codeMatch(q.trim(), c).s < 0);
      });
    });

    /* chips carry only ids; a hover shows the code, its kind and the coder */
    transcript.addEventListener("mouseover", function (e) {
      var ch = e.target.closest(".chip");
      if (!ch || ch.title) return;
      var c = allCodes.filter(function (x) { return String(x.id) === ch.dataset.c; })[0];
      ch.title = (c ? c.name + " (" + c.kind + ")" : "code") + " · " + (cfg.coders[ch.dataset.u] || "former member");
    });

    /* ---- filters ---- */
    function chipVisible(ch) {
      if (filters.code && ch.dataset.c !== filters.code) return false;
      if (filters.kind && (kindOf[ch.dataset.c] || "") !== filters.kind) return false;
      if (filters.coder === "mine" && ch.dataset.u !== me) return false;
      if (filters.coder && filters.coder !== "mine" && ch.dataset.u !== filters.coder) return false;
      return true;
    }
    function applyFilters(scope) {
      var active = !!(filters.code || filters.kind || filters.coder);
      transcript.classList.toggle("filtering", active);
      var containers = scope ? [scope] : transcript.querySelectorAll(".chips");
      Array.prototype.forEach.call(containers, function (box) {
        var any = false;
        Array.prototype.forEach.call(box.children, function (ch) {
          var v = chipVisible(ch);
          ch.classList.toggle("hide", !v);
          any = any || v;
        });
        box.parentElement.classList.toggle("match", active && any);
      });
    }
    ["code", "kind", "coder"].forEach(function (name) {
      document.getElementById("filter-" + name).addEventListener("change", function (e) {
        filters[name] = e.target.value;
        applyFilters();
      });
    });

    // "Uncoded" means uncoded by the coders the coder filter shows (everyone, me, or one colleague).
    function shownCodersChips() {
      if (filters.coder === "mine") return ".chip.mine";
      if (filters.coder) return ".chip[data-u='" + filters.coder + "']";
      return ".chip";
    }
    function uncodedAt(i) {
      var el = segs[i];
      return !el.classList.contains("other") && !el.querySelector(shownCodersChips());
    }
    function nextUncoded() {
      for (var i = cursor + 1; i < segs.length; i++) {
        if (uncodedAt(i)) { moveTo(i, false); say(""); return; }
      }
      // Past the last one: start again from the top (the current segment included, last).
      for (var w = 0; w <= cursor && w < segs.length; w++) {
        if (uncodedAt(w)) { moveTo(w, false); say("Wrapped around to the top: no uncoded participant segment below."); return; }
      }
      var coderSelect = document.getElementById("filter-coder");
      var by = filters.coder ? " by " + coderSelect.options[coderSelect.selectedIndex].textContent.replace("only mine", "you") : "";
      say("Every participant segment is coded" + by + ".");
    }
    document.getElementById("next-uncoded").addEventListener("click", nextUncoded);
    document.getElementById("show-help").addEventListener("click", function () { helpDialog.showModal(); });

    /* ---- notes ---- */
    var noteForm = document.getElementById("note-form");
    document.body.addEventListener("click", function (e) {
      var b = e.target.closest(".note-btn");
      if (!b) return;
      var turn = b.dataset.turn;
      var block = document.getElementById(turn ? "notes-t" + turn : "notes-interview");
      document.getElementById("note-turn").value = turn || "";
      document.getElementById("note-text").value = block ? block.dataset.mine || "" : "";
      noteDialog.showModal();
      document.getElementById("note-text").focus();
    });
    document.getElementById("note-cancel").addEventListener("click", function () { noteDialog.close(); });
    noteForm.addEventListener("submit", function (e) {
      e.preventDefault();
      send(cfg.notes, { turn: document.getElementById("note-turn").value, text: document.getElementById("note-text").value });
      noteDialog.close();
    });

    /* ---- AI suggestions: dashed chips, reviewed one by one (s next, y accept, r reject, R reject with a reason) ---- */
    function currentSuggestion() {
      var focused = document.activeElement;
      if (focused && focused.dataset && focused.dataset.sugg) return focused;
      return cursor >= 0 ? segs[cursor].querySelector("[data-sugg]") : null;
    }
    function nextSuggestion() {
      for (var i = cursor + 1; i < segs.length; i++) {
        var chip = segs[i].querySelector("[data-sugg]");
        if (chip) { moveTo(i, false); chip.focus(); return; }
      }
      say("No more AI suggestions below.");
    }
    var csrf = (function () {
      try { return JSON.parse(document.body.getAttribute("hx-headers"))["X-CSRFToken"]; } catch (e) { return ""; }
    })();
    function decide(chip, decision, reason) {
      var body = new FormData();
      if (reason) body.append("reason", reason);
      fetch(cfg.decide.replace("00000000-0000-0000-0000-000000000000", chip.dataset.sugg).replace("DECISION", decision), {
        method: "POST", body: body, credentials: "same-origin",
        headers: { "X-CSRFToken": csrf, Accept: "application/json" },
      }).then(function (r) { return r.json().then(function (data) { return [r.ok, data]; }); })
        .then(function (answer) {
          if (!answer[0]) { say(answer[1].error || "Could not save the decision."); return; }
          chip.remove();
          say(decision === "accept" ? "Suggestion accepted as your coding." : "Suggestion rejected.");
          refresh();
        })
        .catch(function () { say("Could not reach the server; nothing was decided."); });
    }
    transcript.addEventListener("focusin", function (e) {
      if (e.target.dataset && e.target.dataset.sugg) say(e.target.title);
    });

    /* ---- keyboard: the keys and the help come from coding/shortcuts.py WORKSPACE ---- */
    function decideKey(e) {
      var chip = currentSuggestion();
      if (!cfg.canWrite || !chip) return false;
      var reason = e.key === "R" ? window.prompt("Why reject this suggestion? (optional)") : "";
      if (reason !== null) decide(chip, e.key === "y" ? "accept" : "reject", reason);
    }
    window.RTA.shortcuts({
      down: function (e) { moveTo(cursor < 0 ? 0 : cursor + 1, e.shiftKey); },
      up: function (e) { moveTo(cursor < 0 ? 0 : cursor - 1, e.shiftKey); },
      extend: function (e) { moveTo(cursor < 0 ? 0 : cursor + (e.key === "J" ? 1 : -1), true); },
      picker: function () { openPicker("apply"); },
      recent: function (e) {
        var id = recent()[Number(e.key) - 1];
        if (id) apply(id); else say("No recent code " + e.key + " yet.");
      },
      remove: removeFromSelection,
      undo: undo,
      next_uncoded: nextUncoded,
      next_suggestion: nextSuggestion,
      accept: decideKey,
      reject: decideKey,
      clear: function () { cursor = anchor = -1; paintSelection(); },
    });

    /* ---- other coders' work appears without a reload: on a live event (live.js), else by light polling ---- */
    var inFlight = 0, changes = 0, missed = false;
    document.body.addEventListener("htmx:beforeRequest", function () { inFlight++; });
    document.body.addEventListener("htmx:afterRequest", function () {
      inFlight = Math.max(0, inFlight - 1); changes++;
      if (missed && !inFlight) setTimeout(refresh, 0);
    });
    document.addEventListener("rta:live", function (e) {
      var kind = e.detail.kind;
      if ((kind === "coding" && e.detail.interview === cfg.interview) || kind === "codebook" || kind === "resync") refresh();
    });
    document.addEventListener("visibilitychange", function () { if (missed && !document.hidden) refresh(); });
    function refresh() { poll(true); }
    function chipKey(box) {
      return Array.prototype.map.call(box.children, function (ch) { return ch.dataset.c + ":" + ch.dataset.u; }).join(",");
    }
    function makeChip(code, coder, meta) {
      var ch = document.createElement("span");
      ch.className = "chip" + (String(coder) === me ? " mine" : "");
      ch.dataset.c = code;
      ch.dataset.u = coder;
      ch.style.setProperty("--c", meta ? meta[1] : "#999999");
      ch.append(meta ? meta[0] : "(code)");
      var small = document.createElement("small");
      small.textContent = cfg.initials[coder] || "??";
      ch.appendChild(small);
      if (String(coder) === me && cfg.canWrite) {  // as coding/render.py's ChipRenderer draws it
        var x = document.createElement("button");
        x.type = "button"; x.className = "chip-x";
        x.setAttribute("aria-label", "Remove " + (meta ? meta[0] : "this code") + " from this sentence");
        ch.appendChild(x);
      }
      return ch;
    }
    // The interview's progress is counted here, from the chips on the page, after every swap and
    // poll: the apply request's work then grows with the segments it touches, not with the interview.
    function updateProgress() {
      var all = transcript.querySelectorAll(".seg:not(.other)").length;
      var coded = transcript.querySelectorAll(".seg.coded:not(.other)").length;
      document.getElementById("progress-interview").textContent = coded + " / " + all;
      syncProjectProgress();
    }
    // The project's figure moves by whatever this interview's coded count moved by (own codings,
    // and colleagues' seen by polling); changes in other interviews show on the next page load.
    function codedIn(id) {
      var el = document.getElementById(id);
      return el ? Number(el.textContent.split("/")[0]) : NaN;
    }
    var interviewCoded = codedIn("progress-interview");
    function syncProjectProgress() {
      var now = codedIn("progress-interview"), project = document.getElementById("progress-project");
      if (project && !isNaN(now) && !isNaN(interviewCoded) && now !== interviewCoded) {
        var parts = project.textContent.split("/");
        project.textContent = (Number(parts[0]) + now - interviewCoded) + " / " + parts[1].trim();
      }
      interviewCoded = now;
    }
    document.body.addEventListener("htmx:afterSettle", updateProgress);
    // While the stream is up it says when to look; a poll at a quarter of the rate still catches changes made
    // outside the app's services (an import, a restore), which announce nothing.
    var quietPolls = 0;
    function poll(now) {  // now: an event or our own decision asks; else the timer
      if (!now && window.rtaLive && window.rtaLive.connected && ++quietPolls % 4) return;
      if (document.hidden || inFlight) { missed = missed || !!now; return; }
      missed = false;
      var seen = changes;
      fetch(cfg.state, { headers: { Accept: "application/json" }, credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (data) {
          // A change of our own since the poll started is newer than this answer: wait for the next poll.
          if (!data) return;
          if (inFlight || seen !== changes) {
            if (now) { missed = true; if (!inFlight) setTimeout(refresh, 0); }
            return;
          }
          var byId = {};
          allCodes.forEach(function (c) { byId[c.id] = c; });
          Object.keys(data.codes).forEach(function (id) {
            var row = data.codes[id], code = { id: Number(id), name: row[0], colour: row[1], kind: row[2],
                                               archived: row[3], mergedInto: row[4] };
            learnCode(code, byId[id] ? 0 : data.codings.filter(function (r) { return r[1] === code.id; }).length);
          });
          var want = {};
          data.codings.forEach(function (row) { (want[row[0]] = want[row[0]] || []).push(row); });
          transcript.querySelectorAll(".chips").forEach(function (box) {
            var rows = want[box.id.slice(6)] || [];
            if (rows.map(function (r) { return r[1] + ":" + r[2]; }).join(",") === chipKey(box)) return;
            box.textContent = "";
            rows.forEach(function (r) { box.appendChild(makeChip(r[1], r[2], data.codes[r[1]])); });
            box.parentElement.classList.toggle("coded", rows.length > 0);
            applyFilters(box);
          });
          updateProgress();
        })
        .catch(function () { /* offline for a moment: the next poll tries again */ });
    }
    setInterval(function () { poll(false); }, cfg.pollSeconds * 1000);

    paintRecent();
    var m = /^#s-(\d+)$/.exec(location.hash);
    if (m) {
      var target = document.getElementById("s-" + m[1]);
      if (target && indexOf.has(target)) moveTo(indexOf.get(target), false);
      else if (target) target.scrollIntoView({ block: "center" });
    }
    // Keys are bound and the segments are indexed: bench/phases/browser_open.py times page opens up to here.
    if (window.performance && performance.mark) performance.mark("rta:ready");
  });
})();
