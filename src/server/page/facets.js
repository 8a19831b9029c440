// bookdb explorer: the filters on the book's facets (speed, rating group, mode, months) and
// the chart of the position's games per month. Part of the chess page (explorer.js, whose
// state, `go` and `base` these use; classic scripts share their top-level names).
"use strict";

// ---- filters -------------------------------------------------------------------------------

function initFilters() {
  els.filters.addEventListener("click", (e) => {
    const b = e.target.closest("button.chip");
    if (!b) return;
    const s = cloneState(base());
    const f = s.filters;
    if (b.dataset.speed) f.speeds = toggled(f.speeds, b.dataset.speed, SPEEDS);
    else if (b.dataset.mode) f.modes = toggled(f.modes, b.dataset.mode, MODES);
    else if (b.dataset.rating) f.ratings = toggledRating(f.ratings, parseInt(b.dataset.rating, 10));
    else if (b.id === "clear-filters") s.filters = noFilters();
    else return;
    go(s, "push");
  });
  for (const id of ["since", "until"]) {
    els[id].addEventListener("change", () => {
      const v = els[id].value.trim();
      // Browsers without a month picker show a text box: take only what the server can read.
      const ok = v === "" || MONTH_RE.test(v);
      els[id].setAttribute("aria-invalid", String(!ok));
      if (!ok || v === base().filters[id]) return;
      const s = cloneState(base());
      s.filters[id] = v;
      go(s, "push");
    });
  }
  // Only a click on the summary is the user's choice (not the folding for a phone).
  els.filters.querySelector("summary").addEventListener("click", () => {
    setTimeout(() => {
      try { localStorage.setItem("bookdb-filters-open", String(els.filters.open)); } catch (_) { /* ignore */ }
    });
  });
}

// `list` with `v` added or taken out, the known values in `order` first, in that order.
function toggled(list, v, order) {
  const next = list.includes(v) ? list.filter((x) => x !== v) : list.concat([v]);
  const known = order.filter((x) => next.includes(x));
  return known.concat(next.filter((x) => !order.includes(x)));
}

// The rating group a `ratings` value selects (the largest group not above it), null for one
// that is not a number.
function ratingGroup(v) {
  if (!/^[0-9]+$/.test(String(v).trim())) return null;
  const r = parseInt(v, 10);
  let g = 0;
  for (const x of RATING_GROUPS) if (x <= r) g = x;
  return g;
}

// `ratings` with group `g` selected or, when some value selects it, every such value taken out.
function toggledRating(list, g) {
  const next = list.some((v) => ratingGroup(v) === g)
    ? list.filter((v) => ratingGroup(v) !== g)
    : list.concat([String(g)]);
  const nums = next.filter((v) => ratingGroup(v) !== null).sort((a, b) => parseInt(a, 10) - parseInt(b, 10));
  return nums.concat(next.filter((v) => ratingGroup(v) === null));
}

// The filter controls, for the state being fetched (else the one shown): a facet's controls show
// when the book keeps it or the state filters on it (so that the filter can be taken off).
function renderFilters() {
  const f = base().filters;
  const show = {
    speed: keeps("speed") || f.speeds.length > 0,
    rating: keeps("rating") || f.ratings.length > 0,
    mode: keeps("mode") || f.modes.length > 0,
    month: keeps("month") || f.since !== "" || f.until !== "",
  };
  for (const facet of FACETS) els["f-" + facet].hidden = !show[facet];
  els.filters.hidden = !FACETS.some((facet) => show[facet]);
  const groups = new Set(f.ratings.map(ratingGroup));
  for (const b of els.filters.querySelectorAll("button.chip")) {
    let on = null;
    if (b.dataset.speed) on = f.speeds.includes(b.dataset.speed);
    else if (b.dataset.mode) on = f.modes.includes(b.dataset.mode);
    else if (b.dataset.rating) on = groups.has(parseInt(b.dataset.rating, 10));
    if (on !== null) b.setAttribute("aria-pressed", String(on));
  }
  for (const id of ["since", "until"]) {
    // Not under the user's fingers: a value being typed stays.
    if (document.activeElement !== els[id]) {
      els[id].value = f[id];
      els[id].removeAttribute("aria-invalid");
    }
  }
  els["clear-filters"].hidden = !hasFilters(f);
  els["filters-summary"].textContent = filtersSummary(f);
}

