// One memory: its content and metadata, state, FSRS retention curve, versions and the
// supersession chain, edges and history; edit it (with a diff to review before saving),
// promote, demote or delete it.

import { del, get, patch, post } from "../api.js";
import { timeChart } from "../charts.js";
import {
  clear, confirmAction, errorText, field, fmtDate, h, link, num, pct, section, table, toast,
} from "../ui.js";
import { jsdiff } from "../vendor.js";

const at = (id) => `/api/v1/memories/${encodeURIComponent(id)}`;
const memoryLink = (id, text) => link(`/dashboard/memory/${encodeURIComponent(id)}`, text || id);

async function fetchAll(id, signal) {
  const options = { signal };
  const [memory, history, curve, hood, versions, state] = await Promise.all([
    get(at(id), undefined, options),
    get(`${at(id)}/history`, undefined, options),
    get(`${at(id)}/retention`, undefined, options),
    get(`${at(id)}/neighbours`, { depth: 1 }, options),
    post("/memory", { action: "versions", id }, options),
    post("/memory", { action: "state", id }, options),
  ]);
  return { memory, history: history.entries, curve, hood, versions: versions.versions, state: state.state };
}

function metadataList(m, state) {
  const rows = [
    ["Type", m.node_type], ["Scope", m.scope], ["Agent", m.agent_id || "—"],
    ["Tags", m.tags.join(", ") || "—"], ["Domains", m.domains.join(", ") || "—"],
    ["Importance", num(m.importance)], ["Tier", m.tier],
    ["State", `${state.state} (retention ${pct(state.retention)})`],
    ["Stability", `${num(state.stability_days, 1)} days`],
    ["Reviews", `${state.reps} reps, ${state.lapses} lapses, used ${state.access_count} times`],
    ["Created", fmtDate(m.created_at)], ["Updated", fmtDate(m.updated_at)],
    ["Valid", `${m.valid_from ? fmtDate(m.valid_from) : "always"} → ${m.valid_until ? fmtDate(m.valid_until) : "now"}`],
    ["Source", m.source || "—"], ["Session", m.session_id || "—"], ["Category", m.category || "—"],
  ];
  const dl = h("dl", { class: "meta" });
  for (const [k, v] of rows) dl.append(h("dt", {}, k), h("dd", {}, v));
  if (m.superseded_by) dl.append(h("dt", {}, "Superseded by"), h("dd", {}, memoryLink(m.superseded_by)));
  if (Object.keys(m.metadata).length) {
    dl.append(h("dt", {}, "Metadata"), h("dd", {}, h("pre", { class: "json" }, JSON.stringify(m.metadata, null, 2))));
  }
  return dl;
}

function retentionChart(curve) {
  const series = [
    { points: curve.points.map((p) => ({ at: new Date(p.at), y: p.retention })), cls: "line" },
    { points: curve.points.map((p) => ({ at: new Date(p.at), y: p.score })), cls: "line2" },
  ];
  const marks = curve.reviews.map((r) => ({ at: new Date(r.at), label: `${r.operation} ${fmtDate(r.at)}` }));
  return h("div", {},
    timeChart({ title: "Retention over time",
      description: `FSRS retention from the last review, stability ${num(curve.stability_days, 1)} days; `
        + "solid: the forgetting curve, dashed: the retention score ranking uses.",
      series, marks, now: new Date(curve.now) }),
    h("p", { class: "hint" }, "Solid: FSRS retrievability since the last review. Dashed: the retention score "
      + "(curve, retrieval and storage strength). Dots: recorded reviews."));
}

function versionsList(memory, versions) {
  const items = versions.map((v, i) => h("li", {},
    i === 0 ? h("strong", {}, "this memory") : memoryLink(v.id, fmtDate(v.updated_at)),
    " — ", (v.summary || v.content).slice(0, 160)));
  return h("div", {},
    memory.superseded_by ? h("p", {}, "Replaced by a newer memory: ", memoryLink(memory.superseded_by)) : null,
    versions.length > 1 ? h("ol", {}, items) : h("p", { class: "muted" }, "No older versions."));
}

function edgesTable(hood) {
  if (!hood.neighbours.length) return h("p", { class: "muted" }, "No edges.");
  return table(["Type", "Weight", "Memory"], hood.neighbours.map((n) => h("tr", {},
    h("td", {}, n.edge_type), h("td", { class: "num" }, num(n.weight)),
    h("td", { class: "snippet" }, memoryLink(n.memory.id, (n.memory.summary || n.memory.content).slice(0, 160))))));
}

function historyTable(entries) {
  return table(["#", "When", "Change", "By"], entries.slice().reverse().map((e) => h("tr", {},
    h("td", { class: "num" }, e.seq), h("td", {}, fmtDate(e.at)), h("td", {}, e.operation,
      e.details?.reason ? ` (${e.details.reason})` : ""),
    h("td", { class: "small" }, [e.actor, e.agent_id].filter(Boolean).join(" · ") || "—"))));
}

