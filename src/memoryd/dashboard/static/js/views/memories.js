// Memories: search (hybrid, keyword, vector) or list with the API's filters, paged; select
// rows to tag, promote, demote or delete them (after confirmation). The address holds the
// whole query, so back and forward restore it. New memories written elsewhere appear live.

import { del, get, patch, post } from "../api.js";
import {
  ask, clear, confirmAction, debounce, errorText, field, fmtDate, h, num, pct, table, toast,
} from "../ui.js";

const SIZES = [10, 25, 50, 100];

function filtersOf(query) {
  const split = (v) => (v ? v.split(",").map((x) => x.trim()).filter(Boolean) : undefined);
  const out = {
    timeframe: query.get("timeframe") || undefined,
    node_types: split(query.get("type")),
    tags: split(query.get("tags")),
    scope: query.get("scope") || undefined,
    agent_id: query.get("agent") || undefined,
    domains: split(query.get("domain")),
  };
  if (query.get("superseded") === "1") out.include_superseded = true;
  return out;
}

function pageOf(query) {
  const size = SIZES.includes(Number(query.get("size"))) ? Number(query.get("size")) : 25;
  return { size, page: Math.max(0, Number(query.get("page")) || 0) };
}

async function fetchRows(query, signal) {
  const filters = filtersOf(query);
  const { size, page } = pageOf(query);
  const q = (query.get("q") || "").trim();
  if (q) {
    const limit = Math.min(100, (page + 1) * size);
    const out = await post("/api/v1/search", {
      query: q, mode: query.get("mode") || "hybrid", limit, ...filters,
      min_score: query.get("min") ? Number(query.get("min")) : undefined,
    }, { signal });
    const rows = out.results.slice(page * size, (page + 1) * size);
    return { rows, search: true, more: out.results.length === limit && limit < 100,
      total: null, relevant: out.relevant };
  }
  const out = await get("/api/v1/memories", { ...filters, limit: size, offset: page * size }, { signal });
  return { rows: out.items, search: false, more: out.next_offset !== null, total: out.total };
}

function provenance(row) {
  const parts = [];
  if (row.keyword_rank) parts.push(`keyword #${row.keyword_rank}`);
  if (row.semantic_similarity !== null && row.semantic_similarity !== undefined) {
    parts.push(`semantic ${num(row.semantic_similarity)}`);
  }
  if (row.association) parts.push("linked");
  return parts.join(" · ") || "—";
}

function searchForm(context) {
  const { query } = context;
  const input = (name, value, props = {}) => h("input", { name, value: value || "", ...props });
  const q = input("q", query.get("q"), { type: "search", placeholder: "what to look for" });
  const mode = h("select", { name: "mode" }, ["hybrid", "keyword", "vector"].map((m) =>
    h("option", { value: m, selected: (query.get("mode") || "hybrid") === m }, m)));
  const timeframe = h("select", { name: "timeframe" }, ["", "1h", "24h", "7d", "30d", "90d"].map((t) =>
    h("option", { value: t, selected: (query.get("timeframe") || "") === t }, t || "any time")));
  const size = h("select", { name: "size" }, SIZES.map((n) =>
    h("option", { value: n, selected: pageOf(query).size === n }, `${n} per page`)));
  const superseded = h("input", { type: "checkbox", name: "superseded", value: "1",
    checked: query.get("superseded") === "1" });
  const form = h("form", { class: "panel", role: "search", "aria-label": "Search memories" },
    h("div", { class: "row" },
      h("div", { class: "grow" }, field("Search", q)), field("Mode", mode),
      field("Time", timeframe), field("Page size", size)),
    h("div", { class: "row" },
      field("Types", input("type", query.get("type"), { placeholder: "fact, decision" })),
      field("Tags", input("tags", query.get("tags"), { placeholder: "db, infra" })),
      field("Scope", input("scope", query.get("scope"), { placeholder: "user or project:x" })),
      field("Agent", input("agent", query.get("agent"))),
      field("Domain", input("domain", query.get("domain"))),
      h("label", { class: "small" }, superseded, " include superseded"),
      h("button", { type: "submit" }, "Search")));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const params = new URLSearchParams();
    for (const [name, value] of new FormData(form)) if (value) params.set(name, value);
    context.navigate(`/dashboard/memories?${params}`);
  });
  return form;
}

function pageUrl(query, page) {
  const params = new URLSearchParams(query);
  params.set("page", String(page));
  return `/dashboard/memories?${params}`;
}

