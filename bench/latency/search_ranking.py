"""Search latency with memoryd's own keyword ranking, on SQLite and PostgreSQL, at 10k and 100k.

    .venv/bin/python -m bench.latency.search_ranking                       # 10k and 100k, both backends
    .venv/bin/python -m bench.latency.search_ranking --sizes 10000 --backends sqlite

Stores are the scale bench's (bench/.cache/scale: the synthetic corpus of
bench/latency/corpus.py with cached all-MiniLM-L6-v2 vectors, built through ``store.insert``),
built once and reused. Queries: 3 sets (short / question / long) of ``--per-set`` each.
Every query runs each variant once, in turn, so load changes on this shared machine hit
all variants alike; 10 warm-up queries are not counted. Measured:

- keyword candidates (pool 50): memoryd's BM25 over the term tables (what search uses), and
  the ranking it replaced on the same store, same run (SQLite: FTS5 ``bm25()`` top 50 taken
  inside FTS5, then joined and filtered; PostgreSQL: ``ts_rank`` over every match), as a ratio;
- vector candidates (pool 50), and the evidence each side needs from the other
  (``term_counts`` of the vector candidates, ``cosines`` of the keyword candidates);
- ``Engine.search(q, 10)`` with a given query vector, and end to end with the query embedded;
- two steps as they were, in the same run as ratios: the vector side after the keyword side
  on the caller's thread (now on a worker alongside it), and the instruction topics of the
  candidates read from their content by one more statement (now read when a memory is
  written and handed over with the candidates).

Writes bench/results/search_ranking.{json,md}.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import datetime, timezone
from typing import Any, Callable

import numpy as np

from bench.common import machine_info, md_table, summarize, write_results
from memoryd.store.filters import where as sql_where

KINDS = ("short", "question", "long")
FTS5_SQL = ("SELECT m.id, r.rank FROM (SELECT rowid, bm25(memories_fts, 1.0, 0.5, 0.5) AS rank "
            "FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rank LIMIT ?) r "
            "JOIN memories m ON m.rowid = r.rowid WHERE {where} ORDER BY r.rank LIMIT ?")
TS_RANK_SQL = ("SELECT m.id, ts_rank('{{0.1, 0.5, 0.5, 1.0}}'::float4[], m.search_vec, q, 1) AS s "
               "FROM memories m, to_tsquery('english', %s) q WHERE m.search_vec @@ q AND {where} "
               "ORDER BY s DESC, m.rowid LIMIT %s")


def log(msg: str) -> None:
    """Print a timestamped progress line."""
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def previous_keyword(store, text: str, filters, now: datetime, limit: int) -> list[str]:
    """The keyword ranking memoryd shipped before its own BM25 (its tables are still kept)."""
    from bench.scale.pg_tools import tsquery_text
    from memoryd.retrieval.fts import match_expression

    where, params = sql_where(filters, now, store.db.dialect)
    if store.backend == "sqlite":
        expression = match_expression(text)
        if expression is None:
            return []
        rows = store.db.connection().execute(FTS5_SQL.format(where=where),
                                   [expression, max(200, limit * 4), *params, limit]).fetchall()
        return [r[0] for r in rows]
    query = tsquery_text(text)
    if query is None:
        return []
    with store.db.read() as conn:
        return [r[0] for r in conn.execute(TS_RANK_SQL.format(where=where),
                                           [query, *params, limit]).fetchall()]


def variants(mem, embedder, queries: list[str], qvecs: np.ndarray) -> dict[str, Callable[[int], Any]]:
    """Every measured step as a call taking the query's index."""
    from memoryd.engine.memory.instruction_topics import topic_cosines
    from memoryd.models import SearchFilters
    from memoryd.retrieval.tokens import query_terms
    from memoryd.store.base import Store

    store, f = mem.store, SearchFilters()
    s = mem.settings
    now = datetime.now(timezone.utc)
    terms = [query_terms(q) for q in queries]
    kw = {i: [c.memory_id for c in store.keyword_candidates(
        terms[i], f, now=now, limit=50, k1=s.bm25_k1, b=s.bm25_b).candidates] for i in range(len(queries))}
    vec = {i: [h.memory_id for h in store.vector_search(qvecs[i], f, now=now, limit=50)]
           for i in range(len(queries))}
    topics = {i: [c.topic for c in store.term_counts(list(dict.fromkeys(kw[i] + vec[i])), [])]
              for i in range(len(queries))}
    return {
        "keyword candidates, memoryd BM25 (pool 50)": lambda i: store.keyword_candidates(
            terms[i], f, now=now, limit=50, k1=s.bm25_k1, b=s.bm25_b),
        "keyword, previous ranking (pool 50)": lambda i: previous_keyword(store, queries[i], f, now, 50),
        "vector candidates (pool 50)": lambda i: store.vector_search(qvecs[i], f, now=now, limit=50),
        "term counts of the vector candidates": lambda i: store.term_counts(
            [m for m in vec[i] if m not in set(kw[i])], terms[i]),
        "cosines of the keyword candidates": lambda i: store.cosines(kw[i], qvecs[i]),
        "cosines, vectors fetched into Python (the contract's default)":
            lambda i: Store.cosines(store, kw[i], qvecs[i]),
        "Engine.search, query vector given": lambda i: mem.search(
            queries[i], 10, query_vector=qvecs[i], record_access=False),
        "Engine.search, query vector given, no associations": lambda i: mem.search(
            queries[i], 10, query_vector=qvecs[i], record_access=False, associations=False),
        "instruction topics of the candidates (topic reading)":
            lambda i: topic_cosines(mem._ctx, topics[i], qvecs[i]),
        "Engine.search, query vector given, without instruction topics":
            lambda i: _without_topics(lambda: mem.search(queries[i], 10, query_vector=qvecs[i],
                                                         record_access=False)),
        "query embedding": lambda i: embedder.embed([queries[i]]),
        "Engine.search end to end, instruction topics read from the content (before)":
            lambda i: _topics_from_content(store, lambda: mem.search(queries[i], 10,
                                                                     record_access=False)),
        "Engine.search end to end": lambda i: mem.search(queries[i], 10, record_access=False),
        "Engine.search end to end, vector side after the keyword side (before)":
            lambda i: _sides_in_turn(lambda: mem.search(queries[i], 10, record_access=False)),
        "Engine.search end to end, query embedded first (no overlap)": lambda i: mem.search(
            queries[i], 10, query_vector=embedder.embed([queries[i]])[0], record_access=False),
    }


