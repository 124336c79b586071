// Domains: the topic clusters memory found (size, top terms), renamed here; and what
// re-clustering proposes (new domains, splits, merges, names) to accept or reject.

import { get, patch, post } from "../api.js";
import { ask, clear, debounce, errorText, field, fmtDate, h, link, table, toast } from "../ui.js";

export async function render(context) {
  const { main, signal } = context;
  const body = h("div");
  main.append(h("h1", {}, "Domains"), body);
  const admin = context.can("admin");

  async function load() {
    const list = await get("/api/v1/domains", undefined, { signal });
    let proposals = [];
    let proposalError = null;
    try {
      proposals = (await get("/api/v1/domains/proposals", { status: "proposed" }, { signal })).proposals;
    } catch (error) {
      if (error.name === "AbortError") throw error;
      proposalError = error;
    }
    clear(body).append(domainsTable(list), proposalsSection(proposals, proposalError, list));
  }

  function domainsTable(list) {
    if (!list.domains.length) {
      return h("section", { class: "panel" }, h("p", { class: "muted" },
        "No domains yet: memory clusters itself into domains once it holds enough memories."));
    }
    const rows = list.domains.map((d) => h("tr", {},
      h("td", {}, link(`/dashboard/memories?domain=${encodeURIComponent(d.name)}`, d.name)),
      h("td", { class: "num" }, d.member_count),
      h("td", { class: "small" }, d.top_terms.slice(0, 10).join(", ")),
      h("td", { class: "small" }, d.origin),
      h("td", {}, h("button", { type: "button", class: "quiet", disabled: !admin, onclick: () => rename(d) }, "Rename…"))));
    return h("section", { class: "panel", "aria-label": "Domains" }, h("h2", {}, `Domains (${list.domains.length})`),
      h("p", { class: "muted small" }, `Assignment threshold ${list.threshold ?? "—"}.`),
      table(["Name", "Memories", "Top terms", "Origin", ""], rows));
  }

  function proposalsSection(proposals, error, list) {
    const names = Object.fromEntries(list.domains.map((d) => [d.id, d.name]));
    const section = h("section", { class: "panel", "aria-label": "Proposals", id: "proposals" }, h("h2", {}, "Proposals"));
    if (error) {
      section.append(h("p", { class: "muted" }, error.status === 403 ? "This key cannot see proposals." : errorText(error)));
      return section;
    }
    if (!proposals.length) {
      section.append(h("p", { class: "muted" }, "Nothing proposed."));
      return section;
    }
    section.append(...proposals.map((p) => h("article", { class: "panel", dataset: { proposal: p.id } },
      h("h3", {}, h("span", { class: "badge" }, p.kind), " ", p.summary),
      h("p", { class: "small muted" }, `Proposed ${fmtDate(p.created_at)}`,
        p.domain_ids.length ? ` · concerns ${p.domain_ids.map((i) => names[i] || i).join(", ")}` : ""),
      evidence(p.evidence),
      h("div", { class: "toolbar" },
        h("button", { type: "button", disabled: !admin, onclick: () => decide(p, "accept") }, "Accept"),
        p.kind === "new" || p.kind === "rename"
          ? h("button", { type: "button", class: "quiet", disabled: !admin, onclick: () => acceptRenamed(p) }, "Accept with another name…") : null,
        h("button", { type: "button", class: "quiet", disabled: !admin, onclick: () => decide(p, "reject") }, "Reject")))));
    if (!admin) section.append(h("p", { class: "hint" }, "Deciding needs a key with the admin scope."));
    return section;
  }

  function evidence(data) {
    const terms = data?.cluster?.top_terms || data?.top_terms;
    const members = data?.cluster?.members ?? data?.members;
    const bits = [];
    if (members !== undefined) bits.push(`${members} memories`);
    if (terms) bits.push(`terms: ${terms.slice(0, 8).join(", ")}`);
    return bits.length ? h("p", { class: "small" }, bits.join(" · ")) : null;
  }

  async function decide(p, action) {
    try {
      const out = await post(`/api/v1/domains/proposals/${encodeURIComponent(p.id)}/${action}`, {});
      toast(action === "accept" ? `Accepted: ${out.action}` : "Rejected");
      await load();
      return out;
    } catch (error) {
      toast(errorText(error), { bad: true });
      return null;
    }
  }

  async function acceptRenamed(p) {
    const input = h("input", { name: "name", required: true, pattern: "[a-z0-9][a-z0-9_-]*" });
    if (!(await ask({ title: "Accept with another name", body: field("Name", input, "lower-case letters, digits, - and _"), ok: "Accept" }))) return;
    const before = new Set((await get("/api/v1/domains")).domains.map((d) => d.id));
    const out = await decide(p, "accept");
    if (!out || !input.value.trim()) return;
    const domain = p.kind === "rename" ? out.domains.find((d) => d.id === p.domain_ids[0])
      : out.domains.find((d) => !before.has(d.id));
    if (domain) await renameTo(domain, input.value.trim());
  }

  async function rename(d) {
    const input = h("input", { name: "name", value: d.name, required: true });
    if (!(await ask({ title: `Rename ${d.name}`, body: field("New name", input), ok: "Rename" }))) return;
    await renameTo(d, input.value.trim());
  }

  async function renameTo(d, name) {
    try {
      await patch(`/api/v1/domains/${encodeURIComponent(d.id)}`, { name });
      toast(`Renamed to ${name}`);
      await load();
    } catch (error) {
      toast(errorText(error), { bad: true });
    }
  }

  await load();
  const later = debounce(() => load().catch(() => {}), 1000);
  return { onReconnected: later };
}
