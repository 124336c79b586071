/**
 * The OpenClaw memory tools, answered by memoryd:
 *
 * - `memory_search{query, maxResults?, minScore?}` -> `{results[{path, startLine, endLine, score, snippet, source, citation}]}`
 * - `memory_get{path, from?, lines?}` -> `{path, text}` (empty text, not an error, when missing)
 * - `memory_store{text, importance?, category?}` -> `{action, id, text}`
 * - `memory_forget{query? | memoryId?}` -> `{action, id?, candidates?}`
 *
 * A memoryd memory appears to OpenClaw as a small file `memoryd/<id>.md`, so Active Memory's
 * search-then-get workflow and its citations (`memoryd/<id>.md#L1`) work unchanged.
 */

import { MemorydClient, MemorydError } from "./client.js";
import { DEFAULT_MIN_SCORE } from "./config.js";

export const MEMORY_PATH_PREFIX = "memoryd/";
const SNIPPET_CHARS = 700;
const DEFAULT_MAX_RESULTS = 6;
const DEFAULT_GET_LINES = 200;
/** memory_forget by query deletes on its own only a match this close (cosine similarity). */
export const FORGET_SIMILARITY = 0.9;
const NODE_TYPES = new Set(["fact", "preference", "decision", "pattern", "event", "observation", "note", "error"]);

type SearchItem = {
  id: string;
  content: string;
  score: number;
  semantic_similarity: number | null;
};
type SearchResponse = { results: SearchItem[] };
type MemoryRecord = { id: string; content: string };

export type MemorySearchParams = { query: string; maxResults?: number; minScore?: number; corpus?: string };
export type MemorySearchHit = {
  path: string;
  startLine: number;
  endLine: number;
  score: number;
  snippet: string;
  source: "memory";
  citation: string;
};
export type MemoryGetParams = { path: string; from?: number; lines?: number; corpus?: string };
export type MemoryStoreParams = { text: string; importance?: number; category?: string };
export type MemoryForgetParams = { query?: string; memoryId?: string };

/** The path under which a memory appears to OpenClaw. */
export function memoryPath(id: string): string {
  return `${MEMORY_PATH_PREFIX}${id}.md`;
}

