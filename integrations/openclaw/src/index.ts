/**
 * memoryd as OpenClaw's memory: the memory_search / memory_get / memory_store / memory_forget
 * tools, the memory slot's search manager (for OpenClaw features that read memory through the
 * slot), auto-recall before each prompt, capture after each turn and a flush before compaction.
 *
 * Enable with `plugins.slots.memory = "memoryd"` and configure under
 * `plugins.entries.memoryd.config` (url, token, agentId, autoRecall, autoCapture).
 */

import { definePluginEntry } from "openclaw/plugin-sdk/plugin-entry";
import { MemorydClient } from "./client.js";
import { parseConfig, type PluginConfig } from "./config.js";
import { MemoryHooks } from "./hooks.js";
import { MemorydSearchManager } from "./search-manager.js";
import { TOOL_SCHEMAS, memoryForget, memoryGet, memorySearch, memoryStore } from "./tools.js";

type ToolContext = { sessionKey?: string; sessionId?: string };
type ToolRun = (params: any, ctx: ToolContext) => Promise<unknown>;

const TOOLS: Record<keyof typeof TOOL_SCHEMAS, { label: string; description: string; run: (client: MemorydClient, config: PluginConfig) => ToolRun }> = {
  memory_search: {
    label: "Memory Search",
    description:
      "Search long-term memory (memoryd) before answering questions about prior work, decisions, dates, people, preferences or todos. Returns paths to read with memory_get.",
    run: (client, config) => (params, ctx) => memorySearch(client, params, ctx.sessionKey ?? ctx.sessionId, config.minScore),
  },
  memory_get: {
    label: "Memory Get",
    description: "Read a memory found by memory_search (path memoryd/<id>.md); empty text when it no longer exists.",
    run: (client) => (params) => memoryGet(client, params),
  },
  memory_store: {
    label: "Memory Store",
    description: "Store something worth remembering across sessions (a preference, fact or decision). Near-duplicates are merged.",
    run: (client) => (params) => memoryStore(client, params),
  },
  memory_forget: {
    label: "Memory Forget",
    description: "Delete a memory by memoryId, or by query when exactly one memory matches closely (otherwise lists candidates).",
    run: (client) => (params) => memoryForget(client, params),
  },
};

export default definePluginEntry({
  id: "memoryd",
  name: "memoryd",
  description: "Long-term memory for OpenClaw agents, served by memoryd",
  register(api) {
    const config = parseConfig(api.pluginConfig, process.env);
    const client = new MemorydClient({ url: config.url, token: config.token, agentId: config.agentId, timeoutMs: config.timeoutMs });
    const hooks = new MemoryHooks(client, config, api.logger);
    const manager = new MemorydSearchManager(client, config.minScore);

    api.registerMemoryCapability({
      runtime: {
        getMemorySearchManager: async () => ({ manager: manager as any }),
        resolveMemoryBackendConfig: () => ({ backend: "builtin" }),
      },
    });

    for (const [name, spec] of Object.entries(TOOLS) as [keyof typeof TOOLS, (typeof TOOLS)[keyof typeof TOOLS]][]) {
      const run = spec.run(client, config);
      api.registerTool(
        (ctx) => ({
          name,
          label: spec.label,
          description: spec.description,
          parameters: TOOL_SCHEMAS[name] as any,
          async execute(_toolCallId: string, params: unknown) {
            const details = await run(params, ctx);
            return { content: [{ type: "text" as const, text: JSON.stringify(details) }], details };
          },
        }),
        { names: [name] },
      );
    }

    api.on("session_start", (event) => hooks.sessionStart(event));
    api.on("before_prompt_build", (event, ctx) => hooks.beforePromptBuild(event, ctx));
    api.on("agent_end", async (event, ctx) => {
      await hooks.agentEnd(event, ctx);
    });
    api.on("before_compaction", async (event, ctx) => {
      await hooks.beforeCompaction(event, ctx);
    });
  },
});
