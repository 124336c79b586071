/**
 * A small HTTP client for the memoryd REST API: bearer token, X-Agent-Id, timeouts,
 * and errors that name the route and memoryd's own message.
 *
 * @example
 *   const client = new MemorydClient({ url: "http://127.0.0.1:8765", token: "mk_...", agentId: "main" });
 *   const hits = await client.post("/api/v1/search", { query: "deploy day", limit: 5 });
 */

export type MemorydConfig = {
  /** Base URL of `memoryd serve`, e.g. http://127.0.0.1:8765 */
  url: string;
  /** An API key (mk_...); sent as `Authorization: Bearer`. */
  token?: string;
  /** Stored as the agent_id of what this agent writes. */
  agentId?: string;
  /** Per-request timeout in milliseconds. */
  timeoutMs?: number;
};

/** memoryd answered with an error status, or could not be reached. */
export class MemorydError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
    readonly code: string | null = null,
  ) {
    super(message);
    this.name = "MemorydError";
  }
}

const DEFAULT_TIMEOUT_MS = 30_000;

export class MemorydClient {
  readonly url: string;

  constructor(private readonly config: MemorydConfig) {
    if (!/^https?:\/\//.test(config.url ?? "")) {
      throw new MemorydError(`memoryd url must start with http:// or https:// (got ${JSON.stringify(config.url)})`, null);
    }
    this.url = config.url.replace(/\/+$/, "");
  }

  get agentId(): string | undefined {
    return this.config.agentId;
  }

  private headers(): Record<string, string> {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (this.config.token) headers.authorization = `Bearer ${this.config.token}`;
    if (this.config.agentId) headers["x-agent-id"] = this.config.agentId;
    return headers;
  }

  /** Send one request; resolves to the decoded JSON body, rejects with MemorydError. */
  async request<T>(method: "GET" | "POST" | "DELETE", path: string, body?: unknown): Promise<T> {
    let response: Response;
    try {
      response = await fetch(this.url + path, {
        method,
        headers: this.headers(),
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.config.timeoutMs ?? DEFAULT_TIMEOUT_MS),
      });
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new MemorydError(`memoryd at ${this.url} is unreachable (${method} ${path}): ${reason}`, null);
    }
    const text = await response.text();
    let data: unknown = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = null;
    }
    if (!response.ok) {
      const detail = (data as { error?: string; code?: string } | null) ?? {};
      throw new MemorydError(
        `memoryd ${method} ${path} failed with ${response.status}: ${detail.error ?? text.slice(0, 300)}`,
        response.status,
        detail.code ?? null,
      );
    }
    return data as T;
  }

  post<T>(path: string, body: unknown): Promise<T> {
    return this.request<T>("POST", path, body);
  }

  get<T>(path: string): Promise<T> {
    return this.request<T>("GET", path);
  }

  delete<T>(path: string): Promise<T> {
    return this.request<T>("DELETE", path);
  }
}