export async function render(context) {
  const { main, params, signal } = context;
  const id = params[0];
  let data;
  try {
    data = await fetchAll(id, signal);
  } catch (error) {
    if (error.status === 404) {
      main.append(h("h1", {}, "Memory not found"),
        h("p", {}, "No memory has this id, or this key may not see it. ", link("/dashboard/memories", "Back to memories")));
      return null;
    }
    throw error;
  }
  const body = h("div");
  main.append(body);
  let editing = false;
  let stale = false;

  function show() {
    clear(body);
    const m = data.memory;
    const actions = h("div", { class: "toolbar" },
      h("button", { type: "button", onclick: () => edit(), disabled: !context.can("write") }, "Edit"),
      h("button", { type: "button", onclick: () => feedback("promote"), disabled: !context.can("write") }, "Promote"),
      h("button", { type: "button", onclick: () => feedback("demote"), disabled: !context.can("write") }, "Demote"),
      h("button", { type: "button", class: "danger", onclick: () => remove(), disabled: !context.can("write") }, "Delete…"));
    body.append(
      h("h1", {}, m.summary || `${m.node_type} memory`),
      h("p", { class: "muted small" }, `id ${m.id}`),
      actions,
      h("div", { class: "two" },
        h("div", {},
          section("Content", h("div", { class: "content", id: "memory-content" }, m.content)),
          section("Retention", retentionChart(data.curve)),
          section("Versions", versionsList(m, data.versions)),
          section("Edges", edgesTable(data.hood)),
          section("History", historyTable(data.history))),
        h("div", {}, section("Details", metadataList(m, data.state)))));
  }

  async function reload() {
    data = await fetchAll(id, signal);
    show();
  }

  async function feedback(action) {
    try {
      await post(`${at(id)}/${action}`, {});
      toast(action === "promote" ? "Promoted" : "Demoted");
      await reload();
    } catch (error) {
      toast(errorText(error), { bad: true });
    }
  }

  async function remove() {
    if (!(await confirmAction("Delete this memory?", "It leaves search and lists at once; its history keeps a tombstone."))) return;
    try {
      await del(at(id));
      toast("Deleted");
      context.navigate("/dashboard/memories");
    } catch (error) {
      toast(errorText(error), { bad: true });
    }
  }

  function edit() {
    editing = true;
    const m = data.memory;
    const inputs = {
      content: h("textarea", { name: "content", rows: 8, value: m.content }),
      summary: h("input", { name: "summary", value: m.summary || "" }),
      node_type: h("input", { name: "node_type", value: m.node_type }),
      tags: h("input", { name: "tags", value: m.tags.join(", ") }),
      importance: h("input", { name: "importance", type: "number", min: 0, max: 1, step: "any", value: m.importance }),
    };
    const form = h("form", { class: "panel", "aria-label": "Edit memory" },
      h("h2", {}, "Edit"),
      field("Content", inputs.content), field("Summary", inputs.summary),
      h("div", { class: "row" }, field("Type", inputs.node_type), field("Tags (comma-separated)", inputs.tags),
        field("Importance (0-1)", inputs.importance)),
      h("div", { class: "actions" },
        h("button", { type: "button", class: "quiet", onclick: () => { editing = false; show(); } }, "Cancel"),
        h("button", { type: "submit" }, "Review changes")));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      review(changesOf(m, inputs), form);
    });
    clear(body).append(h("h1", {}, "Edit memory"), form);
    inputs.content.focus();
  }

  async function review(changes, form) {
    const names = Object.keys(changes);
    if (!names.length) {
      toast("Nothing changed");
      return;
    }
    const Diff = await jsdiff();
    const m = data.memory;
    const parts = [];
    if ("content" in changes) {
      const pieces = Diff.diffWordsWithSpace(m.content, changes.content).map((p) =>
        (p.added ? h("ins", {}, p.value) : p.removed ? h("del", {}, p.value) : p.value));
      parts.push(h("h3", {}, "Content"), h("div", { class: "diff", id: "content-diff" }, pieces));
    }
    for (const name of names.filter((n) => n !== "content")) {
      const before = Array.isArray(m[name]) ? m[name].join(", ") : String(m[name] ?? "");
      const after = Array.isArray(changes[name]) ? changes[name].join(", ") : String(changes[name] ?? "");
      parts.push(h("p", {}, h("strong", {}, name), ": ", h("del", {}, before || "(empty)"), " → ", h("ins", {}, after || "(empty)")));
    }
    const panel = h("section", { class: "panel", "aria-label": "Review changes", id: "review" },
      h("h2", {}, "Review changes"), parts,
      h("div", { class: "actions" },
        h("button", { type: "button", class: "quiet", onclick: () => { panel.remove(); form.hidden = false; } }, "Back to editing"),
        h("button", { type: "button", onclick: () => save(changes) }, "Save")));
    form.hidden = true;
    body.append(panel);
    panel.querySelector("h2").setAttribute("tabindex", "-1");
    panel.querySelector("h2").focus();
  }

  async function save(changes) {
    try {
      await patch(at(id), changes);
      editing = false;
      toast("Saved");
      await reload();
    } catch (error) {
      toast(errorText(error), { bad: true });
    }
  }

  show();
  return {
    onChanges(feed) {
      if (!feed.changes.some((c) => c.memory_id === id)) return;
      if (editing) {
        if (!stale) body.prepend(h("p", { class: "notice", role: "status" }, "This memory changed elsewhere since you started editing."));
        stale = true;
        return;
      }
      reload().catch((error) => toast(errorText(error), { bad: true }));
    },
    onReconnected() {
      if (!editing) reload().catch(() => {});
    },
  };
}

function changesOf(m, inputs) {
  const out = {};
  const content = inputs.content.value;
  if (content !== m.content) out.content = content;
  const summary = inputs.summary.value.trim();
  if (summary !== (m.summary || "")) out.summary = summary || null;
  const type = inputs.node_type.value.trim();
  if (type && type !== m.node_type) out.node_type = type;
  const tags = inputs.tags.value.split(",").map((t) => t.trim()).filter(Boolean);
  if (tags.join("\u0000") !== m.tags.join("\u0000")) out.tags = tags;
  const importance = Number(inputs.importance.value);
  if (!Number.isNaN(importance) && Math.abs(importance - m.importance) > 1e-9) out.importance = importance;
  return out;
}