/** The memory id in a path from memory_search (or a bare id); null when it is not one of ours. */
export function memoryIdOf(path: string): string | null {
  const trimmed = path.trim().replace(/#.*$/, "");
  const bare = trimmed.startsWith(MEMORY_PATH_PREFIX) ? trimmed.slice(MEMORY_PATH_PREFIX.length) : trimmed;
  const id = bare.replace(/\.md$/, "");
  return /^[A-Za-z0-9-]{8,64}$/.test(id) ? id : null;
}

function lineCount(text: string): number {
  return text.split("\n").length;
}

function requireText(value: unknown, name: string): string {
  if (typeof value !== "string" || !value.trim()) {
    throw new MemorydError(`${name} must be a non-empty string`, null, "invalid_input");
  }
  return value.trim();
}

/**
 * memory_search: hybrid search in memoryd, shaped like OpenClaw's memory-core results. Only
 * results scoring at least `minScore` (how likely a memory answers the query, 0-1; default
 * memoryd's recall threshold) come back, so a question memory cannot answer finds nothing.
 */
export async function memorySearch(
  client: MemorydClient,
  params: MemorySearchParams,
  sessionKey?: string,
  minScore: number = DEFAULT_MIN_SCORE,
): Promise<{ results: MemorySearchHit[] }> {
  const query = requireText(params.query, "query");
  const body: Record<string, unknown> = { query, limit: Math.min(Math.max(params.maxResults ?? DEFAULT_MAX_RESULTS, 1), 100) };
  // Only memories likely to answer: the call's minScore, else the plugin's (memoryd's threshold).
  body.min_score = Math.min(Math.max(params.minScore ?? minScore, 0), 1);
  if (sessionKey) body.session_key = sessionKey;
  const answer = await client.post<SearchResponse>("/api/v1/search", body);
  const results = answer.results.map((item) => {
    const path = memoryPath(item.id);
    const endLine = lineCount(item.content);
    const snippet = item.content.length > SNIPPET_CHARS ? `${item.content.slice(0, SNIPPET_CHARS - 1)}…` : item.content;
    return { path, startLine: 1, endLine, score: item.score, snippet, source: "memory" as const, citation: `${path}#L1-L${endLine}` };
  });
  return { results };
}

/** memory_get: the lines of one memory; `{path, text: ""}` when it does not exist. */
export async function memoryGet(client: MemorydClient, params: MemoryGetParams): Promise<{ path: string; text: string }> {
  const path = requireText(params.path, "path");
  const id = memoryIdOf(path);
  if (id === null) return { path, text: "" };
  let memory: MemoryRecord;
  try {
    memory = await client.get<MemoryRecord>(`/api/v1/memories/${encodeURIComponent(id)}`);
  } catch (error) {
    if (error instanceof MemorydError && (error.status === 404 || error.status === 422)) return { path, text: "" };
    throw error;
  }
  const from = Math.max(params.from ?? 1, 1);
  const count = Math.max(params.lines ?? DEFAULT_GET_LINES, 1);
  const text = memory.content.split("\n").slice(from - 1, from - 1 + count).join("\n");
  return { path, text };
}

/** memory_store: smart ingest (near-duplicates reinforce or update instead of piling up). */
export async function memoryStore(
  client: MemorydClient,
  params: MemoryStoreParams,
): Promise<{ action: string; id: string | null; text: string }> {
  const text = requireText(params.text, "text");
  const body: Record<string, unknown> = { content: text, source: "openclaw:memory_store" };
  if (params.importance !== undefined) body.importance = Math.min(Math.max(params.importance, 0), 1);
  if (params.category) {
    if (NODE_TYPES.has(params.category)) body.node_type = params.category;
    else body.category = params.category;
  }
  const answer = await client.post<{ data: { decision: string; memory_id: string | null } }>("/smart_ingest", body);
  return { action: answer.data.decision, id: answer.data.memory_id, text };
}

/** memory_forget: delete by id, or by query when exactly one memory matches closely. */
export async function memoryForget(
  client: MemorydClient,
  params: MemoryForgetParams,
): Promise<{ action: "deleted" | "candidates" | "not_found"; id?: string; candidates?: { id: string; text: string; similarity: number | null }[] }> {
  if (params.memoryId) {
    const id = memoryIdOf(params.memoryId) ?? params.memoryId;
    try {
      await client.delete(`/api/v1/memories/${encodeURIComponent(id)}`);
    } catch (error) {
      if (error instanceof MemorydError && (error.status === 404 || error.status === 422)) return { action: "not_found", id };
      throw error;
    }
    return { action: "deleted", id };
  }
  if (!params.query || !params.query.trim()) {
    throw new MemorydError("memory_forget needs memoryId or query", null, "invalid_input");
  }
  const answer = await client.post<SearchResponse>("/api/v1/search", { query: params.query.trim(), limit: 5, mode: "hybrid" });
  const close = answer.results.filter((r) => (r.semantic_similarity ?? 0) >= FORGET_SIMILARITY);
  if (close.length === 1) {
    await client.delete(`/api/v1/memories/${encodeURIComponent(close[0].id)}`);
    return { action: "deleted", id: close[0].id };
  }
  if (answer.results.length === 0) return { action: "not_found" };
  const candidates = answer.results.map((r) => ({ id: r.id, text: r.content.slice(0, 200), similarity: r.semantic_similarity }));
  return { action: "candidates", candidates };
}

/** JSON Schemas of the tool parameters (the shapes OpenClaw's memory tools use). */
export const TOOL_SCHEMAS = {
  memory_search: {
    type: "object",
    properties: {
      query: { type: "string", description: "What to look for (free text)." },
      maxResults: { type: "integer", minimum: 1, maximum: 100, description: "How many results at most (default 6)." },
      minScore: { type: "number", minimum: 0, maximum: 1, description: "Drop results less likely than this to answer the query (0-1; default memoryd's recall threshold)." },
      corpus: { type: "string", enum: ["memory", "wiki", "all", "sessions"], description: "Accepted for compatibility; memoryd searches its memories." },
    },
    required: ["query"],
    additionalProperties: false,
  },
  memory_get: {
    type: "object",
    properties: {
      path: { type: "string", description: "A path returned by memory_search, e.g. memoryd/<id>.md." },
      from: { type: "integer", minimum: 1, description: "First line to read (1-based)." },
      lines: { type: "integer", minimum: 1, description: "How many lines to read (default 200)." },
      corpus: { type: "string", enum: ["memory", "wiki", "all"], description: "Accepted for compatibility." },
    },
    required: ["path"],
    additionalProperties: false,
  },
  memory_store: {
    type: "object",
    properties: {
      text: { type: "string", description: "What to remember, in one or a few sentences." },
      importance: { type: "number", minimum: 0, maximum: 1, description: "0-1 (default: scored by memoryd)." },
      category: { type: "string", description: "preference, fact, decision, entity, other, or your own category." },
    },
    required: ["text"],
    additionalProperties: false,
  },
  memory_forget: {
    type: "object",
    properties: {
      query: { type: "string", description: "Find the memory to forget; deleted only if exactly one matches closely." },
      memoryId: { type: "string", description: "The id (or memoryd/<id>.md path) of the memory to delete." },
    },
    additionalProperties: false,
  },
} as const;
