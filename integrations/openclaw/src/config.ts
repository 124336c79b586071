/** The plugin's configuration (`plugins.entries.memoryd.config`), checked, with defaults. */

export type PluginConfig = {
  url: string;
  token?: string;
  agentId: string;
  autoRecall: boolean;
  autoCapture: boolean;
  recallTokenBudget?: number;
  recallMaxItems?: number;
  minScore: number;
  timeoutMs: number;
};

export const DEFAULT_URL = "http://127.0.0.1:8765";
/**
 * memoryd's default recall threshold (`memoryd.retrieval.answer.DEFAULT_RECALL_THRESHOLD`): a
 * memory at least this likely to answer the query. `memory_search` passes it as `min_score`
 * unless the call or the plugin config (`minScore`) names another.
 */
export const DEFAULT_MIN_SCORE = 0.17;

/** Settings problems named field by field, so a typo in openclaw.json is easy to find. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(`memoryd plugin config: ${message}`);
    this.name = "ConfigError";
  }
}

function optionalInt(raw: Record<string, unknown>, name: string, min: number, max: number): number | undefined {
  const value = raw[name];
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}`);
  }
  return value;
}

function optionalScore(raw: Record<string, unknown>, name: string, fallback: number): number {
  const value = raw[name];
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0 || value > 1) {
    throw new ConfigError(`${name} must be a number from 0 to 1`);
  }
  return value;
}

function optionalBool(raw: Record<string, unknown>, name: string, fallback: boolean): boolean {
  const value = raw[name];
  if (value === undefined) return fallback;
  if (typeof value !== "boolean") throw new ConfigError(`${name} must be true or false`);
  return value;
}

/**
 * Parse the plugin config; the token may also come from the MEMORYD_TOKEN environment variable.
 *
 * @example parseConfig({ url: "http://127.0.0.1:8765", agentId: "main" }, process.env)
 */
export function parseConfig(raw: unknown, env: Record<string, string | undefined> = {}): PluginConfig {
  const config = (raw ?? {}) as Record<string, unknown>;
  if (typeof config !== "object" || Array.isArray(config)) throw new ConfigError("must be an object");
  const url = config.url ?? env.MEMORYD_URL ?? DEFAULT_URL;
  if (typeof url !== "string" || !/^https?:\/\/[^\s]+$/.test(url)) throw new ConfigError("url must be an http(s) URL");
  const token = config.token ?? env.MEMORYD_TOKEN;
  if (token !== undefined && (typeof token !== "string" || !token.startsWith("mk_"))) {
    throw new ConfigError("token must be a memoryd API key (mk_...)");
  }
  const agentId = config.agentId ?? "openclaw";
  if (typeof agentId !== "string" || !/^[\x21-\x7e][\x20-\x7e]{0,255}$/.test(agentId)) {
    throw new ConfigError("agentId must be 1-256 printable ASCII characters");
  }
  return {
    url,
    token: token || undefined,
    agentId,
    autoRecall: optionalBool(config, "autoRecall", true),
    autoCapture: optionalBool(config, "autoCapture", true),
    recallTokenBudget: optionalInt(config, "recallTokenBudget", 50, 100_000),
    recallMaxItems: optionalInt(config, "recallMaxItems", 1, 50),
    minScore: optionalScore(config, "minScore", DEFAULT_MIN_SCORE),
    timeoutMs: optionalInt(config, "timeoutMs", 100, 600_000) ?? 30_000,
  };
}
