// Timeline: what was learned, corrected, strengthened, weakened and forgotten per day (the
// journal, from the store's history), and one day's changes.

import { get } from "../api.js";
import { barChart } from "../charts.js";
import { clear, debounce, fmtDate, h, link, table } from "../ui.js";

const KINDS = ["learned", "corrected", "strengthened", "weakened", "forgotten", "graph", "other"];
const RANGES = [7, 30, 90, 365];

export async function render(context) {
  const { main, query, signal } = context;
  const tz = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  const days = RANGES.includes(Number(query.get("days"))) ? Number(query.get("days")) : 30;
  const day = query.get("day") || undefined;
  const range = h("select", { name: "days" }, RANGES.map((n) => h("option", { value: n, selected: n === days }, `last ${n} days`)));
  range.addEventListener("change", () => context.navigate(`/dashboard/timeline?days=${range.value}`));
  const body = h("div");
  main.append(h("h1", {}, "Timeline"),
    h("div", { class: "toolbar" }, h("label", { for: "timeline-range" }, "Show"), Object.assign(range, { id: "timeline-range" }),
      h("span", { class: "muted small" }, `days in ${tz}`)),
    body);

  async function load() {
    const out = await get("/api/v1/timeline", { days, tz, day, limit: 300 }, { signal });
    clear(body);
    const ordered = out.days.slice().reverse();
    const chart = barChart({
      title: "Changes per day", description: `Changes per day over the last ${days} days, by kind.`,
      bars: ordered.map((d) => ({ label: d.day, short: d.day.slice(5), day: d.day,
        parts: KINDS.map((k) => ({ value: d[k], cls: `k-${k}` })) })),
      labelEvery: Math.ceil(ordered.length / 10),
      onSelect: (bar) => context.navigate(`/dashboard/timeline?days=${days}&day=${bar.day}`),
    });
    const legend = h("div", { class: "legend" }, KINDS.map((k) => h("span", {}, h("span", { class: `swatch k-${k}` }), k)));
    const rows = out.days.filter((d) => KINDS.some((k) => d[k])).map((d) => h("tr", { class: d.day === day ? "fresh" : "" },
      h("td", {}, link(`/dashboard/timeline?days=${days}&day=${d.day}`, d.day)),
      KINDS.map((k) => h("td", { class: "num" }, d[k] || ""))));
    body.append(h("section", { class: "panel", "aria-label": "Changes per day" }, chart, legend),
      h("section", { class: "panel", "aria-label": "Days" }, h("h2", {}, "Days with changes"),
        rows.length ? table(["Day", ...KINDS], rows) : h("p", { class: "muted" }, "Nothing happened in this period.")));
    if (out.day) body.append(dayEntries(out));
    if (out.truncated) body.prepend(h("p", { class: "notice" }, "More changes than were read: counts are partial."));
  }

  await load();
  const later = debounce(() => load().catch(() => {}), 800);
  return { onChanges: later, onReconnected: later };
}

function dayEntries(out) {
  const rows = out.entries.map((e) => h("tr", {},
    h("td", {}, fmtDate(e.at)), h("td", {}, h("span", { class: "badge" }, e.kind), " ", e.operation),
    h("td", { class: "snippet" }, e.exists ? link(`/dashboard/memory/${encodeURIComponent(e.memory_id)}`, e.snippet || e.memory_id)
      : (e.snippet || e.memory_id)),
    h("td", { class: "small" }, e.actor || "—")));
  return h("section", { class: "panel", "aria-label": `Changes on ${out.day}` },
    h("h2", { id: "day-title" }, `Changes on ${out.day}`),
    rows.length ? table(["When", "Change", "Memory", "By"], rows) : h("p", { class: "muted" }, "No changes that day."));
}
