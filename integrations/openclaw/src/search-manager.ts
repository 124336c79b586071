/**
 * memoryd behind OpenClaw's own `memory_search` and `memory_get` tools.
 *
 * OpenClaw (2026.9) owns those two tools in core and answers them through the memory slot
 * plugin's search manager. This manager forwards `search` to memoryd's hybrid search and
 * `readFile` to one memory (`memoryd/<id>.md`), so Active Memory and the agent's own tool
 * calls get memoryd's results in OpenClaw's shapes.
 */

import { MemorydClient } from "./client.js";
import { memoryGet, memorySearch } from "./tools.js";

type SearchOptions = { maxResults?: number; minScore?: number; sessionKey?: string; sources?: string[] };

export class MemorydSearchManager {
  constructor(private readonly client: MemorydClient, private readonly minScore?: number) {}

  /** Hybrid search in memoryd; results carry `source: "memory"` (memoryd holds no transcripts). */
  async search(query: string, opts: SearchOptions = {}) {
    if (opts.sources && !opts.sources.includes("memory")) return [];
    const { results } = await memorySearch(this.client, { query, maxResults: opts.maxResults, minScore: opts.minScore }, opts.sessionKey, this.minScore);
    return results;
  }

  /** The lines of one memory; empty text when it does not exist. */
  async readFile(params: { relPath: string; from?: number; lines?: number }) {
    const read = await memoryGet(this.client, { path: params.relPath, from: params.from, lines: params.lines });
    return { path: read.path, text: read.text, ...(params.from ? { from: params.from } : {}) };
  }

  status() {
    return { backend: "builtin" as const, provider: "memoryd", custom: { url: this.client.url }, sources: ["memory" as const] };
  }

  async probeEmbeddingAvailability() {
    try {
      const health = await this.client.get<{ status?: string }>("/readyz");
      return { ok: Boolean(health), checked: true };
    } catch (error) {
      return { ok: false, checked: true, error: (error as Error).message };
    }
  }

  async probeVectorAvailability() {
    return (await this.probeEmbeddingAvailability()).ok;
  }
}