function filtersSummary(f) {
  const parts = [];
  if (f.speeds.length) parts.push(f.speeds.map((v) => SPEED_NAMES[v] || v).join(", "));
  if (f.ratings.length) {
    parts.push(f.ratings.map((v) => {
      const g = ratingGroup(v);
      return g === null ? v : g === 0 ? "<1000" : g === 2500 ? "2500+" : String(g);
    }).join(", "));
  }
  if (f.modes.length) parts.push(f.modes.join(", "));
  if (f.since || f.until) parts.push((f.since || "…") + " to " + (f.until || "…"));
  return parts.length ? "· " + parts.join(" · ") : "· all games";
}

// ---- history chart -------------------------------------------------------------------------

let chartWidth = 0;

function initHistory() {
  const chart = els["history-chart"];
  chart.addEventListener("keydown", (e) => {
    const h = historyOf(current);
    if (!h || e.altKey || e.ctrlKey || e.metaKey) return;
    let i = historySel;
    if (e.key === "ArrowRight") i = i === null ? 0 : Math.min(h.length - 1, i + 1);
    else if (e.key === "ArrowLeft") i = i === null ? h.length - 1 : Math.max(0, i - 1);
    else if (e.key === "Home") i = 0;
    else if (e.key === "End") i = h.length - 1;
    else if (e.key === "Escape") i = null;
    else return;
    // The chart's keys pick months; they do not step through the line.
    e.preventDefault();
    e.stopPropagation();
    historySel = i;
    markMonth(h, i);
  });
  chart.addEventListener("blur", () => {
    historySel = null;
    const h = historyOf(current);
    if (h) markMonth(h, null);
  });
  chart.addEventListener("pointerover", (e) => {
    const g = e.target.closest && e.target.closest("g.month");
    const h = historyOf(current);
    if (g && h) markMonth(h, parseInt(g.dataset.index, 10));
  });
  chart.addEventListener("pointerleave", () => {
    const h = historyOf(current);
    if (h) markMonth(h, historySel);
  });
  const redraw = () => {
    const w = Math.round(chart.clientWidth);
    if (w > 0 && w !== chartWidth && !els.history.hidden) renderHistory();
  };
  if (typeof ResizeObserver === "function") new ResizeObserver(redraw).observe(chart);
  else window.addEventListener("resize", redraw);
}

// The answer's `history`, months with counts (missing or odd counts read as 0), or null.
function historyOf(ans) {
  if (!ans || !Array.isArray(ans.history)) return null;
  const n = (v) => (typeof v === "number" && v > 0 ? v : 0);
  const h = ans.history
    .filter((m) => m && typeof m.month === "string")
    .map((m) => ({ month: m.month, white: n(m.white), draws: n(m.draws), black: n(m.black) }));
  return h.length ? h : null;
}

function monthText(m) {
  const t = m.white + m.draws + m.black;
  if (!t) return `${m.month}: no games`;
  return `${m.month}: ${fmt(t)} game${t === 1 ? "" : "s"} · White ${pct(m.white, t)} · ` +
    `Draws ${pct(m.draws, t)} · Black ${pct(m.black, t)}`;
}

function historySummary(h) {
  const totals = h.map((m) => m.white + m.draws + m.black);
  const all = totals.reduce((a, b) => a + b, 0);
  const peak = totals.indexOf(Math.max(...totals));
  const range = h.length === 1 ? h[0].month : `${h[0].month} to ${h[h.length - 1].month}`;
  let t = `${range}: ${fmt(all)} game${all === 1 ? "" : "s"}`;
  if (all && h.length > 1) t += ` · most in ${h[peak].month} (${fmt(totals[peak])})`;
  return t;
}

