// Calls to memoryd's REST API with the key the person logged in with. The key is kept in
// sessionStorage (gone when the tab closes) and sent as a bearer token; the server decides
// what it may see and do, exactly as for any other client.

const KEY = "memoryd.key";

export class ApiError extends Error {
  constructor(status, message, code) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export function getKey() {
  return sessionStorage.getItem(KEY);
}

export function setKey(key) {
  sessionStorage.setItem(KEY, key);
}

export function clearKey() {
  sessionStorage.removeItem(KEY);
}

let onUnauthorized = () => {};

export function whenUnauthorized(handler) {
  onUnauthorized = handler;
}

function queryString(query) {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query || {})) {
    if (value === undefined || value === null || value === "") continue;
    if (Array.isArray(value)) value.forEach((v) => params.append(name, v));
    else params.append(name, String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : "";
}

// api("GET", "/api/v1/memories", {query: {limit: 20}}) -> parsed JSON, or throws ApiError.
export async function api(method, path, { query, body, signal, key } = {}) {
  const headers = { Accept: "application/json" };
  const secret = key ?? getKey();
  if (secret) headers.Authorization = `Bearer ${secret}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(path + queryString(query), {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
      credentials: "omit",
      cache: "no-store",
    });
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new ApiError(0, "memoryd does not answer (is the server running?)", "offline");
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    const message = typeof data?.error === "string" ? data.error
      : `${response.status} ${response.statusText}`;
    const error = new ApiError(response.status, message, data?.code);
    if (response.status === 401 && key === undefined) onUnauthorized(error);
    throw error;
  }
  if (data && data.success === true && "data" in data) return data.data;  // bridge routes
  return data;
}

export const get = (path, query, options = {}) => api("GET", path, { ...options, query });
export const post = (path, body, options = {}) => api("POST", path, { ...options, body });
export const patch = (path, body, options = {}) => api("PATCH", path, { ...options, body });
export const del = (path, query, options = {}) => api("DELETE", path, { ...options, query });
