// Graph: memories (with their typed edges) or one knowledge graph (the user graph, a project
// graph), coloured by type, domain or scope and sized by importance or retention. Click a node
// to inspect, edit, archive or recall it; drag it onto another to link them; slide "as of"
// to see the graph as it was. Filtering, focus on a neighbourhood and expansion beyond the
// loaded memories keep large graphs workable.

import { get } from "../api.js";
import { clear, debounce, errorText, field, fmtDate, h } from "../ui.js";
import { colourOf, createCanvas } from "./graph_canvas.js";
import { linkNodes, sidePanel } from "./graph_panel.js";

const LIMITS = [200, 500, 2000, 5000];

function sourceOf(query) {
  return query.get("src") || "memories";
}

async function fetchGraph(query, graphs, view, signal) {
  const extra = view.extra;
  const src = sourceOf(query);
  const asOf = query.get("asof") || undefined;
  if (src === "memories") {
    const limit = LIMITS.includes(Number(query.get("limit"))) ? Number(query.get("limit")) : 500;
    const out = await get("/api/v1/graph/memories", { limit, as_of: asOf }, { signal });
    const nodes = new Map(out.nodes.map((n) => [n.id, memoryNode(n)]));
    for (const n of extra.nodes.values()) if (!nodes.has(n.id)) nodes.set(n.id, n);
    const edges = [...out.edges, ...extra.edges];
    return { kind: "memories", nodes: [...nodes.values()], edges, total: out.total, first: null, at: out.at };
  }
  const info = graphs.find((g) => g.scope === src);
  const query_ = src === "user" ? { graph: "user" } : { project: info?.root || src.replace(/^project:/, ""), graph: "project" };
  const [out, moments] = await Promise.all([
    get("/api/v1/graph/view", { ...query_, as_of: asOf }, { signal }),
    changeMoments(query_, src, view, signal),
  ]);
  return {
    kind: "kg", scope: out.scope, target: query_, file: out.file, first: out.first, at: out.at,
    nodes: out.nodes.map(kgNode), edges: out.edges, total: out.nodes.length, problems: out.problems,
    moments,
  };
}

// The moments this graph changed (from kg_sync), oldest first: the stops of the "as of"
// slider, so that each step back undoes one change. Kept between reloads and continued from
// where the last read stopped.
async function changeMoments(target, scope, view, signal) {
  if (view.moments?.scope !== scope) view.moments = { scope, since: 0, list: [] };
  const moments = view.moments.list;
  let since = view.moments.since;
  for (let page = 0; page < 10; page += 1) {
    const out = await get("/api/v1/graph/changes", { project: target.project, since, limit: 1000 }, { signal });
    for (const c of out.changes) {
      if (c.scope !== scope) continue;
      const last = moments[moments.length - 1];
      const at = new Date(c.at).getTime();
      if (last && last.at === at) last.what.push(`${c.operation} ${c.id}`);
      else moments.push({ at, what: [`${c.operation} ${c.id}`] });
    }
    since = out.next;
    if (!out.more) break;
  }
  view.moments.since = since;
  return moments;
}

function memoryNode(n) {
  return { id: n.id, label: n.label, type: n.node_type, domain: n.domains[0] || "(none)", scope: n.scope,
    importance: n.importance, retention: n.retention, trace: n.superseded, raw: n, memoryId: n.id };
}

function kgNode(n) {
  return { id: n.id, label: n.name, type: n.type, domain: (n.tags[0] || "(none)"), scope: "",
    importance: n.score, retention: Math.min(1, Math.log1p(n.use_count) / Math.log(11)),
    trace: n.archived, raw: n, memoryId: n.memory_id };
}

function urlWith(query, changes) {
  const params = new URLSearchParams(query);
  for (const [k, v] of Object.entries(changes)) {
    if (v === null || v === undefined || v === "") params.delete(k); else params.set(k, v);
  }
  return `/dashboard/graph?${params}`;
}

