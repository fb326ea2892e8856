// Usage per provider call as a small stacked bar chart (input, cache read, cache write, output),
// with cost dots when the meter prices calls. Built from SVG elements; labels are text nodes.

import { clear, el, fmtCost, fmtInt, svg } from "./dom.js";

const BUCKETS = [["input", "uncached input"], ["cache_read", "cache read"], ["cache_write", "cache write"], ["output", "output"]];
const W = 640;
const H = 150;
const PAD = 24;

export function renderChart(root, calls, total, cost) {
  clear(root);
  if (!calls.length) { root.appendChild(el("p", { class: "muted" }, "No usage reported yet.")); return; }
  const top = Math.max(1, ...calls.map((c) => c.usage.total));
  const slot = (W - PAD) / calls.length;
  const width = Math.max(1, Math.min(36, slot * 0.7));
  const chart = svg("svg", { viewBox: `0 0 ${W} ${H + 18}`, class: "usage-chart", role: "img", "aria-label": "token usage per call" });
  chart.appendChild(svg("line", { x1: PAD, y1: H, x2: W, y2: H, class: "axis" }));
  chart.appendChild(svg("text", { x: 0, y: 10, class: "axis-label" }, fmtInt(top)));
  const costs = calls.map((c) => (c.cost === null ? null : Number(c.cost)));
  const topCost = Math.max(0, ...costs.filter((c) => c !== null));
  calls.forEach((call, i) => {
    const x = PAD + i * slot + (slot - width) / 2;
    const group = svg("g", { class: "call" });
    let y = H;
    for (const [bucket] of BUCKETS) {
      const value = call.usage[bucket];
      if (!value) continue;
      const h = (value / top) * (H - 14);
      y -= h;
      group.appendChild(svg("rect", { x, y, width, height: Math.max(h, 0.5), class: `bar ${bucket}` }));
    }
    if (costs[i] !== null && topCost > 0) {
      group.appendChild(svg("circle", { cx: x + width / 2, cy: H - (costs[i] / topCost) * (H - 14), r: 3, class: "cost-dot" }));
    }
    const u = call.usage;
    group.appendChild(svg("title", {}, `${call.turn}.${call.step} attempt ${call.attempt}: ${fmtInt(u.input)} in, ` +
      `${fmtInt(u.cache_read)} cache read, ${fmtInt(u.cache_write)} cache write, ${fmtInt(u.output)} out ` +
      `(${fmtInt(u.reasoning)} reasoning) = ${fmtInt(u.total)} tokens${call.cost !== null ? `, ${fmtCost(call.cost)}` : ""}`));
    if (calls.length <= 24) {
      group.appendChild(svg("text", { x: x + width / 2, y: H + 13, "text-anchor": "middle", class: "call-label" },
        `${call.turn}.${call.step}.${call.attempt}`));
    }
    chart.appendChild(group);
  });
  const legend = el("div", { class: "legend" },
    BUCKETS.map(([bucket, name]) => el("span", {}, el("i", { class: `swatch ${bucket}` }), name)),
    costs.some((c) => c !== null) ? el("span", {}, el("i", { class: "swatch cost" }), "cost") : null,
    el("span", { class: "muted" }, `total ${fmtInt(total.total)} tokens${cost !== null ? ` · ${fmtCost(cost)}` : ""}`));
  root.append(chart, legend);
}