// Highlights month `i` (null: none) and says its counts under the chart.
function markMonth(h, i) {
  for (const g of els["history-chart"].querySelectorAll("g.month")) {
    g.classList.toggle("sel", i !== null && parseInt(g.dataset.index, 10) === i);
  }
  els["history-note"].textContent = i === null || !h[i] ? historySummary(h) : monthText(h[i]);
}

// Stacked columns, one a month: white at the bottom, then draws, then black; heights in games,
// the busiest month full height. Drawn at the box's width in pixels so the text stays legible.
function renderHistory() {
  const h = historyOf(current);
  const box = els["history-chart"];
  if (!h) {
    els.history.hidden = true;
    box.textContent = "";
    els["history-note"].textContent = "";
    return;
  }
  els.history.hidden = false;
  chartWidth = Math.round(box.clientWidth);
  const width = Math.max(200, chartWidth || 560);
  const height = 128;
  const pad = { l: 4, r: 4, t: 16, b: 18 };
  const pw = width - pad.l - pad.r;
  const ph = height - pad.t - pad.b;
  const totals = h.map((m) => m.white + m.draws + m.black);
  const max = Math.max(1, ...totals);
  const step = pw / h.length;
  const gap = step >= 4 ? Math.min(2, step * 0.2) : 0;
  const root = svg("svg", {
    viewBox: `0 0 ${width} ${height}`, width, height, class: "history-svg",
    "data-plot-height": ph, preserveAspectRatio: "xMinYMin meet",
  });
  svg("rect", { x: pad.l, y: pad.t, width: pw, height: ph, class: "plot" }, root);
  h.forEach((m, i) => {
    const g = svg("g", { class: "month", "data-month": m.month, "data-index": i }, root);
    svg("title", {}, g).textContent = monthText(m);
    const x = pad.l + i * step;
    svg("rect", { x, y: pad.t, width: step, height: ph, class: "hit" }, g);
    let y = pad.t + ph;
    for (const [part, n] of [["w", m.white], ["d", m.draws], ["b", m.black]]) {
      const hh = (n / max) * ph;
      svg("rect", {
        x: x + gap / 2, y: y - hh, width: Math.max(0.5, step - gap), height: hh,
        class: "seg " + part, "data-part": part, "data-games": n,
      }, g);
      y -= hh;
    }
  });
  svg("line", { x1: pad.l, x2: pad.l + pw, y1: pad.t + ph, y2: pad.t + ph, class: "axis" }, root);
  const top = svg("text", { x: pad.l, y: pad.t - 4, class: "tick" }, root);
  top.textContent = fmt(max) + (max === 1 ? " game" : " games");
  // Month labels along the bottom: January of each year as the year, as space allows; the first
  // and last month when no year starts inside.
  const labels = [];
  const minGap = 34;
  h.forEach((m, i) => {
    if (m.month.endsWith("-01")) labels.push([i, m.month.slice(0, 4)]);
  });
  let lastX = -Infinity;
  let drawn = 0;
  for (const [i, text] of labels) {
    const x = pad.l + i * step;
    if (x - lastX < minGap || x > width - 28) continue;
    const t = svg("text", { x, y: height - 5, class: "tick" }, root);
    t.textContent = text;
    lastX = x;
    drawn++;
  }
  if (drawn === 0) {
    const t0 = svg("text", { x: pad.l, y: height - 5, class: "tick" }, root);
    t0.textContent = h[0].month;
    if (h.length > 1 && pw > 130) {
      const t1 = svg("text", { x: pad.l + pw, y: height - 5, class: "tick", "text-anchor": "end" }, root);
      t1.textContent = h[h.length - 1].month;
    }
  }
  box.replaceChildren(root);
  box.setAttribute("aria-label", "Games per month, " + historySummary(h) +
    ". Arrow keys pick a month.");
  if (historySel !== null && historySel >= h.length) historySel = null;
  markMonth(h, historySel);
}

