// bookdb explorer: the opening search (name or ECO code, from /v1/openings: type, ↑ ↓, Enter),
// pasting a PGN or FEN anywhere on the page, and copying the current line as PGN.
"use strict";

(function (root) {
  const LIMIT = 12;
  const DEBOUNCE_MS = 120;

  // `opts`: onOpening(line) with a /v1/openings line, onText(text) for a pasted text, pgn() the
  // PGN to copy, say(message) to tell the user.
  function init(opts) {
    const input = document.getElementById("opening-search");
    const list = document.getElementById("opening-results");
    const copy = document.getElementById("copy-pgn");
    let results = [];
    let active = -1;
    let seq = 0;
    let timer = null;
    let shownFor = null; // the text the results shown answer

    function close() {
      list.hidden = true;
      list.textContent = "";
      shownFor = null;
      results = [];
      active = -1;
      input.setAttribute("aria-expanded", "false");
      input.removeAttribute("aria-activedescendant");
    }

    function mark(i) {
      active = i;
      list.querySelectorAll("[role=option]").forEach((li, j) => {
        li.setAttribute("aria-selected", String(j === i));
        if (j === i) li.scrollIntoView({ block: "nearest" });
      });
      if (i >= 0) input.setAttribute("aria-activedescendant", "opening-option-" + i);
      else input.removeAttribute("aria-activedescendant");
    }

    function show(found, total, q) {
      list.textContent = "";
      results = found;
      active = -1;
      if (!found.length) {
        const li = document.createElement("li");
        li.className = "none";
        li.textContent = "No opening matches " + JSON.stringify(q) + ".";
        list.append(li);
      }
      found.forEach((o, i) => {
        const li = document.createElement("li");
        li.id = "opening-option-" + i;
        li.setAttribute("role", "option");
        li.setAttribute("aria-selected", "false");
        li.dataset.eco = o.eco;
        const eco = document.createElement("span");
        eco.className = "eco";
        eco.textContent = o.eco;
        const name = document.createElement("span");
        name.className = "name";
        name.textContent = o.name;
        const moves = document.createElement("span");
        moves.className = "pgn";
        moves.textContent = o.pgn;
        li.append(eco, name, moves);
        li.addEventListener("pointerdown", (e) => {
          e.preventDefault();
          pick(i);
        });
        list.append(li);
      });
      if (total > found.length) {
        const li = document.createElement("li");
        li.className = "more";
        li.textContent = `${total - found.length} more: type more of the name`;
        list.append(li);
      }
      list.hidden = false;
      input.setAttribute("aria-expanded", "true");
      if (found.length) mark(0);
    }

    async function search() {
      const q = input.value.trim();
      const mine = ++seq;
      if (q === "") return close();
      try {
        const r = await fetch("/v1/openings?limit=" + LIMIT + "&q=" + encodeURIComponent(q), { headers: { Accept: "application/json" } });
        const body = await r.json();
        if (mine !== seq) return;
        if (!r.ok) throw new Error(body.error || r.statusText);
        show(body.openings, body.total, q);
        shownFor = q;
      } catch (e) {
        if (mine === seq) opts.say("The opening search failed: " + e.message);
      }
    }

    function pick(i) {
      const o = results[i];
      if (!o) return;
      close();
      input.value = "";
      input.blur();
      opts.onOpening(o);
    }

    input.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(search, DEBOUNCE_MS);
    });
    input.addEventListener("keydown", (e) => {
      if (e.key === "ArrowDown" || e.key === "ArrowUp") {
        e.preventDefault();
        if (!results.length) return;
        const d = e.key === "ArrowDown" ? 1 : -1;
        mark((active + d + results.length) % results.length);
      } else if (e.key === "Enter") {
        e.preventDefault();
        // Enter before the answer came: search now, then take the first line.
        if (shownFor !== input.value.trim()) {
          clearTimeout(timer);
          search().then(() => pick(Math.max(0, active)));
        } else pick(Math.max(0, active));
      } else if (e.key === "Escape") {
        e.preventDefault();
        if (!list.hidden) close();
        else {
          input.value = "";
          input.blur();
        }
      }
    });
    input.addEventListener("blur", () => setTimeout(() => {
      if (document.activeElement !== input) close();
    }, 150));

    // A PGN or FEN pasted while no text field has the focus loads it.
    document.addEventListener("paste", (e) => {
      const t = e.target;
      if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.isContentEditable)) return;
      const text = e.clipboardData ? e.clipboardData.getData("text/plain") : "";
      if (text.trim() === "") return;
      e.preventDefault();
      opts.onText(text);
    });

    copy.addEventListener("click", async () => {
      const text = opts.pgn();
      let ok = false;
      try {
        await navigator.clipboard.writeText(text);
        ok = true;
      } catch (_) {
        // No clipboard API (plain http on another host, or no permission): a selected textarea
        // and the copy command.
        const ta = document.createElement("textarea");
        ta.value = text;
        ta.setAttribute("readonly", "");
        ta.className = "copy-buffer";
        document.body.append(ta);
        ta.select();
        try { ok = document.execCommand("copy"); } catch (_) { ok = false; }
        ta.remove();
      }
      copy.dataset.copied = ok ? "true" : "false";
      opts.say(ok ? "The line was copied as PGN." : "Copying failed; the PGN is in the FEN / PGN box.");
      if (!ok) opts.showText(text);
    });
  }

  root.BookdbTools = { init };
})(self);
