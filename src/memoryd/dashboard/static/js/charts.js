// Small SVG charts (no library): a time line with markers, and bars (stacked or not).
// Each chart has a title and a description for screen readers; the numbers are also in a
// table next to it wherever they matter.

import { s } from "./ui.js";

const W = 640;
const H = 220;
const PAD = { left: 40, right: 12, top: 12, bottom: 28 };

function frame(title, description) {
  const id = `c${Math.random().toString(36).slice(2, 8)}`;
  return s("svg", { class: "chart", viewBox: `0 0 ${W} ${H}`, role: "img",
    "aria-labelledby": `${id}-t ${id}-d` },
  s("title", { id: `${id}-t` }, title), s("desc", { id: `${id}-d` }, description));
}

function axes(svg, yMax, yFormat) {
  const bottom = H - PAD.bottom;
  svg.append(s("line", { class: "axis", x1: PAD.left, y1: bottom, x2: W - PAD.right, y2: bottom }),
    s("line", { class: "axis", x1: PAD.left, y1: PAD.top, x2: PAD.left, y2: bottom }));
  for (const f of [0, 0.5, 1]) {
    const y = bottom - f * (bottom - PAD.top);
    svg.append(s("text", { x: PAD.left - 4, y: y + 4, "text-anchor": "end" }, yFormat(f * yMax)));
  }
}

// series: [{points: [{at: Date, y: number}], cls: "line" | "line2"}]; marks: [{at, label}].
export function timeChart({ title, description, series, marks = [], now = null, yMax = 1,
  yFormat = (v) => `${Math.round(v * 100)}%` }) {
  const svg = frame(title, description);
  const all = series.flatMap((x) => x.points.map((p) => p.at.getTime()));
  const t0 = Math.min(...all);
  const t1 = Math.max(...all, t0 + 1);
  const x = (t) => PAD.left + ((t - t0) / (t1 - t0)) * (W - PAD.left - PAD.right);
  const y = (v) => H - PAD.bottom - (v / yMax) * (H - PAD.top - PAD.bottom);
  axes(svg, yMax, yFormat);
  for (const line of series) {
    const d = line.points.map((p, i) => `${i ? "L" : "M"}${x(p.at.getTime()).toFixed(1)},${y(p.y).toFixed(1)}`);
    svg.append(s("path", { class: line.cls || "line", d: d.join(" ") }));
  }
  if (now) {
    const nx = x(now.getTime());
    svg.append(s("line", { class: "now", x1: nx, x2: nx, y1: PAD.top, y2: H - PAD.bottom }),
      s("text", { x: nx + 3, y: PAD.top + 10 }, "now"));
  }
  for (const mark of marks) {
    const t = mark.at.getTime();
    if (t < t0 || t > t1) continue;
    svg.append(s("circle", { class: "mark", cx: x(t), cy: H - PAD.bottom, r: 4 },
      s("title", {}, mark.label)));
  }
  svg.append(s("text", { x: PAD.left, y: H - 8 }, new Date(t0).toLocaleDateString()),
    s("text", { x: W - PAD.right, y: H - 8, "text-anchor": "end" }, new Date(t1).toLocaleDateString()));
  return svg;
}

// bars: [{label, parts: [{value, cls}]}] (one part for plain bars).
export function barChart({ title, description, bars, labelEvery = 1, onSelect = null }) {
  const svg = frame(title, description);
  const totals = bars.map((b) => b.parts.reduce((a, p) => a + p.value, 0));
  const yMax = Math.max(1, ...totals);
  axes(svg, yMax, (v) => String(Math.round(v)));
  const width = (W - PAD.left - PAD.right) / Math.max(1, bars.length);
  const scale = (H - PAD.top - PAD.bottom) / yMax;
  bars.forEach((bar, i) => {
    let base = H - PAD.bottom;
    const group = s("g", {});
    for (const part of bar.parts) {
      const height = part.value * scale;
      base -= height;
      if (height > 0) {
        group.append(s("rect", { class: `bar ${part.cls || ""}`, x: PAD.left + i * width + 1,
          y: base, width: Math.max(1, width - 2), height }));
      }
    }
    group.append(s("title", {}, `${bar.label}: ${totals[i]}`));
    if (onSelect) {
      group.setAttribute("tabindex", "0");
      group.setAttribute("role", "button");
      group.setAttribute("aria-label", `${bar.label}: ${totals[i]}`);
      group.addEventListener("click", () => onSelect(bar));
      group.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") onSelect(bar); });
    }
    svg.append(group);
    if (i % labelEvery === 0) {
      svg.append(s("text", { x: PAD.left + i * width + width / 2, y: H - 10, "text-anchor": "middle" },
        bar.short || bar.label));
    }
  });
  return svg;
}
