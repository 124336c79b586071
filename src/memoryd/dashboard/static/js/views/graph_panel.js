// The side panel of the graph: the selected node (open, edit in place, archive or recall,
// focus on its neighbourhood, expand it, link it to another node from the keyboard) and a
// list of the visible nodes, so that everything on the canvas is reachable without a mouse.

import { get, patch, post } from "../api.js";
import { ask, clear, errorText, field, fmtDate, h, num, pct, toast } from "../ui.js";

const KG_EDGES = ["relates_to", "depends_on", "part_of", "supersedes", "contradicts", "caused_by",
  "implements", "uses", "derived_from"];
const MEMORY_EDGES = ["related", "derived_from", "supersedes", "caused_by", "part_of", "mentions",
  "follows", "similar", "relates_to", "depends_on", "contradicts", "implements", "uses"];
const KINDS = ["insight", "decision", "convention", "pattern", "gotcha", "preference", "fact",
  "person", "component", "command"];
const LIST_MAX = 300;

const select = (name, options, value) => h("select", { name }, options.map((o) =>
  h("option", { value: o, selected: o === value }, o)));

export async function linkNodes(context, view, sourceId, targetId, done) {
  const data = view.data;
  const byId = (id) => data.nodes.find((n) => n.id === id);
  const [a, b] = [byId(sourceId), byId(targetId)];
  if (!a || !b) return;
  const type = select("type", data.kind === "kg" ? KG_EDGES : MEMORY_EDGES, data.kind === "kg" ? "relates_to" : "related");
  const weight = h("input", { type: "number", name: "weight", min: 0, max: 1, step: "any", value: 0.5 });
  const body = h("div", {}, h("p", {}, `From “${a.label}” to “${b.label}”.`),
    h("div", { class: "row" }, field("Edge type", type), field("Weight", weight)));
  if (!(await ask({ title: "Link two nodes", body, ok: "Link" }))) return;
  try {
    if (data.kind === "kg") {
      await post("/api/v1/graph/link", { ...data.target, source: a.id, target: b.id,
        type: type.value, weight: Number(weight.value) });
    } else {
      await post(`/api/v1/memories/${encodeURIComponent(a.id)}/links`, { target: b.id,
        type: type.value, weight: Number(weight.value) });
    }
    toast(`Linked: ${type.value}`);
    await done();
  } catch (error) {
    toast(errorText(error), { bad: true });
  }
}