def _without_topics(search: Callable[[], Any]) -> Any:
    """``search()`` with the instruction-topic reading skipped (every reading 0)."""
    from memoryd.engine.memory import candidates

    shipped = candidates.topic_cosines
    candidates.topic_cosines = lambda ctx, ids, vector: [0.0] * len(ids)
    try:
        return search()
    finally:
        candidates.topic_cosines = shipped


class _InTurn:
    """A stand-in for the vector-side pool: the job runs when its result is asked for, i.e.
    on the caller's thread after the keyword side (the read path before the sides overlapped)."""

    def submit(self, fn: Callable[..., Any], *args: Any) -> Any:
        class Deferred:
            def result(self) -> Any:
                return fn(*args)

        return Deferred()


def _sides_in_turn(search: Callable[[], Any]) -> Any:
    """``search()`` with the vector side run after the keyword side on the same thread."""
    from memoryd.engine.memory import candidates

    shipped = candidates.workers.pool
    candidates.workers.pool = lambda name: _InTurn() if name == "vector-side" else shipped(name)
    try:
        return search()
    finally:
        candidates.workers.pool = shipped


def _topics_from_content(store: Any, search: Callable[[], Any]) -> Any:
    """``search()`` with the instruction topics read as before: the first characters of every
    candidate's content fetched by one more statement, and the topic read from them."""
    from memoryd.engine.memory import candidates
    from memoryd.engine.memory import search as search_module
    from memoryd.retrieval.instructions import SCAN_CHARS, instruction_topic

    shipped_gather, shipped_topics = search_module.gather, candidates.topic_cosines
    ids: list[str] = []

    def gather(*args: Any, **kwargs: Any) -> Any:
        evidence = shipped_gather(*args, **kwargs)
        ids[:] = [c.memory_id for c in evidence.candidates]
        return evidence

    def from_content(ctx: Any, _given: Any, vector: Any) -> list[float]:
        heads = _content_heads(store, ids, SCAN_CHARS)
        return shipped_topics(ctx, [instruction_topic(heads.get(i, "")) for i in ids], vector)

    search_module.gather, candidates.topic_cosines = gather, from_content
    try:
        return search()
    finally:
        search_module.gather, candidates.topic_cosines = shipped_gather, shipped_topics


