// A small line chart in plain SVG: hover (nearest step, every series), zoom (drag across the plot;
// double-click resets), toggle (click a legend entry). No dependencies.
"use strict";
const LineChart = (() => {
  const NS = "http://www.w3.org/2000/svg";
  const PALETTE = ["#2f6fdb", "#d9480f", "#2b8a3e", "#862e9c", "#c2255c", "#0b7285", "#5f3dc4", "#e67700"];
  const svg = (tag, attrs = {}) => {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    return e;
  };
  const fmt = (v) => (Math.abs(v) >= 1000 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(3));

  // series: [{label, points: [[x, y], ...], dashed, color}]
  function draw(container, title, series, opts = {}) {
    const W = opts.width || 460, H = opts.height || 230, M = { l: 52, r: 12, t: 24, b: 30 };
    const hidden = new Set();
    let zoom = null;
    series.forEach((s, i) => { s.color = s.color || PALETTE[i % PALETTE.length]; });
    const box = document.createElement("div");
    box.className = "chart";
    box.dataset.title = title;
    container.append(box);

    function render() {
      box.replaceChildren();
      const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img" });
      root.append(Object.assign(svg("text", { x: M.l, y: 15, class: "chart-title" }), { textContent: title }));
      const shown = series.filter((s) => !hidden.has(s.label) && s.points.length);
      const all = shown.flatMap((s) => s.points).filter((p) => Number.isFinite(p[1]));
      let [x0, x1] = zoom || [Math.min(...all.map((p) => p[0])), Math.max(...all.map((p) => p[0]))];
      if (!all.length) { x0 = 0; x1 = 1; }
      if (x0 === x1) { x0 -= 1; x1 += 1; }
      const inView = all.filter((p) => p[0] >= x0 && p[0] <= x1);
      let y0 = Math.min(...inView.map((p) => p[1])), y1 = Math.max(...inView.map((p) => p[1]));
      if (!inView.length) { y0 = 0; y1 = 1; }
      if (y0 === y1) { y0 -= 0.5; y1 += 0.5; }
      const pad = (y1 - y0) * 0.06; y0 -= pad; y1 += pad;
      const X = (x) => M.l + ((x - x0) / (x1 - x0)) * (W - M.l - M.r);
      const Y = (y) => H - M.b - ((y - y0) / (y1 - y0)) * (H - M.t - M.b);
      for (let i = 0; i <= 4; i++) { // grid and ticks
        const yv = y0 + ((y1 - y0) * i) / 4, xv = x0 + ((x1 - x0) * i) / 4;
        root.append(svg("line", { x1: M.l, x2: W - M.r, y1: Y(yv), y2: Y(yv), class: "grid" }));
        root.append(Object.assign(svg("text", { x: M.l - 4, y: Y(yv) + 4, class: "tick", "text-anchor": "end" }), { textContent: fmt(yv) }));
        root.append(Object.assign(svg("text", { x: X(xv), y: H - M.b + 14, class: "tick", "text-anchor": "middle" }), { textContent: Math.round(xv) }));
      }
      root.append(Object.assign(svg("text", { x: W - M.r, y: H - 4, class: "tick", "text-anchor": "end" }), { textContent: opts.xLabel || "step" }));
      const clip = `clip${Math.random().toString(36).slice(2)}`;
      const defs = svg("defs"); const cp = svg("clipPath", { id: clip });
      cp.append(svg("rect", { x: M.l, y: M.t, width: W - M.l - M.r, height: H - M.t - M.b }));
      defs.append(cp); root.append(defs);
      for (const s of shown) {
        const pts = s.points.filter((p) => Number.isFinite(p[1]));
        const d = pts.map((p, i) => `${i ? "L" : "M"}${X(p[0]).toFixed(1)},${Y(p[1]).toFixed(1)}`).join("");
        root.append(svg("path", { d, fill: "none", stroke: s.color, "stroke-width": 1.8, "clip-path": `url(#${clip})`,
          "stroke-dasharray": s.dashed ? "5 4" : "none", class: "series", "data-label": s.label }));
        if (pts.length <= 60 && !s.dashed) for (const p of pts) {
          if (p[0] >= x0 && p[0] <= x1) root.append(svg("circle", { cx: X(p[0]), cy: Y(p[1]), r: 2.5, fill: s.color }));
        }
      }
      // hover: a rule at the nearest step and each series' value there
      const cursor = svg("line", { y1: M.t, y2: H - M.b, class: "cursor", visibility: "hidden" });
      const sel = svg("rect", { y: M.t, height: H - M.t - M.b, class: "selection", visibility: "hidden" });
      const overlay = svg("rect", { x: M.l, y: M.t, width: W - M.l - M.r, height: H - M.t - M.b, fill: "transparent", class: "overlay" });
      root.append(cursor, sel, overlay);
      const tip = document.createElement("div"); tip.className = "tooltip"; tip.hidden = true;
      const toX = (ev) => { const r = root.getBoundingClientRect(); return x0 + (((ev.clientX - r.left) * W / r.width - M.l) / (W - M.l - M.r)) * (x1 - x0); };
      let dragFrom = null;
      overlay.addEventListener("mousemove", (ev) => {
        const x = toX(ev);
        if (dragFrom !== null) {
          const a = Math.min(X(dragFrom), X(x)), b = Math.max(X(dragFrom), X(x));
          sel.setAttribute("x", a); sel.setAttribute("width", b - a); sel.setAttribute("visibility", "visible");
        }
        const lines = [];
        let nearest = null;
        for (const s of shown) {
          const p = s.points.reduce((best, q) => (best === null || Math.abs(q[0] - x) < Math.abs(best[0] - x) ? q : best), null);
          if (!p) continue;
          if (nearest === null || Math.abs(p[0] - x) < Math.abs(nearest - x)) nearest = p[0];
          lines.push(`<span style="color:${s.color}">■</span> ${s.label}: <b>${Number.isFinite(p[1]) ? fmt(p[1]) : "–"}</b> <span class="muted">@${p[0]}</span>`);
        }
        if (nearest === null) return;
        cursor.setAttribute("x1", X(nearest)); cursor.setAttribute("x2", X(nearest)); cursor.setAttribute("visibility", "visible");
        tip.innerHTML = lines.join("<br>"); tip.hidden = false;
        const r = box.getBoundingClientRect();
        tip.style.left = Math.min(ev.clientX - r.left + 12, r.width - 180) + "px"; tip.style.top = (ev.clientY - r.top + 12) + "px";
      });
      overlay.addEventListener("mouseleave", () => { tip.hidden = true; cursor.setAttribute("visibility", "hidden"); });
      overlay.addEventListener("mousedown", (ev) => { dragFrom = toX(ev); ev.preventDefault(); });
      overlay.addEventListener("mouseup", (ev) => {
        const to = toX(ev);
        if (dragFrom !== null && Math.abs(X(to) - X(dragFrom)) > 6) { zoom = [Math.min(dragFrom, to), Math.max(dragFrom, to)]; dragFrom = null; render(); return; }
        dragFrom = null; sel.setAttribute("visibility", "hidden");
      });
      overlay.addEventListener("dblclick", () => { zoom = null; render(); });
      box.append(root, tip);
      const legend = document.createElement("div"); legend.className = "legend";
      for (const s of series) {
        const item = document.createElement("span");
        item.className = "legend-item" + (hidden.has(s.label) ? " off" : "");
        item.innerHTML = `<span style="color:${s.color}">${s.dashed ? "╌" : "━"}</span> `;
        item.append(s.label);
        item.onclick = () => { hidden.has(s.label) ? hidden.delete(s.label) : hidden.add(s.label); render(); };
        legend.append(item);
      }
      box.append(legend);
    }
    render();
    return box;
  }
  return { draw, PALETTE };
})();