export function sidePanel(context, view, side, canvas, { reload, restyle }) {
  const details = h("section", { class: "panel", "aria-label": "Selected node", id: "node-panel" },
    h("p", { class: "muted" }, "Select a node: click it, or pick it from the list below."));
  const listBox = h("ul", { class: "node-list", "aria-label": "Visible nodes" });
  side.append(details, h("section", { class: "panel" }, h("h2", {}, "Nodes"), listBox));
  let selected = null;

  function node() {
    return view.data?.nodes.find((n) => n.id === selected) || null;
  }

  function selectNode(id) {
    selected = id;
    canvas.select(id);
    show();
    list();
  }

  function show() {
    const n = node();
    clear(details);
    if (!n) {
      details.append(h("p", { class: "muted" }, selected ? "That node is not in this view." : "Select a node."));
      return;
    }
    const kg = view.data.kind === "kg";
    const raw = n.raw;
    const rows = kg
      ? [["Type", raw.type], ["State", raw.archived ? "archived (a memory trace)" : "active"],
        ["Score", num(raw.score)], ["Used", `${raw.use_count} times`], ["Touches", raw.touches.join(", ") || "—"],
        ["Tags", raw.tags.join(", ") || "—"], ["Created", fmtDate(raw.created)], ["Updated", fmtDate(raw.updated)]]
      : [["Type", raw.node_type], ["Scope", raw.scope], ["Agent", raw.agent_id || "—"],
        ["Importance", num(raw.importance)], ["Retention", pct(raw.retention)], ["Tier", raw.tier],
        ["State", raw.superseded ? "superseded" : "current"], ["Created", fmtDate(raw.created_at)]];
    const dl = h("dl", { class: "meta" }, rows.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
    const writable = context.can("write");
    const buttons = h("div", { class: "toolbar" },
      h("a", { class: "button", href: `/dashboard/memory/${encodeURIComponent(n.memoryId)}` }, "Open"),
      h("button", { type: "button", disabled: !writable, onclick: () => edit(n) }, "Edit"),
      kg ? h("button", { type: "button", disabled: !writable, onclick: () => archive(n, !raw.archived) },
        raw.archived ? "Recall" : "Archive") : null,
      h("button", { type: "button", "aria-pressed": String(view.focus === n.id), onclick: () => focus(n) },
        view.focus === n.id ? "Show all" : "Focus neighbourhood"),
      kg ? null : h("button", { type: "button", onclick: () => expand(n) }, "Expand"),
      h("button", { type: "button", disabled: !writable, onclick: () => linkFrom(n) }, "Link to…"));
    details.append(h("h2", { id: "node-title" }, n.label), kg && raw.body ? h("p", {}, raw.body) : null, dl, buttons);
  }

  async function edit(n) {
    const kg = view.data.kind === "kg";
    const raw = n.raw;
    const inputs = kg
      ? { name: h("input", { name: "name", value: raw.name }), type: select("type", KINDS, raw.type),
        body: h("textarea", { name: "body", rows: 4, value: raw.body }),
        tags: h("input", { name: "tags", value: raw.tags.join(", ") }) }
      : { content: h("textarea", { name: "content", rows: 5, value: raw.label }),
        tags: h("input", { name: "tags", value: "" }) };
    if (!kg) {
      const memory = await get(`/api/v1/memories/${encodeURIComponent(n.id)}`);
      inputs.content.value = memory.content;
      inputs.tags.value = memory.tags.join(", ");
    }
    const form = h("form", { class: "panel", "aria-label": "Edit node" }, h("h2", {}, "Edit in place"),
      Object.entries(inputs).map(([k, input]) => field(k[0].toUpperCase() + k.slice(1), input)),
      h("div", { class: "actions" }, h("button", { type: "button", class: "quiet", onclick: () => show() }, "Cancel"),
        h("button", { type: "submit" }, "Save")));
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const tags = inputs.tags.value.split(",").map((t) => t.trim()).filter(Boolean);
      try {
        if (kg) {
          await post("/api/v1/graph/write", { ...view.data.target, nodes: [{ id: raw.id,
            name: inputs.name.value, type: inputs.type.value, body: inputs.body.value, tags }] });
        } else {
          await patch(`/api/v1/memories/${encodeURIComponent(n.id)}`, { content: inputs.content.value, tags });
        }
        toast("Saved");
        await reload();
      } catch (error) {
        toast(errorText(error), { bad: true });
      }
    });
    clear(details).append(form);
    form.querySelector("input, textarea").focus();
  }

  async function archive(n, archiving) {
    try {
      await post(`/api/v1/graph/nodes/${encodeURIComponent(n.id)}/${archiving ? "archive" : "recall"}`, view.data.target);
      toast(archiving ? "Archived" : "Recalled");
      await reload();
    } catch (error) {
      toast(errorText(error), { bad: true });
    }
  }

  function focus(n) {
    view.focus = view.focus === n.id ? null : n.id;
    restyle();
    show();
  }

  async function expand(n) {
    try {
      const hood = await get(`/api/v1/memories/${encodeURIComponent(n.id)}/neighbours`, { depth: 2 });
      for (const item of hood.neighbours) {
        const m = item.memory;
        view.extra.nodes.set(m.id, { id: m.id, label: (m.summary || m.content).slice(0, 120), type: m.node_type,
          domain: m.domains[0] || "(none)", scope: m.scope, importance: m.importance, retention: 0.5,
          trace: Boolean(m.superseded_by), memoryId: m.id,
          raw: { ...m, label: m.content, retention: null, superseded: Boolean(m.superseded_by) } });
        view.extra.edges.push({ source: item.via, target: m.id, type: item.edge_type, weight: item.weight });
      }
      toast(`${hood.neighbours.length} neighbours added`);
      await reload();
    } catch (error) {
      toast(errorText(error), { bad: true });
    }
  }

  async function linkFrom(n) {
    const others = view.data.nodes.filter((o) => o.id !== n.id && !o.hidden).slice(0, 500);
    const target = h("select", { name: "target" }, others.map((o) => h("option", { value: o.id }, o.label.slice(0, 80))));
    if (!(await ask({ title: `Link “${n.label}” to…`, body: field("Node", target), ok: "Next" }))) return;
    await linkNodes(context, view, n.id, target.value, reload);
  }

  function list() {
    const nodes = (view.data?.nodes || []).filter((n) => !n.hidden)
      .sort((a, b) => a.label.localeCompare(b.label)).slice(0, LIST_MAX);
    clear(listBox).append(...nodes.map((n) => h("li", {},
      h("button", { type: "button", "aria-pressed": String(n.id === selected), dataset: { node: n.id },
        onclick: () => { selectNode(n.id); canvas.focusOn(n.id); } },
      n.trace ? `${n.label} (${view.data.kind === "kg" ? "archived" : "superseded"})` : n.label))));
  }

  return { select: selectNode, refresh: show, list };
}
