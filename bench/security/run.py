"""Security bench: what the hardening costs, each figure two variants in the same run.

    python -m bench.security                 # all parts, a few minutes on 2 cores
    python -m bench.security --parts http    # one part: secrets, http, timeout, backup
    python -m bench.security --quick         # fewer repetitions (a smoke run)

1. **secrets**: screening every text field of a write (``scan_fields`` over content,
   summary, tags, metadata, source, category) against screening the content only
   (``scan``), per BEAM development message (skipped when the data is absent); the other
   fields are what an agent typically sends with a chat message. Median ms per write and
   the ratio.
2. **http**: request latency through the app as shipped against the same app without the
   new guards (Host/Origin guard, error barrier, body timeout, stream cap), two servers on
   127.0.0.1 fed alternately by one keep-alive client; GET of one memory and POST of a
   small memory. Also the strict JSON body parser against ``json.loads`` on typical bodies.
3. **timeout**: how long a request that declares a body and sends only part of it holds a
   connection: until 408 with the body timeout set to 1 s and 2 s (before: forever).
4. **backup**: ``memoryd backup`` with and without writing the manifest (SHA-256, SQLite
   integrity check, row counts), and ``restore`` with and without verifying it first, on
   an SQLite store of ``--memories`` memories (deterministic hash vectors: the cost does
   not depend on what the vectors mean).

Results: bench/results/security.json and security.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import socket
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

import httpx
import numpy as np
import uvicorn

import memoryd
from bench.common import machine_info, md_table, raise_priority, summarize, write_results
from memoryd import backup_manifest, keys
from memoryd.api.guards import ErrorBarrier, HostGuard
from memoryd.api.json_body import parse_json_body
from memoryd.api.limits import BodyTimeoutMiddleware, StreamCapMiddleware
from memoryd.cognition import secrets
from memoryd.config import Settings
from memoryd.embed import Embedder
from memoryd.serving.http import HttpLimits, create_app

GUARDS = (HostGuard, ErrorBarrier, BodyTimeoutMiddleware, StreamCapMiddleware)


class HashEmbedder(Embedder):
    """Deterministic vectors from a hash: the bench measures mechanics, not meaning."""

    def __init__(self) -> None:
        super().__init__(model_id="bench/hash-embedder", dims=384)

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
            rows.append(np.random.default_rng(seed).normal(size=self.dims))
        return np.asarray(rows, dtype=np.float32)


# --- 1. secrets -----------------------------------------------------------------------------
def bench_secrets(quick: bool) -> dict[str, Any]:
    from bench.recall.data import conversation_dirs, load_conversation

    texts = [
        m.content
        for d in conversation_dirs()
        for msgs in load_conversation(d).sessions.values()
        for m in msgs
    ]
    if not texts:
        return {"skipped": "BEAM data absent"}
    texts = texts[:1000] if quick else texts
    writes = [
        {
            "content": text,
            "summary": text[:200],
            "tags": ["chat", "beam", f"session-{i % 7}"],
            "metadata": {"turn": i, "role": "user", "thread": {"id": f"t{i}", "lang": "en"}},
            "source": f"chat:beam/{i}",
            "category": "conversation",
        }
        for i, text in enumerate(texts)
    ]
    content_ms, fields_ms = [], []
    for write in writes:  # alternate the variants message by message
        t0 = time.perf_counter()
        secrets.scan(write["content"])
        t1 = time.perf_counter()
        secrets.scan_fields(write)
        t2 = time.perf_counter()
        content_ms.append((t1 - t0) * 1000)
        fields_ms.append((t2 - t1) * 1000)
    findings = sum(len(secrets.scan_fields(w)) for w in writes)
    return {
        "messages": len(texts),
        "mean_chars": round(statistics.mean(len(t) for t in texts)),
        "content_only": summarize(content_ms),
        "all_fields": summarize(fields_ms),
        "ratio_p50": round(statistics.median(fields_ms) / statistics.median(content_ms), 3),
        "findings_all_fields": findings,
    }


# --- 2. http --------------------------------------------------------------------------------
class Server:
    """A uvicorn server in a thread."""

    def __init__(self, app: Any) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        while not self.server.started:
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)


def _open(tmp: Path, name: str) -> tuple[Any, str]:
    engine = memoryd.open(f"sqlite:///{tmp / name}.db", embedder=HashEmbedder())
    return engine, keys.create_key(engine.store, "bench", scopes=["admin"]).secret


def _app(engine: Any, guarded: bool, limits: HttpLimits | None = None) -> Any:
    app = create_app(lambda: engine, Settings(), limits)
    if not guarded:
        app.user_middleware = [m for m in app.user_middleware if m.cls not in GUARDS]
    return app


def bench_http(quick: bool, tmp: Path) -> dict[str, Any]:
    rounds = 300 if quick else 2000
    variants: dict[str, dict[str, Any]] = {}
    servers = []
    for name, guarded in (("shipped", True), ("without_guards", False)):
        engine, secret = _open(tmp, name)
        memory_id = engine.add("a memory to read back").id
        server = Server(_app(engine, guarded))
        servers.append(server)
        client = httpx.Client(
            base_url=f"http://127.0.0.1:{server.port}",
            headers={"Authorization": f"Bearer {secret}"},
        )
        variants[name] = {"client": client, "id": memory_id, "get": [], "post": []}
    try:
        for i in range(rounds):
            order = list(variants.items()) if i % 2 == 0 else list(variants.items())[::-1]
            for _, v in order:
                t0 = time.perf_counter()
                v["client"].get(f"/api/v1/memories/{v['id']}").raise_for_status()
                t1 = time.perf_counter()
                v["client"].post("/api/v1/memories", json={"content": f"note {i}"})
                t2 = time.perf_counter()
                v["get"].append((t1 - t0) * 1000)
                v["post"].append((t2 - t1) * 1000)
    finally:
        for server in servers:
            server.stop()
    out: dict[str, Any] = {"rounds": rounds}
    for kind in ("get", "post"):
        shipped = summarize(variants["shipped"][kind])
        bare = summarize(variants["without_guards"][kind])
        out[kind] = {
            "shipped": shipped,
            "without_guards": bare,
            "ratio_p50": round(shipped["p50_ms"] / bare["p50_ms"], 3),
        }
    out["json_parse"] = _bench_json(quick)
    out["guards_micro_us"] = _bench_guard_parts(quick)
    return out


def _bench_guard_parts(quick: bool) -> dict[str, float]:
    """What the guards do per request, timed without a network or a server (µs)."""
    from memoryd.api.auth import allowed_methods
    from memoryd.api.hosts import HostPolicy

    policy = HostPolicy.loopback_and(["memoryd.lan:*"], ["http://app.local"])
    app = create_app(lambda: None, Settings())  # type: ignore[arg-type,return-value]
    scope = {"type": "http", "method": "GET", "path": "/api/v1/memories/abc", "app": app,
             "root_path": "", "headers": []}
    repeats = 5000 if quick else 50000

    def per_call(fn: Callable[[], Any]) -> float:
        t0 = time.perf_counter()
        for _ in range(repeats):
            fn()
        return round((time.perf_counter() - t0) / repeats * 1e6, 2)

    return {
        "host_and_origin_check": per_call(
            lambda: (policy.check_host("127.0.0.1:8765"), policy.check_origin("http://app.local"))
        ),
        "route_match_for_404_405": per_call(lambda: allowed_methods(scope)),
    }


def _bench_json(quick: bool) -> dict[str, Any]:
    bodies = [
        json.dumps({"content": "User prefers dark mode " * k, "tags": ["ui"] * 3,
                    "metadata": {"n": k, "nested": {"a": [1, 2, 3]}}}).encode()
        for k in (1, 10, 100)
    ]
    repeats = 2000 if quick else 20000
    out = {}
    for body in bodies:
        strict, plain = [], []
        for _ in range(repeats):
            t0 = time.perf_counter()
            parse_json_body(body)
            t1 = time.perf_counter()
            json.loads(body)
            t2 = time.perf_counter()
            strict.append((t1 - t0) * 1e6)
            plain.append((t2 - t1) * 1e6)
        out[f"{len(body)}_bytes"] = {
            "strict_us_p50": round(statistics.median(strict), 2),
            "json_loads_us_p50": round(statistics.median(plain), 2),
            "ratio_p50": round(statistics.median(strict) / statistics.median(plain), 3),
        }
    return out


# --- 3. timeout -----------------------------------------------------------------------------
def bench_timeout(quick: bool, tmp: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for seconds in (1.0, 2.0):
        engine, secret = _open(tmp, f"timeout{seconds:g}")
        server = Server(_app(engine, True, HttpLimits(body_timeout=seconds)))
        held = []
        try:
            for _ in range(3 if quick else 7):
                held.append(_held_for(server.port, secret))
        finally:
            server.stop()
            engine.close()
        out[f"timeout_{seconds:g}s"] = {"held_s_median": round(statistics.median(held), 3),
                                        "held_s": [round(h, 3) for h in held]}
    return out


def _held_for(port: int, secret: str) -> float:
    head = (
        f"POST /api/v1/memories HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {secret}\r\n"
        "Content-Type: application/json\r\nContent-Length: 500\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=120) as sock:
        sock.sendall(head + b'{"content": "trickle')
        t0 = time.perf_counter()
        data = b""
        while chunk := sock.recv(4096):  # until the server answers and closes
            data += chunk
        held = time.perf_counter() - t0
    assert b" 408 " in data.split(b"\r\n", 1)[0], data[:100]
    return held


# --- 4. backup ------------------------------------------------------------------------------
def bench_backup(quick: bool, tmp: Path, memories: int) -> dict[str, Any]:
    n = min(memories, 2000) if quick else memories
    source = memoryd.open(f"sqlite:///{tmp / 'backup-src.db'}", embedder=HashEmbedder())
    for start in range(0, n, 1000):
        source.add_many([{"content": f"backup bench memory {i} about topic {i % 97}"}
                         for i in range(start, min(start + 1000, n))])
    timings: dict[str, list[float]] = {k: [] for k in
                                       ("backup", "manifest", "restore", "verify")}
    repeats = 2 if quick else 5
    for r in range(repeats):
        target = tmp / f"b{r}.db"
        timings["backup"].append(_seconds(lambda: source.store.transfer.backup(target)))
        timings["manifest"].append(_seconds(lambda: backup_manifest.write_manifest(target)))
        timings["verify"].append(_seconds(lambda: backup_manifest.verify_backup(target)))
        timings["restore"].append(_seconds(
            lambda: source.store.transfer.restore(target, expect_model="bench/hash-embedder")))
    size = (tmp / "b0.db").stat().st_size
    source.close()
    med = {k: round(statistics.median(v), 3) for k, v in timings.items()}
    return {
        "memories": n,
        "backup_mib": round(size / 2**20, 1),
        "median_s": med,
        "backup_with_manifest_ratio": round((med["backup"] + med["manifest"]) / med["backup"], 3),
        "restore_with_verify_ratio": round((med["restore"] + med["verify"]) / med["restore"], 3),
    }


def _seconds(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


# --- report ---------------------------------------------------------------------------------
def render(data: dict[str, Any]) -> str:
    lines = ["# Security bench", "", f"Run {data['when']} on {data['machine']['cpus']} CPUs; "
             "medians; both variants of each row measured in the same run.", ""]
    s = data.get("secrets", {})
    if "content_only" in s:
        lines += ["## Secret screening per write (BEAM messages)", "", md_table(
            ["variant", "p50 ms", "p95 ms", "mean ms"],
            [["content only (scan)", s["content_only"]["p50_ms"], s["content_only"]["p95_ms"],
              s["content_only"]["mean_ms"]],
             ["every field (scan_fields)", s["all_fields"]["p50_ms"], s["all_fields"]["p95_ms"],
              s["all_fields"]["mean_ms"]]]),
            "", f"{s['messages']} messages, {s['mean_chars']} characters on average; ratio "
            f"every field / content at p50: **{s['ratio_p50']}**; findings: "
            f"{s['findings_all_fields']}.", ""]
    h = data.get("http")
    if h:
        rows = [[f"{kind.upper()} p50 ms", h[kind]["shipped"]["p50_ms"],
                 h[kind]["without_guards"]["p50_ms"], h[kind]["ratio_p50"]]
                for kind in ("get", "post")]
        lines += ["## HTTP guards", "", md_table(
            ["request", "shipped", "without the guards", "ratio"], rows), "",
            f"{h['rounds']} alternating rounds (on a shared machine the difference between the "
            "two servers is within their noise; the guards' own work, timed alone: "
            + ", ".join(f"{k.replace('_', ' ')} {v} µs" for k, v in h["guards_micro_us"].items())
            + " per request).", "", "Strict JSON body parsing against json.loads:", "",
            md_table(["body", "strict µs", "json.loads µs", "ratio"],
                     [[k, v["strict_us_p50"], v["json_loads_us_p50"], v["ratio_p50"]]
                      for k, v in h["json_parse"].items()]), ""]
    t = data.get("timeout")
    if t:
        lines += ["## A body that never finishes", "", md_table(
            ["body timeout", "connection held (median s)", "runs"],
            [[k.removeprefix("timeout_"), v["held_s_median"], len(v["held_s"])]
             for k, v in t.items()]), "", "Before: held until the client gave up.", ""]
    b = data.get("backup")
    if b:
        m = b["median_s"]
        lines += ["## Backup manifest and restore verification (SQLite)", "", md_table(
            ["step", "median s"], [[k, v] for k, v in m.items()]), "",
            f"{b['memories']} memories, {b['backup_mib']} MiB. backup + manifest / backup: "
            f"**{b['backup_with_manifest_ratio']}**; verify + restore / restore: "
            f"**{b['restore_with_verify_ratio']}**.", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", default="secrets,http,timeout,backup")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--memories", type=int, default=20000)
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    data: dict[str, Any] = {"when": time.strftime("%Y-%m-%d %H:%M"), "priority": raise_priority(),
                            "machine": machine_info(), "quick": args.quick}
    tmp = Path(tempfile.mkdtemp(prefix="memoryd-security-bench-"))
    try:
        if "secrets" in parts:
            data["secrets"] = bench_secrets(args.quick)
        if "http" in parts:
            data["http"] = bench_http(args.quick, tmp)
        if "timeout" in parts:
            data["timeout"] = bench_timeout(args.quick, tmp)
        if "backup" in parts:
            data["backup"] = bench_backup(args.quick, tmp, args.memories)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    name = "security_quick" if args.quick else "security"
    for path in write_results(name, data, render(data)):
        print(path)


if __name__ == "__main__":
    main()