def _content_heads(store: Any, ids: list[str], chars: int) -> dict[str, str]:
    """The statement the read path ran for instruction topics before the topic column."""
    if store.backend == "sqlite":
        rows = store.db.connection().execute(f"SELECT id, substr(content, 1, ?) FROM memories "
                                   f"WHERE id IN ({', '.join('?' * len(ids))})",
                                   [chars, *ids]).fetchall()
    else:
        with store.db.read() as conn:
            rows = conn.execute("SELECT id, left(content, %s) FROM memories WHERE id = ANY(%s)",
                                (chars, ids)).fetchall()
    return {r[0]: r[1] for r in rows}


def measure(calls: dict[str, Callable[[int], Any]], n: int, warmup: int = 10) -> dict[str, Any]:
    """Wall and thread-CPU times of every call on queries 0..n-1, the calls interleaved."""
    for i in range(min(warmup, n)):
        for call in calls.values():
            call(i)
    wall: dict[str, list[float]] = {name: [] for name in calls}
    cpu: dict[str, list[float]] = {name: [] for name in calls}
    for i in range(n):
        for name, call in calls.items():
            c0, t0 = time.thread_time(), time.perf_counter()
            call(i)
            wall[name].append((time.perf_counter() - t0) * 1000)
            cpu[name].append((time.thread_time() - c0) * 1000)
    return {name: {**summarize(wall[name]), "thread_cpu_p50_ms": round(statistics.median(cpu[name]), 2)}
            for name in calls}


def matches(store, queries: list[str]) -> dict[str, float]:
    """How many memories hold at least one query term (what keyword ranking must score)."""
    from memoryd.retrieval.tokens import query_terms

    counts = []
    for q in queries:
        terms = query_terms(q)
        if not terms:
            counts.append(0)
            continue
        mark = "?" if store.backend == "sqlite" else "%s"
        sql = ("SELECT count(DISTINCT memory_rowid) FROM memory_terms WHERE term IN "
               f"({', '.join([mark] * len(terms))})")
        if store.backend == "sqlite":
            counts.append(store.db.connection().execute(sql, terms).fetchone()[0])
        else:
            with store.db.read() as conn:
                counts.append(conn.execute(sql, terms).fetchone()[0])
    return {"p50": statistics.median(counts), "p95": float(np.percentile(counts, 95))}


