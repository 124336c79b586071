/**
 * The OpenClaw hooks that make memoryd the agent's memory:
 *
 * - `session_start` -> `POST /session/warm` (loads memoryd's model so the first recall is fast)
 * - `before_prompt_build` -> `POST /recall` -> `{prependContext: "<system_memory ...>"}`
 * - `agent_end` -> `POST /capture` with the whole transcript; memoryd keeps a per-session
 *   watermark (count + fingerprint of the last captured message), and this side skips the
 *   call when no message was added since the last successful capture
 * - `before_compaction` -> `POST /flush` with the messages about to be compacted
 *
 * A hook never fails the agent's turn: memoryd errors are logged and the turn goes on.
 */

import { MemorydClient } from "./client.js";

export type HookSettings = {
  autoRecall: boolean;
  autoCapture: boolean;
  recallTokenBudget?: number;
  recallMaxItems?: number;
};
export type HookContext = { sessionKey?: string; sessionId?: string; agentId?: string };
export type Logger = { warn: (message: string) => void; debug?: (message: string) => void };
export type ChatMessage = { role: "user" | "assistant"; content: string };

/** Recall needs a few words to search with; shorter prompts ("ok", "yes") recall nothing. */
const MIN_RECALL_CHARS = 3;

export function sessionKeyOf(ctx: HookContext): string | undefined {
  return ctx.sessionKey ?? ctx.sessionId;
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter((part): part is { type: string; text: string } => typeof part === "object" && part !== null && part.type === "text" && typeof part.text === "string")
    .map((part) => part.text)
    .join("\n");
}

/**
 * The user and assistant text of OpenClaw session messages (tool calls, tool results and
 * thinking carry no statements worth remembering and are left out).
 */
export function chatMessages(messages: unknown[] | undefined): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (const message of messages ?? []) {
    if (typeof message !== "object" || message === null) continue;
    const { role, content } = message as { role?: unknown; content?: unknown };
    if (role !== "user" && role !== "assistant") continue;
    const text = textOf(content).trim();
    if (text) out.push({ role, content: text });
  }
  return out;
}

export class MemoryHooks {
  /** Messages captured per session (the local side of the watermark). */
  private readonly captured = new Map<string, number>();

  constructor(
    private readonly client: MemorydClient,
    private readonly settings: HookSettings,
    private readonly logger: Logger,
  ) {}

  /** Warm memoryd's embedding model at session start (best effort). */
  async sessionStart(event: { sessionId: string; sessionKey?: string }): Promise<void> {
    try {
      await this.client.post("/session/warm", { session_key: event.sessionKey ?? event.sessionId, agent_id: this.client.agentId });
    } catch (error) {
      this.logger.warn(`memoryd: warm-up failed: ${(error as Error).message}`);
    }
  }

  /** The recall block for the prompt, as `prependContext` (nothing when no memory is relevant). */
  async beforePromptBuild(
    event: { prompt: string; currentUserMessage?: string },
    ctx: HookContext,
  ): Promise<{ prependContext: string } | undefined> {
    if (!this.settings.autoRecall) return undefined;
    const prompt = (event.currentUserMessage ?? event.prompt ?? "").trim();
    if (prompt.length < MIN_RECALL_CHARS) return undefined;
    const body: Record<string, unknown> = { prompt, agent_id: this.client.agentId, session_key: sessionKeyOf(ctx) };
    if (this.settings.recallTokenBudget) body.token_budget = this.settings.recallTokenBudget;
    if (this.settings.recallMaxItems) body.max_items = this.settings.recallMaxItems;
    try {
      const answer = await this.client.post<{ block: string }>("/recall", body);
      return answer.block ? { prependContext: answer.block } : undefined;
    } catch (error) {
      this.logger.warn(`memoryd: recall failed, answering without memory: ${(error as Error).message}`);
      return undefined;
    }
  }

  /** Capture what the finished turn taught; returns how many memories memoryd stored. */
  async agentEnd(event: { messages: unknown[] }, ctx: HookContext): Promise<number> {
    const sessionKey = sessionKeyOf(ctx);
    if (!this.settings.autoCapture || !sessionKey) return 0;
    const messages = chatMessages(event.messages);
    if (messages.length === 0 || this.captured.get(sessionKey) === messages.length) return 0;
    try {
      const answer = await this.client.post<{ stored: unknown[] }>("/capture", { messages, session_key: sessionKey, agent_id: this.client.agentId });
      this.captured.set(sessionKey, messages.length);
      return answer.stored.length;
    } catch (error) {
      this.logger.warn(`memoryd: capture failed: ${(error as Error).message}`);
      return 0;
    }
  }

  /** Store what the messages about to be compacted taught; returns how many were stored. */
  async beforeCompaction(event: { messages?: unknown[] }, ctx: HookContext): Promise<number> {
    if (!this.settings.autoCapture) return 0;
    const messages = chatMessages(event.messages);
    if (messages.length === 0) return 0;
    try {
      const answer = await this.client.post<{ stored: unknown[] }>("/flush", { messages, session_key: sessionKeyOf(ctx), agent_id: this.client.agentId });
      this.captured.delete(sessionKeyOf(ctx) ?? "");
      return answer.stored.length;
    } catch (error) {
      this.logger.warn(`memoryd: flush before compaction failed: ${(error as Error).message}`);
      return 0;
    }
  }
}