export async function render(context) {
  const { main, query, signal } = context;
  let graphs = [];
  try {
    graphs = (await get("/api/v1/graph/list", undefined, { signal })).graphs;
  } catch (error) {
    if (error.status !== 403) throw error;
  }
  const view = { data: null, colour: query.get("color") || "type", size: query.get("size") || "importance",
    filter: "", type: "", focus: query.get("focus") || null, hops: 2, extra: { nodes: new Map(), edges: [] },
    positions: new Map() };
  const box = h("div", { class: "graph-box", id: "graph-box", role: "application",
    "aria-label": "Graph canvas: click a node to select it, drag a node onto another to link them" });
  const legend = h("div", { class: "legend", "aria-label": "Colours" });
  const status = h("p", { class: "muted small", role: "status", id: "graph-status" });
  const side = h("div", { class: "graph-side" });
  const slider = asOfControl(query, (asof) => {
    if (asof) query.set("asof", asof); else query.delete("asof");
    history.replaceState({}, "", `/dashboard/graph?${query}`);
    reload();
  });
  main.append(h("h1", {}, "Graph"), controls(context, query, graphs, view, () => restyle()), slider.el,
    h("div", { class: "graph-layout" }, h("div", {}, box, legend, status), side));

  const isVisible = (n) => !n.hidden;
  const canvas = await createCanvas(box, {
    onSelect: (id) => panel.select(id),
    onLink: (a, b) => linkNodes(context, view, a, b, () => reload()),
    isVisible,
  });
  const panel = sidePanel(context, view, side, canvas, { reload: () => reload(), restyle: () => restyle() });

  function restyle() {
    const data = view.data;
    if (!data) return;
    const key = view.colour === "domain" ? "domain" : view.colour === "scope" ? "scope" : "type";
    const keys = [...new Set(data.nodes.map((n) => n[key]))].sort();
    const near = view.focus ? neighbourhood(view.focus, data.edges, view.hops) : null;
    const text = view.filter.toLowerCase();
    let shown = 0;
    for (const n of data.nodes) {
      n.colour = colourOf(n[key], keys);
      const value = view.size === "retention" ? n.retention : n.importance;
      n.r = 3 + 7 * Math.max(0, Math.min(1, value ?? 0.5));
      n.hidden = (view.type && n.type !== view.type) || (near && !near.has(n.id));
      n.dim = Boolean(text) && !n.label.toLowerCase().includes(text);
      if (!n.hidden) shown += 1;
    }
    clear(legend).append(...keys.slice(0, 14).map((k) => h("span", {},
      h("span", { class: "swatch", dataset: { colour: colourOf(k, keys) } }), k)));
    for (const swatch of legend.querySelectorAll(".swatch")) swatch.style.background = swatch.dataset.colour;
    status.textContent = `${shown} of ${data.nodes.length} nodes shown, ${data.edges.length} edges`
      + (data.kind === "memories" ? ` (${data.total} memories match; the newest are loaded)` : "")
      + (query.get("asof") ? ` — as of ${fmtDate(query.get("asof"))}` : "");
    canvas.refreshStyle();
    panel.list();
  }

  async function reload() {
    let data;
    try {
      data = await fetchGraph(query, graphs, view, signal);
    } catch (error) {
      if (error.name === "AbortError") return;
      status.textContent = errorText(error);
      return;
    }
    for (const n of view.data?.nodes || []) {
      if (Number.isFinite(n.x)) view.positions.set(n.id, { x: n.x, y: n.y, fx: n.fx, fy: n.fy });
    }
    for (const n of data.nodes) Object.assign(n, view.positions.get(n.id) || {});
    const byId = new Map(data.nodes.map((n) => [n.id, n]));
    data.edges = data.edges.filter((e) => byId.has(e.source) && byId.has(e.target));
    for (const e of data.edges) e.trace = Boolean(byId.get(e.source).trace || byId.get(e.target).trace);
    view.data = data;
    slider.update(data);
    restyle();
    canvas.setData({ nodes: data.nodes, links: data.edges.map((e) => ({ ...e })) });
    panel.refresh();
    window.memorydGraph = { source: sourceOf(query), screen: (id) => canvas.screen(id),
      nodes: () => data.nodes.filter((n) => !n.hidden).map((n) => ({ id: n.id, label: n.label, trace: n.trace })),
      edges: () => data.edges.map((e) => ({ source: e.source, target: e.target, type: e.type })),
      frames: () => canvas.state.frames.slice(), fg: canvas.fg };
    document.body.dataset.graphLoaded = String(Date.now());
  }

  view.reload = reload;
  view.restyle = restyle;
  await reload();
  const later = debounce(() => reload(), 400);
  return {
    onChanges(feed) {
      if (query.get("asof")) return;  // looking at the past: the present may move on
      const kg = view.data?.kind === "kg";
      if (feed.changes.some((c) => !kg || c.operation.startsWith("kg_") || c.memory?.graph_node)) later();
    },
    onReconnected: () => later(),
    dispose() {
      canvas.dispose();
      delete window.memorydGraph;
      delete document.body.dataset.graphLoaded;
    },
  };
}

function neighbourhood(start, edges, hops) {
  const seen = new Set([start]);
  let frontier = [start];
  for (let i = 0; i < hops; i += 1) {
    const next = [];
    for (const e of edges) {
      const s = typeof e.source === "object" ? e.source.id : e.source;
      const t = typeof e.target === "object" ? e.target.id : e.target;
      if (frontier.includes(s) && !seen.has(t)) { seen.add(t); next.push(t); }
      if (frontier.includes(t) && !seen.has(s)) { seen.add(s); next.push(s); }
    }
    frontier = next;
  }
  return seen;
}