def run_one(backend: str, n: int, per_set: int, embedder, pg_base: str | None,
            synthetic_beyond: int = 0, torch=None) -> dict[str, Any]:
    """Build (or reuse) the store of ``n`` memories on ``backend`` and time every variant;
    with ``torch`` (a second embedder of the same model) also search through it."""
    torch = torch or embedder
    import memoryd
    from bench.latency.corpus import generate_queries
    from bench.scale.run import build, corpus_and_vectors, url_for

    corpus, vectors = corpus_and_vectors(n, synthetic_beyond, embedder)
    url = url_for(backend, n, pg_base)
    built = build(backend, url, corpus, vectors, embedder, False)
    queries = [q for kind in KINDS for q, _ in generate_queries(corpus, per_set, kind)]
    qvecs = embedder.embed(queries)
    out: dict[str, Any] = {"build": built, "queries": len(queries),
                           "load_before": os.getloadavg()}
    with memoryd.open(url, embedder=embedder) as mem, memoryd.open(url, embedder=torch) as other:
        out["memories"] = mem.store.count()
        out["matching_memories"] = matches(mem.store, queries)
        calls = variants(mem, embedder, queries, qvecs)
        if torch is not embedder:
            calls["query embedding, torch (MEMORYD_EMBEDDER=local)"] = lambda i: torch.embed(
                [queries[i]])
            calls["Engine.search end to end, torch"] = lambda i: other.search(
                queries[i], 10, record_access=False)
        out["latency"] = measure(calls, len(queries))
    out["load_after"] = os.getloadavg()
    new, old = (out["latency"][k]["p50_ms"] for k in (
        "keyword candidates, memoryd BM25 (pool 50)", "keyword, previous ranking (pool 50)"))
    out["keyword_ratio_new_over_previous"] = round(new / old, 3) if old else None
    overlap, first = (out["latency"][k]["p50_ms"] for k in (
        "Engine.search end to end", "Engine.search end to end, query embedded first (no overlap)"))
    out["overlap_ratio"] = round(overlap / first, 3) if first else None
    with_, without = (out["latency"][k]["p50_ms"] for k in (
        "Engine.search, query vector given",
        "Engine.search, query vector given, without instruction topics"))
    out["topics_ratio"] = round(with_ / without, 3) if without else None
    for key, (now_, before) in {
        "sides_ratio": ("Engine.search end to end",
                        "Engine.search end to end, vector side after the keyword side (before)"),
        "topic_column_ratio": ("Engine.search end to end",
                               "Engine.search end to end, instruction topics read from the "
                               "content (before)"),
    }.items():
        a, b = (out["latency"][k]["p50_ms"] for k in (now_, before))
        out[key] = round(a / b, 3) if b else None
    return out


