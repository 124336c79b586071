// Health: the store and model, counts by type, tier, state and scope, the retention
// distribution, growth, this server's operation latencies, consolidation reports and the
// audit ledger's verification.

import { get } from "../api.js";
import { barChart } from "../charts.js";
import { clear, debounce, errorText, fmtDate, h, num, section, table } from "../ui.js";

function counts(title, data) {
  const entries = Object.entries(data || {});
  return h("div", { class: "grow" }, h("h3", {}, title), entries.length
    ? table(["", "Memories"], entries.map(([k, v]) => h("tr", {}, h("td", {}, k), h("td", { class: "num" }, v))))
    : h("p", { class: "muted" }, "—"));
}

export async function render(context) {
  const { main, signal } = context;
  const body = h("div");
  main.append(h("h1", {}, "Health"), body);

  async function load() {
    const [overview, health] = await Promise.all([
      get("/api/v1/overview", undefined, { signal }),
      get("/health", undefined, { signal }).catch((error) => ({ status: "unhealthy", error })),
    ]);
    clear(body).append(
      section("Server", serverBox(health, overview)),
      section("Memories", h("div", { class: "row top" },
        counts("By type", overview.by_node_type), counts("By tier", overview.by_tier),
        counts("By state", overview.by_state), counts("By scope", overview.by_scope))),
      section("Retention", retention(overview)),
      section("Growth", growth(overview)),
      section("Latency", latency(overview.latencies)),
      section("Consolidation", consolidations(overview.consolidations)),
      section("Audit ledger", ledger()));
  }

  function ledger() {
    const out = h("div", { role: "status" });
    const button = h("button", { type: "button", disabled: !context.can("admin") }, "Verify the ledger");
    button.addEventListener("click", async () => {
      out.textContent = "Verifying…";
      try {
        const report = await get("/api/v1/ledger/verify");
        clear(out).append(report.ok
          ? h("p", { class: "ok", id: "ledger-result" }, `Intact: ${report.entries} entries, head #${report.head_seq} ${report.head_hash?.slice(0, 16)}…`)
          : h("p", { class: "error", id: "ledger-result" }, `Broken at entry #${report.broken?.seq}: ${report.broken?.reason}`));
      } catch (error) {
        out.textContent = errorText(error);
      }
    });
    return h("div", {}, h("p", { class: "hint" }, "Re-hashes the whole chain of changes (needs an admin key)."), button, out);
  }

  await load();
  const later = debounce(() => load().catch(() => {}), 2000);
  return { onChanges: later, onReconnected: later };
}

function serverBox(health, overview) {
  const rows = [
    ["Status", health.status === "ok" ? "ok" : `unhealthy${health.error ? `: ${errorText(health.error)}` : ""}`],
    ["Version", health.version || "—"],
    ["Store", health.store ? `${health.store.backend || ""} ${health.store.url || health.store.path || ""}` : "—"],
    ["Model", health.embedder ? `${health.embedder.model_id} (${health.embedder.loaded ? "loaded" : "loading"})` : "—"],
    ["Memories", `${overview.memories}${overview.sampled < overview.memories ? ` (distributions over the newest ${overview.sampled})` : ""}`],
    ["Graph nodes", overview.graph_nodes], ["Superseded", overview.superseded],
    ["Change sequence", overview.head_seq],
  ];
  return h("dl", { class: "meta" }, rows.map(([k, v]) => [h("dt", {}, k), h("dd", {}, String(v))]));
}

function retention(overview) {
  const bars = overview.retention_histogram.map((value, i) => ({ label: `${i * 10}–${i * 10 + 10}%`,
    short: `${i * 10}%`, parts: [{ value }] }));
  return barChart({ title: "Retention distribution", description: "Memories per tenth of retention score.", bars });
}

function growth(overview) {
  const bars = overview.growth.map((d) => ({ label: d.day, short: d.day.slice(5), parts: [{ value: d.count }] }));
  return barChart({ title: "Memories created per day", description: "Memories created per day over the last 30 days.",
    bars, labelEvery: 5 });
}

function latency(items) {
  if (!items.length) return h("p", { class: "muted" }, "No operations served yet.");
  return h("div", {}, h("p", { class: "hint" }, "Operations served by this server process since it started (the newest 2,048 of each)."),
    table(["Operation", "Calls", "p50 ms", "p95 ms", "p99 ms", "max ms"], items.map((s) => h("tr", { dataset: { op: s.operation } },
      h("td", {}, s.operation), h("td", { class: "num" }, s.count), h("td", { class: "num" }, num(s.p50_ms, 1)),
      h("td", { class: "num" }, num(s.p95_ms, 1)), h("td", { class: "num" }, num(s.p99_ms, 1)),
      h("td", { class: "num" }, num(s.max_ms, 1))))));
}

function consolidations(reports) {
  if (!reports.length) return h("p", { class: "muted" }, "No consolidation reports (or this key is bound to a scope, agent or domains).");
  return table(["Finished", "Examined", "Tier changes", "Merged", "New edges"], reports.map((r) => h("tr", {},
    h("td", {}, fmtDate(r.finished_at || r.at)), h("td", { class: "num" }, r.examined),
    h("td", { class: "small" }, Object.entries(r.tier_changes || {}).map(([k, v]) => `${k}: ${v}`).join(", ") || "—"),
    h("td", { class: "num" }, (r.merged || []).length), h("td", { class: "num" }, r.new_edges))));
}