function controls(context, query, graphs, view, restyle) {
  const source = h("select", { name: "src" },
    h("option", { value: "memories", selected: sourceOf(query) === "memories" }, "Memories"),
    graphs.map((g) => h("option", { value: g.scope, selected: sourceOf(query) === g.scope },
      `${g.scope === "user" ? "User graph" : g.scope} (${g.nodes})`)));
  source.addEventListener("change", () => context.navigate(urlWith(query, { src: source.value, asof: null, focus: null })));
  const colour = h("select", { name: "color" }, ["type", "domain", "scope"].map((c) =>
    h("option", { value: c, selected: view.colour === c }, c === "domain" ? "domain / first tag" : c)));
  colour.addEventListener("change", () => { view.colour = colour.value; restyle(); });
  const size = h("select", { name: "size" }, [["importance", "importance / score"], ["retention", "retention / use"]]
    .map(([v, t]) => h("option", { value: v, selected: view.size === v }, t)));
  size.addEventListener("change", () => { view.size = size.value; restyle(); });
  const filter = h("input", { type: "search", name: "filter", placeholder: "highlight by text" });
  filter.addEventListener("input", debounce(() => { view.filter = filter.value; restyle(); }, 150));
  const type = h("input", { type: "text", name: "type", placeholder: "e.g. decision" });
  type.addEventListener("change", () => { view.type = type.value.trim(); restyle(); });
  const limit = h("select", { name: "limit", disabled: sourceOf(query) !== "memories" }, LIMITS.map((n) =>
    h("option", { value: n, selected: (Number(query.get("limit")) || 500) === n }, `${n} newest`)));
  limit.addEventListener("change", () => context.navigate(urlWith(query, { limit: limit.value })));
  return h("div", { class: "panel row" }, field("Show", source), field("Colour by", colour),
    field("Size by", size), field("Only type", type), field("Highlight", filter), field("Memories", limit));
}

const STEPS = 1000;

// "As of": for a knowledge graph each stop is one moment it changed (the last stop is now);
// for memories the slider runs through time from the oldest loaded memory to now.
function asOfControl(query, onChange) {
  const range = h("input", { type: "range", id: "asof", name: "asof", min: 0, max: STEPS, step: 1,
    value: STEPS, "aria-describedby": "asof-value" });
  const output = h("output", { id: "asof-value", for: "asof" }, "now");
  const now = h("button", { type: "button", class: "quiet" }, "Now");
  const el = h("div", { class: "panel asof" }, h("label", { for: "asof" }, "As of"), range, output, now);
  let moments = null;
  let bounds = { start: 0, end: 1 };
  const last = () => Number(range.max);
  // A moment just after the change at that stop: time travel shows what was recorded before it.
  const timeAt = (position) => (moments ? moments[position].at + 1 : bounds.start + ((bounds.end - bounds.start) * position) / STEPS);
  const label = () => {
    const position = Number(range.value);
    if (position >= last()) output.textContent = "now";
    else if (moments) output.textContent = `${fmtDate(new Date(moments[position].at))} — after ${moments[position].what.slice(0, 2).join(", ")}`;
    else output.textContent = fmtDate(new Date(timeAt(position)));
  };
  range.addEventListener("input", label);
  range.addEventListener("change", () => {
    const position = Number(range.value);
    onChange(position >= last() ? null : new Date(timeAt(position)).toISOString());
  });
  now.addEventListener("click", () => onChange(null));
  return {
    el,
    update(data) {
      const asof = query.get("asof") ? new Date(query.get("asof")).getTime() : null;
      if (data.moments) {
        moments = data.moments;
        range.max = String(moments.length);
        let position = moments.length;
        if (asof !== null) position = Math.max(0, moments.findLastIndex((m) => m.at + 1 <= asof));
        range.value = String(position);
      } else {
        moments = null;
        range.max = String(STEPS);
        const first = data.nodes.map((n) => new Date(n.raw.created_at).getTime()).reduce((a, b) => Math.min(a, b), Infinity);
        const end = Date.now();
        // A second after the first creation: any earlier moment would show nothing at all.
        const start = Number.isFinite(first) ? Math.floor(first / 1000) * 1000 + 1000 : end - 86400000;
        bounds = { start: Math.min(start, end - 1000), end };
        const position = asof !== null ? ((asof - bounds.start) / (bounds.end - bounds.start)) * STEPS : STEPS;
        range.value = String(Math.max(0, Math.min(STEPS, Math.round(position))));
      }
      label();
    },
  };
}