def render(r: dict[str, Any]) -> str:
    """The markdown summary of a run."""
    lines = ["# Search latency with memoryd's own keyword ranking", "",
             f"Run {r['started']} with `{r['command']}` on {r['machine']['cpus']} CPUs "
             f"({r['machine']['cpu_model']}), shared with other work (load averages per run below). "
             "Medians over every query; each query runs every variant in turn. Budget (DESIGN.md §6): "
             "search at 100k p50 <= 30 ms end to end with the query embedding, <= 10 ms without."
             + (f" Queries embedded by {r['embedder']} (all-MiniLM-L6-v2)." if r.get("embedder") else "")
             + (f" Vectors: the first {r['synthetic_beyond']:,} texts embedded with all-MiniLM-L6-v2, "
                "every later memory a noisy copy of one of them (texts are all distinct)."
                if r.get("synthetic_beyond") else ""), ""]
    for key, e in r["runs"].items():
        lat = e["latency"]
        lines += [f"## {key}: {e['memories']:,} memories, {e['queries']} queries", "",
                  f"Memories holding a query term: p50 {e['matching_memories']['p50']:,.0f}, p95 "
                  f"{e['matching_memories']['p95']:,.0f}. Load average before/after: "
                  f"{tuple(round(x, 1) for x in e['load_before'])} / "
                  f"{tuple(round(x, 1) for x in e['load_after'])}. Keyword candidates, memoryd BM25 "
                  f"vs the previous ranking (p50): x{e['keyword_ratio_new_over_previous']}."
                  + (f" End to end with the query embedded while the keyword side runs vs embedded "
                     f"first (p50): x{e['overlap_ratio']}." if e.get("overlap_ratio") else "")
                  + (f" Query vector given, with vs without the instruction-topic reading (p50): "
                     f"x{e['topics_ratio']}." if e.get("topics_ratio") else "")
                  + (f" End to end, the vector side on a worker alongside the keyword side vs "
                     f"after it (p50): x{e['sides_ratio']}." if e.get("sides_ratio") else "")
                  + (f" End to end, instruction topics handed over with the candidates vs read "
                     f"from the content by one more statement (p50): x{e['topic_column_ratio']}."
                     if e.get("topic_column_ratio") else ""), ""]
        lines.append(md_table(["what", "p50 ms", "p95 ms", "thread CPU p50 ms"],
                              [[name, s["p50_ms"], s["p95_ms"], s["thread_cpu_p50_ms"]]
                               for name, s in lat.items()]))
        lines.append("")
    if r.get("write_cost"):
        lines += ["## What keeping the keyword index costs a write", "",
                  "bench/latency/write_terms.py: `store.insert` into fresh stores, 500 memories per call "
                  "and one per call, the three stores taking turns call by call; 'as shipped' also keeps "
                  "the full-text index search no longer reads, 'terms only' drops it, 'full text only' "
                  "is the write path before the term tables. PostgreSQL's own work is in its server "
                  "process: compare it by wall time.", ""]
        rows = [[b, v, c["bulk_per_s_cpu"], c["bulk_per_s_wall"], c["single_p50_ms_cpu"],
                 c["single_p50_ms_wall"]] for b, cost in r["write_cost"].items() for v, c in cost.items()]
        lines.append(md_table(["backend", "write path", "bulk /s (CPU)", "bulk /s (wall)",
                               "single p50 ms (CPU)", "single p50 ms (wall)"], rows))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Run the bench and write bench/results/search_ranking.{json,md}."""
    from memoryd.config import Settings

    p = argparse.ArgumentParser(prog="python -m bench.latency.search_ranking", description=__doc__)
    p.add_argument("--sizes", default="10000,100000")
    p.add_argument("--backends", default="sqlite,postgresql")
    p.add_argument("--per-set", type=int, default=60)
    p.add_argument("--pg-url", default=None)
    p.add_argument("--embedder", default=Settings.model_fields["embedder"].default,
                   help="runtime of the query embedding: onnx (the default) or local (torch)")
    p.add_argument("--compare-torch", action="store_true",
                   help="also embed and search with the torch runtime, interleaved")
    p.add_argument("--name", default="search_ranking",
                   help="results file name under bench/results (default: search_ranking)")
    p.add_argument("--skip-write-cost", action="store_true",
                   help="leave out the write cost of the keyword index")
    p.add_argument("--synthetic-beyond", type=int, default=0,
                   help="embed only the first K texts; later memories get a noisy copy of an "
                        "embedded vector (as bench.scale does; 0 = embed every text)")
    argv = sys.argv[1:] if argv is None else argv
    args = p.parse_args(argv)
    from bench.latency.stores import isolate_settings
    from bench.scale.run import pg_base_url, pg_url_for
    from memoryd.embed import make_embedder

    isolate_settings()
    embedder = make_embedder(Settings(embedder=args.embedder))  # the query side; memories' vectors are cached
    embedder.load()
    torch = None
    if args.compare_torch and args.embedder != "local":
        torch = make_embedder(Settings(embedder="local"))
        torch.load()
    backends = [b for b in args.backends.split(",") if b]
    pg_base = pg_base_url(args.pg_url) if "postgresql" in backends else None
    result: dict[str, Any] = {"started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                              "command": "python -m bench.latency.search_ranking " + " ".join(argv),
                              "machine": machine_info(), "synthetic_beyond": args.synthetic_beyond,
                              "embedder": type(embedder).__name__,
                              "runs": {}}
    from bench.latency import write_terms

    for backend in [] if args.skip_write_cost else backends:
        log(f"{backend}: write cost of the keyword index")
        maker = (write_terms.sqlite_maker() if backend == "sqlite"
                 else write_terms.postgres_maker(pg_url_for(pg_base, 0)))
        result.setdefault("write_cost", {})[backend] = write_terms.write_cost(backend, maker)
    for n in (int(x) for x in args.sizes.split(",") if x):
        for backend in backends:
            log(f"{backend} at {n}")
            result["runs"][f"{backend}, {n:,}"] = run_one(backend, n, args.per_set, embedder, pg_base,
                                                                args.synthetic_beyond, torch)
            write_results(args.name, result, render(result))
    log(f"wrote bench/results/{args.name}.{{json,md}}")


if __name__ == "__main__":
    main()
