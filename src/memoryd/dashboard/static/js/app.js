// The dashboard: a login, then one view per address (/dashboard/<view>), with the browser's
// history driving navigation (back and forward work), and live changes passed to the view
// on screen.

import { clearKey, get, getKey, setKey, whenUnauthorized } from "./api.js";
import { Live } from "./live.js";
import { clear, errorText, field, h, toast } from "./ui.js";
import * as memories from "./views/memories.js";
import * as memory from "./views/memory.js";
import * as graph from "./views/graph.js";
import * as timeline from "./views/timeline.js";
import * as domains from "./views/domains.js";
import * as tasks from "./views/tasks.js";
import * as health from "./views/health.js";

const ROUTES = [
  [/^\/dashboard\/?$/, memories, "memories"],
  [/^\/dashboard\/memories\/?$/, memories, "memories"],
  [/^\/dashboard\/memory\/([^/]+)\/?$/, memory, "memories"],
  [/^\/dashboard\/graph\/?$/, graph, "graph"],
  [/^\/dashboard\/timeline\/?$/, timeline, "timeline"],
  [/^\/dashboard\/domains\/?$/, domains, "domains"],
  [/^\/dashboard\/tasks\/?$/, tasks, "tasks"],
  [/^\/dashboard\/health\/?$/, health, "health"],
];

const main = document.getElementById("main");
const state = { who: null, view: null, controller: null, live: null, rendered: null };

export function navigate(url, { replace = false } = {}) {
  const target = new URL(url, location.href);
  if (target.href === location.href && !replace) return render();
  history[replace ? "replaceState" : "pushState"]({}, "", target.pathname + target.search);
  return render();
}

function can(scope) {
  const order = { read: 0, write: 1, admin: 2 };
  return (state.who?.scopes || []).some((s) => order[s] >= order[scope]);
}

async function render() {
  state.rendered = location.pathname + location.search;
  if (state.view?.dispose) state.view.dispose();
  state.controller?.abort();
  state.view = null;
  if (!getKey() || !state.who) return showLogin();
  const match = ROUTES.map(([re, mod, nav]) => [location.pathname.match(re), mod, nav])
    .find(([m]) => m);
  clear(main);
  markNav(match ? match[2] : null);
  if (!match) {
    main.append(h("h1", { tabindex: "-1" }, "Not found"),
      h("p", {}, "No view has this address. ", h("a", { href: "/dashboard/memories" }, "Memories")));
    return focusHeading();
  }
  const [found, module] = match;
  state.controller = new AbortController();
  const context = {
    main, params: found.slice(1).map(decodeURIComponent),
    query: new URLSearchParams(location.search), navigate, can, who: state.who,
    signal: state.controller.signal,
  };
  try {
    state.view = (await module.render(context)) || null;
  } catch (error) {
    if (error.name === "AbortError") return;
    main.append(h("p", { class: "error", role: "alert" }, errorText(error)));
  }
  focusHeading();
  performance.mark("memoryd:view-ready");  // the view is drawn and answers input (bench/dashboard)
}

function focusHeading() {
  const heading = main.querySelector("h1");
  if (heading) {
    heading.setAttribute("tabindex", "-1");
    heading.focus({ preventScroll: true });
  }
}

function markNav(name) {
  for (const a of document.querySelectorAll("[data-nav]")) {
    if (a.dataset.nav === name) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
}

function showLogin(message) {
  document.getElementById("top").hidden = true;
  clear(main);
  const input = h("input", { type: "password", name: "key", autocomplete: "off", required: true,
    spellcheck: "false", "aria-describedby": "login-hint" });
  const problem = h("p", { class: "error", role: "alert", id: "login-error" }, message || "");
  const form = h("form", { class: "panel login", "aria-labelledby": "login-title" },
    h("h1", { id: "login-title" }, "memoryd"),
    field("API key", input),
    h("p", { class: "hint", id: "login-hint" },
      "Make one with `memoryd keys create --label me`. It is kept in this tab only and sent to this server alone."),
    problem,
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Log in")));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    problem.textContent = "";
    await login(input.value.trim(), problem);
  });
  main.append(form);
  input.focus();
}

async function login(key, problem) {
  if (!key) return;
  try {
    const who = await get("/api/v1/whoami", undefined, { key });
    setKey(key);
    start(who);
    await render();
  } catch (error) {
    problem.textContent = error.status === 401
      ? "That key was not accepted: it is unknown, malformed or revoked."
      : errorText(error);
  }
}

function start(who) {
  state.who = who;
  document.getElementById("top").hidden = false;
  const binding = [who.memory_scope && `scope ${who.memory_scope}`, who.agent_id && `agent ${who.agent_id}`,
    who.domains && `domains ${who.domains.join(", ")}`].filter(Boolean).join(", ");
  document.getElementById("whoami").textContent =
    `${who.key_label || who.name} · ${who.scopes.join(", ")}${binding ? ` · ${binding}` : ""}`;
  state.live?.stop();
  state.live = new Live({
    onChanges: (feed) => state.view?.onChanges?.(feed),
    onStatus: showStatus,
    onRefused: (message) => logout(`Logged out: ${message}`),
    onReconnected: () => {
      toast("Reconnected to memoryd");
      state.view?.onReconnected?.();
    },
  });
  state.live.start();
}

function showStatus(status) {
  const badge = document.getElementById("live");
  const text = { live: "live", polling: "live (polling)", reconnecting: "reconnecting…", offline: "offline" };
  badge.textContent = text[status] || status;
  badge.className = `live ${status === "live" ? "on" : status === "polling" ? "poll" : ""}`;
}

function logout(message) {
  clearKey();
  state.who = null;
  state.live?.stop();
  state.view?.dispose?.();
  state.view = null;
  showLogin(message);
}

function onLinkClick(event) {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey
      || event.shiftKey || event.altKey) return;
  const a = event.target.closest("a[href]");
  if (!a || a.target || a.hasAttribute("download") || a.getAttribute("href").startsWith("#")) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || !url.pathname.startsWith("/dashboard")
      || url.pathname.startsWith("/dashboard/static/")) return;
  event.preventDefault();
  navigate(url.pathname + url.search);
}

async function boot() {
  document.addEventListener("click", onLinkClick);
  // A fragment link (the skip link) also fires popstate: only a new address re-renders.
  window.addEventListener("popstate", () => {
    if (location.pathname + location.search !== state.rendered) render();
  });
  document.getElementById("logout").addEventListener("click", () => logout("Logged out."));
  whenUnauthorized((error) => logout(`Logged out: ${error.message}`));
  const key = getKey();
  if (!key) return showLogin();
  try {
    start(await get("/api/v1/whoami"));
  } catch (error) {
    if (error.status !== 401) showLogin(errorText(error));
    return;
  }
  await render();
}

boot();
