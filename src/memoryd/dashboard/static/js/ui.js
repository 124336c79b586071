// Small DOM helpers. Text always goes in as text (never parsed as HTML), and no element gets
// an inline style attribute: the page's Content-Security-Policy forbids both.

export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") el.className = value;
    else if (name === "dataset") Object.assign(el.dataset, value);
    else if (name.startsWith("on") && typeof value === "function") {
      el.addEventListener(name.slice(2), value);
    } else if (name === "value" || name === "checked" || name === "selected") el[name] = value;
    else el.setAttribute(name, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

const SVG = "http://www.w3.org/2000/svg";

export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value !== undefined && value !== null) el.setAttribute(name, String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

export function fmtDate(value) {
  if (!value) return "—";
  const date = new Date(value);
  return date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

export function fmtDay(value) {
  if (!value) return "—";
  return new Date(value).toLocaleDateString(undefined, { dateStyle: "medium" });
}

export function pct(value) {
  return value === null || value === undefined ? "—" : `${Math.round(value * 100)}%`;
}

export function num(value, digits = 2) {
  return value === null || value === undefined ? "—" : Number(value).toFixed(digits);
}

export function errorText(error) {
  if (!error) return "";
  return error.status ? `${error.message} (${error.status})` : error.message;
}

export function toast(message, { bad = false, ms = 4000 } = {}) {
  const box = document.getElementById("toast");
  const item = h("div", { class: bad ? "item bad" : "item" }, message);
  box.append(item);
  setTimeout(() => item.remove(), ms);
}

// A modal dialog: resolves to true (OK) or false (Cancel, Escape). ``body`` is a node or
// text; ``form`` is called with the body element on OK to read inputs.
export function ask({ title, body, ok = "OK", danger = false }) {
  const dialog = document.getElementById("dialog");
  document.getElementById("dialog-title").textContent = title;
  const holder = clear(document.getElementById("dialog-body"));
  holder.append(body instanceof Node ? body : h("p", {}, body));
  const okButton = document.getElementById("dialog-ok");
  okButton.textContent = ok;
  okButton.className = danger ? "danger" : "";
  const opener = document.activeElement;
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => {
      resolve(dialog.returnValue === "ok");
      if (opener && opener.focus) opener.focus();
    }, { once: true });
    dialog.returnValue = "";
    dialog.showModal();
    const first = holder.querySelector("input, select, textarea");
    (first || okButton).focus();
  });
}

export function confirmAction(title, message, ok = "Delete") {
  return ask({ title, body: message, ok, danger: true });
}

export function field(label, input, hint) {
  const id = input.id || `f-${Math.random().toString(36).slice(2, 9)}`;
  input.id = id;
  return h("div", { class: "field" }, h("label", { for: id }, label), input,
    hint ? h("span", { class: "hint" }, hint) : null);
}

export function table(headers, rows, { caption } = {}) {
  return h("div", { class: "table-wrap" },
    h("table", {},
      caption ? h("caption", { class: "muted small" }, caption) : null,
      h("thead", {}, h("tr", {}, headers.map((x) => (x instanceof Node ? x : h("th", { scope: "col" }, x))))),
      h("tbody", {}, rows)));
}

export function debounce(fn, ms) {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}

export function link(href, text, props = {}) {
  return h("a", { href, ...props }, text);
}

export function section(title, ...children) {
  return h("section", { class: "panel", "aria-label": title }, h("h2", {}, title), children);
}
