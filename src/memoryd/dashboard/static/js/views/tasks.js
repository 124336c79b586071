// Tasks and waits: each task's status, progress and running summary; each smart wait's
// status, what it watches, its deadline, what it saw and its wake history; intentions with
// their next trigger. A wait can be cancelled.

import { del, get, post } from "../api.js";
import { clear, confirmAction, debounce, errorText, fmtDate, h, table, toast } from "../ui.js";

const STATUSES = ["open", "active", "paused", "completed", "failed", "all"];

function statusBadge(status) {
  const kind = { active: "good", watching: "good", paused: "warn", completed: "",
    resolved: "good", failed: "bad", timeout: "bad", error: "bad", cancelled: "" }[status] ?? "";
  return h("span", { class: `badge ${kind}` }, status);
}

export async function render(context) {
  const { main, query, signal } = context;
  const status = STATUSES.includes(query.get("status")) ? query.get("status") : "open";
  const body = h("div");
  const chooser = h("select", { id: "task-status" }, STATUSES.map((s) => h("option", { value: s, selected: s === status }, s)));
  chooser.addEventListener("change", () => context.navigate(`/dashboard/tasks?status=${chooser.value}`));
  main.append(h("h1", {}, "Tasks and waits"),
    h("div", { class: "toolbar" }, h("label", { for: "task-status" }, "Tasks"), chooser), body);

  async function load() {
    const parts = await Promise.allSettled([
      get("/api/v1/tasks", { status }, { signal }),
      get("/api/v1/waits", { limit: 100 }, { signal }),
      post("/intention", { action: "list" }, { signal }),
    ]);
    clear(body).append(
      section("Tasks", parts[0], (out) => tasksTable(out.tasks)),
      section("Waits", parts[1], (out) => waitsTable(out.waits)),
      section("Intentions", parts[2], (out) => intentionsTable(out.intentions || [])));
  }

  function section(title, result, build) {
    const box = h("section", { class: "panel", "aria-label": title }, h("h2", {}, title));
    if (result.status === "rejected") {
      if (result.reason.name === "AbortError") throw result.reason;
      box.append(h("p", { class: "muted" }, errorText(result.reason)));
    } else {
      box.append(build(result.value));
    }
    return box;
  }

  function tasksTable(tasks) {
    if (!tasks.length) return h("p", { class: "muted" }, "No tasks.");
    return table(["Task", "Status", "Progress", "Summary", "Updated"], tasks.map((t) => {
      const summary = h("td", { class: "snippet small" }, h("button", { type: "button", class: "quiet",
        onclick: () => details(t, summary) }, "Show summary"));
      const done = t.plan.filter((s) => s.done).length;
      return h("tr", {}, h("td", {}, t.name), h("td", {}, statusBadge(t.status)),
        h("td", {}, t.plan.length ? `${done} of ${t.plan.length} steps` : "—"), summary, h("td", {}, fmtDate(t.updated_at)));
    }));
  }

  async function details(task, cell) {
    try {
      const report = await get(`/api/v1/tasks/${encodeURIComponent(task.id)}`);
      clear(cell).append(
        h("p", {}, report.progress, report.current_step ? ` — now: ${report.current_step}` : ""),
        report.summary ? h("p", {}, report.summary.content) : h("p", { class: "muted" }, "No summary yet."),
        report.blockers.length ? h("p", { class: "error" }, `Blocked: ${report.blockers[0].content}`) : null,
        report.decisions.length ? h("p", {}, `Decided: ${report.decisions[0].content}`) : null);
    } catch (error) {
      toast(errorText(error), { bad: true });
    }
  }

  function waitsTable(waits) {
    if (!waits.length) return h("p", { class: "muted" }, "No waits.");
    return table(["Watching", "Status", "Next", "Seen", "Wakes", ""], waits.map((w) => h("tr", { dataset: { wait: w.id } },
      h("td", { class: "snippet small" }, w.target, h("br"), h("span", { class: "muted" }, JSON.stringify(w.criteria))),
      h("td", {}, statusBadge(w.status), h("br"), h("span", { class: "small" }, w.message)),
      h("td", { class: "small" }, w.resolved_at ? `ended ${fmtDate(w.resolved_at)}` : `deadline ${fmtDate(w.deadline)}`,
        h("br"), `${w.checks} checks`),
      h("td", { class: "small snippet" }, w.result || w.last_seen || "—"),
      h("td", { class: "small" }, w.wake_attempts.length ? w.wake_attempts.map((a) =>
        h("div", {}, `${fmtDate(new Date(a.at * 1000))} → ${a.to}: ${a.ok ? "delivered" : `failed${a.error ? ` (${a.error})` : ""}`}`)) : "—"),
      h("td", {}, w.status === "watching"
        ? h("button", { type: "button", class: "danger", disabled: !context.can("write"), onclick: () => cancel(w) }, "Cancel…")
        : null))));
  }

  async function cancel(wait) {
    if (!(await confirmAction("Cancel this wait?", `It stops watching ${wait.target}; the agent is not woken.`, "Cancel wait"))) return;
    try {
      await del(`/api/v1/waits/${encodeURIComponent(wait.id)}`);
      toast("Wait cancelled");
      await load();
    } catch (error) {
      toast(errorText(error), { bad: true });
    }
  }

  function intentionsTable(items) {
    if (!items.length) return h("p", { class: "muted" }, "No intentions.");
    return table(["Intention", "Status", "Next trigger"], items.map((i) => h("tr", {},
      h("td", { class: "snippet" }, i.description), h("td", {}, statusBadge(i.status)),
      h("td", { class: "small" }, triggerText(i)))));
  }

  await load();
  const later = debounce(() => load().catch(() => {}), 1000);
  const timer = setInterval(later, 15000);  // waits change without memory changes
  return { onReconnected: later, dispose: () => clearInterval(timer) };
}

function triggerText(intention) {
  const t = intention.trigger || {};
  if (intention.snoozed_until) return `snoozed until ${fmtDate(intention.snoozed_until)}`;
  if (t.type === "time") return fmtDate(intention.due_at || t.at);
  if (t.type === "context") return `when working on ${[t.codebase, t.file_pattern, t.topic].filter(Boolean).join(", ")}`;
  return t.type ? `on ${t.type}${t.event ? ` ${t.event}` : ""}` : "—";
}
