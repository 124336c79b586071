// Start a real `memoryd serve` for the tests: a temp MEMORYD_HOME, a fresh key, a free port.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
export const MEMORYD_BIN = process.env.MEMORYD_BIN ?? resolve(here, "../../../.venv/bin/memoryd");

export function freePort() {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => done(port));
    });
  });
}

function memorydEnv(home) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("MEMORYD_")));
  return { ...env, MEMORYD_HOME: home, XDG_CONFIG_HOME: join(home, "xdg"), OMP_NUM_THREADS: "1" };
}

/** Run `memoryd serve`; resolves once /readyz answers. `keys` maps labels to mk_ secrets. */
export async function startMemoryd({ keyScopes = { writer: "read,write", admin: "read,write,admin" } } = {}) {
  const home = mkdtempSync(join(tmpdir(), "memoryd-openclaw-"));
  const env = memorydEnv(home);
  const keys = {};
  for (const [label, scopes] of Object.entries(keyScopes)) {
    keys[label] = execFileSync(MEMORYD_BIN, ["keys", "create", "--label", label, "--scopes", scopes], { env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();
  }
  const port = await freePort();
  const child = spawn(MEMORYD_BIN, ["serve", "--port", String(port)], { env, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (chunk) => (stderr += chunk));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`memoryd serve exited: ${stderr}`);
    try {
      const response = await fetch(`${url}/readyz`);
      if (response.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`memoryd serve did not become ready: ${stderr}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  // Load the embedding model before the tests start, so that no test's own timeout pays for it
  // (on a busy machine the first load can take longer than a request may).
  const warm = await fetch(`${url}/session/warm`, {
    method: "POST",
    headers: { authorization: `Bearer ${keys[Object.keys(keys)[0]]}`, "content-type": "application/json" },
    body: JSON.stringify({ session_key: "test-warm-up" }),
    signal: AbortSignal.timeout(300_000),
  });
  if (!warm.ok) throw new Error(`memoryd did not warm up: ${warm.status} ${await warm.text()}`);
  return {
    url,
    keys,
    home,
    async stop() {
      child.kill("SIGTERM");
      await new Promise((r) => (child.exitCode !== null ? r() : child.once("exit", r)));
      rmSync(home, { recursive: true, force: true });
    },
  };
}
