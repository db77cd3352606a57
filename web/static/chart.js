// A small line chart of pages over time, drawn as SVG: pages done (solid)
// and pages found (dashed). It has a text alternative, as a chart alone
// says nothing to a screen reader.

const ns = "http://www.w3.org/2000/svg";
const height = 160;
const pad = { left: 44, right: 8, top: 8, bottom: 22 };

function svg(tag, attrs) {
  const el = document.createElementNS(ns, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  return el;
}

// pagesChart returns {el, update(points)}; points are {t (ms), done, found}.
export function pagesChart(titleId) {
  const el = svg("svg", { class: "chart", role: "img", "aria-labelledby": titleId });
  // The drawing is in CSS pixels of the chart's width, so that its text
  // keeps its size on a phone.
  let last = [];
  function update(points) {
    last = points;
    const width = Math.max(200, Math.round(el.getBoundingClientRect().width) || 600);
    el.setAttribute("viewBox", `0 0 ${width} ${height}`);
    el.replaceChildren();
    const plotW = width - pad.left - pad.right;
    const plotH = height - pad.top - pad.bottom;
    const t0 = points.length ? points[0].t : 0;
    const t1 = points.length ? Math.max(points[points.length - 1].t, t0 + 1000) : 1000;
    const top = Math.max(10, ...points.map((p) => p.found || 0), ...points.map((p) => p.done || 0));
    const x = (t) => pad.left + ((t - t0) / (t1 - t0)) * plotW;
    const y = (v) => pad.top + plotH - (v / top) * plotH;
    el.append(
      svg("line", { x1: pad.left, y1: pad.top + plotH, x2: width - pad.right, y2: pad.top + plotH, class: "axis" }),
      svg("line", { x1: pad.left, y1: pad.top, x2: pad.left, y2: pad.top + plotH, class: "axis" }));
    const label = (text, attrs) => {
      const t = svg("text", attrs);
      t.textContent = text;
      el.append(t);
    };
    label(String(top), { x: pad.left - 6, y: pad.top + 10, "text-anchor": "end", class: "tick" });
    label("0", { x: pad.left - 6, y: pad.top + plotH, "text-anchor": "end", class: "tick" });
    label(`${Math.round((t1 - t0) / 1000)} s`, { x: width - pad.right, y: height - 4, "text-anchor": "end", class: "tick" });
    if (points.length < 2) return;
    const line = (key, cls) => svg("polyline", {
      class: cls, fill: "none",
      points: points.map((p) => `${x(p.t).toFixed(1)},${y(p[key] || 0).toFixed(1)}`).join(" "),
    });
    el.append(line("found", "series-found"), line("done", "series-done"));
  }
  new ResizeObserver(() => update(last)).observe(el);
  return { el, update };
}