export async function render(context) {
  const { main, query, signal } = context;
  const selected = new Set();
  const results = h("div", { "aria-live": "polite" });
  const notice = h("div");
  let fresh = new Set();
  main.append(h("h1", {}, "Memories"), searchForm(context), notice, results);

  async function load() {
    const data = await fetchRows(query, signal);
    clear(results);
    results.append(resultsTable(data), pager(data));
    fresh = new Set();
  }

  function resultsTable(data) {
    const all = h("input", { type: "checkbox", "aria-label": "Select all on this page" });
    const bar = bulkBar(context, selected, load);
    all.addEventListener("change", () => {
      for (const box of results.querySelectorAll("input[data-id]")) {
        box.checked = all.checked;
        if (all.checked) selected.add(box.dataset.id); else selected.delete(box.dataset.id);
      }
      bar.update();
    });
    const rows = data.rows.map((row) => {
      const box = h("input", { type: "checkbox", "aria-label": `Select memory ${row.id}`,
        dataset: { id: row.id }, checked: selected.has(row.id) });
      box.addEventListener("change", () => {
        if (box.checked) selected.add(row.id); else selected.delete(row.id);
        bar.update();
      });
      const text = row.summary || row.content;
      return h("tr", { class: fresh.has(row.id) ? "fresh" : "", dataset: { id: row.id } },
        h("td", {}, box),
        h("td", { class: "snippet" }, h("a", { href: `/dashboard/memory/${encodeURIComponent(row.id)}` },
          text.length > 240 ? `${text.slice(0, 239)}…` : text)),
        h("td", {}, h("span", { class: "badge" }, row.node_type)),
        data.search ? h("td", { class: "num" }, pct(row.score)) : h("td", {}, fmtDate(row.created_at)),
        data.search ? h("td", { class: "small" }, provenance(row)) : h("td", { class: "small" }, row.tier),
        h("td", { class: "small" }, row.tags.join(", ")),
        h("td", { class: "small wide-only" }, row.scope, row.agent_id ? ` · ${row.agent_id}` : ""));
    });
    const headers = [h("th", { scope: "col" }, all), "Memory", "Type",
      data.search ? "Score" : "Created", data.search ? "From" : "Tier", "Tags",
      h("th", { scope: "col", class: "wide-only" }, "Scope · agent")];
    const summary = data.search
      ? `${data.rows.length} results on this page (${data.relevant} likely relevant in all)`
      : `${data.total} memories`;
    return h("div", {}, bar.el, h("p", { class: "muted small", id: "result-summary" }, summary),
      data.rows.length ? table(headers, rows) : h("p", { class: "muted" }, "Nothing found."));
  }

  function pager(data) {
    const { page, size } = pageOf(query);
    const pages = data.total !== null ? Math.max(1, Math.ceil(data.total / size)) : null;
    return h("nav", { class: "pager", "aria-label": "Pages" },
      page > 0 ? h("a", { href: pageUrl(query, page - 1), class: "button", rel: "prev" }, "Previous") : null,
      h("span", { class: "muted" }, pages ? `Page ${page + 1} of ${pages}` : `Page ${page + 1}`),
      data.more ? h("a", { href: pageUrl(query, page + 1), class: "button", rel: "next" }, "Next") : null);
  }

  const refresh = debounce(() => load().catch((error) => {
    if (error.name !== "AbortError") toast(errorText(error), { bad: true });
  }), 250);

  await load();
  return {
    onChanges(feed) {
      const created = feed.changes.filter((c) => c.operation === "create" && c.memory);
      if (query.get("q") || pageOf(query).page > 0) {
        clear(notice).append(h("p", { class: "notice", role: "status" },
          `${feed.changes.length} changes since this page was loaded. `,
          h("a", { href: location.pathname + location.search }, "Refresh")));
        return;
      }
      for (const c of created) fresh.add(c.memory_id);
      refresh();
    },
    onReconnected: refresh,
  };
}

function bulkBar(context, selected, reload) {
  const count = h("span", { class: "muted" });
  const writable = context.can("write");
  const buttons = [
    h("button", { type: "button", onclick: () => tag() }, "Add tag…"),
    h("button", { type: "button", onclick: () => each("promote") }, "Promote"),
    h("button", { type: "button", onclick: () => each("demote") }, "Demote"),
    h("button", { type: "button", class: "danger", onclick: () => remove() }, "Delete…"),
  ];
  const el = h("div", { class: "toolbar", role: "toolbar", "aria-label": "Selected memories" },
    count, buttons, writable ? null : h("span", { class: "hint" }, "(this key cannot write)"));

  function update() {
    count.textContent = `${selected.size} selected`;
    for (const b of buttons) b.disabled = !selected.size || !writable;
  }

  async function run(label, fn) {
    const ids = [...selected];
    let failed = 0;
    for (const id of ids) {
      try {
        await fn(id);
      } catch (error) {
        failed += 1;
        toast(`${id}: ${errorText(error)}`, { bad: true });
      }
    }
    toast(`${label}: ${ids.length - failed} of ${ids.length} done`);
    selected.clear();
    await reload();
  }

  async function each(action) {
    await run(action === "promote" ? "Promoted" : "Demoted",
      (id) => post(`/api/v1/memories/${encodeURIComponent(id)}/${action}`, {}));
  }

  async function tag() {
    const input = h("input", { type: "text", name: "tag", required: true });
    if (!(await ask({ title: `Tag ${selected.size} memories`, body: field("Tag to add", input), ok: "Add tag" }))) return;
    const value = input.value.trim();
    if (!value) return;
    await run("Tagged", async (id) => {
      const memory = await get(`/api/v1/memories/${encodeURIComponent(id)}`);
      if (!memory.tags.includes(value)) {
        await patch(`/api/v1/memories/${encodeURIComponent(id)}`, { tags: [...memory.tags, value] });
      }
    });
  }

  async function remove() {
    const n = selected.size;
    const ok = await confirmAction(`Delete ${n} ${n === 1 ? "memory" : "memories"}?`,
      "They leave search and lists at once; their history keeps a tombstone.");
    if (ok) await run("Deleted", (id) => del(`/api/v1/memories/${encodeURIComponent(id)}`));
  }

  update();
  return { el, update };
}
