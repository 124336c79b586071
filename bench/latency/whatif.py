"""What-if measurements at the largest store: the hot spots of search, and cheaper variants.

Everything here runs against the real store in the benchmark process; src/ is not changed.
A variant that re-implements a store method (marked "alt") uses the store's own SQL
helpers and shows its top-k overlap with the current implementation.
Each variant is isolated in try/except: src/ changes under us, and one broken variant must
not lose the rest of the run.
"""

from __future__ import annotations

import time
import traceback
from typing import Any, Callable

import numpy as np

from bench.common import summarize
from memoryd.store.filters import where as sql_where


def _timed(fn: Callable[[int], Any], n: int, warmup: int = 5) -> tuple[dict[str, Any], list[Any]]:
    for i in range(min(warmup, n)):
        fn(i)
    times, out = [], []
    for i in range(n):
        t0 = time.perf_counter()
        out.append(fn(i))
        times.append((time.perf_counter() - t0) * 1000.0)
    return summarize(times), out


def _overlap(a: list[list[str]], b: list[list[str]]) -> float:
    scores = [len(set(x) & set(y)) / max(1, len(set(x))) for x, y in zip(a, b)]
    return round(float(np.mean(scores)), 4) if scores else float("nan")


def run_all(
    mem, queries: dict[str, list[tuple[str, int]]], qvecs: dict[str, np.ndarray], per_set: int = 67
) -> dict[str, Any]:
    from memoryd.models import SearchFilters

    store = mem.store
    texts = [q for k in queries for q, _ in queries[k][:per_set]]
    vecs = np.concatenate([qvecs[k][:per_set] for k in queries])
    n = len(texts)
    rows: list[dict[str, Any]] = []
    errors: dict[str, str] = {}
    results: dict[str, list[Any]] = {}
    hot = SearchFilters(tiers=["hot"])
    plain = SearchFilters()

    def now():
        return mem.context.clock()

    def add(
        key: str,
        label: str,
        fn: Callable[[int], Any],
        note: str = "",
        ids: Callable[[Any], list[str]] | None = None,
    ) -> None:
        try:
            summary, out = _timed(fn, n)
        except Exception as exc:  # noqa: BLE001 - record and go on
            errors[key] = f"{type(exc).__name__}: {exc} | {traceback.format_exc(limit=2)[-300:]}"
            return
        if ids is not None:
            results[key] = [ids(o) for o in out]
        rows.append(
            {
                "key": key,
                "label": label,
                "p50_ms": summary["p50_ms"],
                "p95_ms": summary["p95_ms"],
                "n": summary["n"],
                "note": note,
            }
        )

    vec_ids = lambda hits: [h.memory_id for h in hits]  # noqa: E731
    hit_ids = lambda hits: [h.memory.id for h in hits]  # noqa: E731

    # --- the whole read path, with its optional stages switched off -------------
    add(
        "search_default",
        "mem.search(q, 10, query_vector=v) as shipped",
        lambda i: mem.search(texts[i], 10, query_vector=vecs[i]),
        ids=hit_ids,
    )
    for key, kwargs, label in (
        (
            "search_no_record",
            {"record_access": False},
            "... record_access=False (no write per search)",
        ),
        ("search_no_assoc", {"associations": False}, "... associations=False"),
        ("search_no_cognitive", {"cognitive": False}, "... cognitive=False"),
        (
            "search_bare",
            {"record_access": False, "associations": False, "cognitive": False},
            "... all three off",
        ),
        (
            "search_bare_tiers_given",
            {
                "record_access": False,
                "associations": False,
                "cognitive": False,
                "tiers": ["hot", "warm", "cold"],
            },
            "... all three off, tiers given (skips the tier passes)",
        ),
    ):
        add(
            key,
            label,
            lambda i, kw=kwargs: mem.search(texts[i], 10, query_vector=vecs[i], **kw),
            ids=hit_ids,
        )

    # --- vector side -----------------------------------------------------------------
    add(
        "vector_search_hot",
        "store.vector_search(v, tiers=[hot], 50) (the default tier pass)",
        lambda i: store.vector_search(vecs[i], hot, now=now(), limit=50),
        ids=vec_ids,
    )
    add(
        "vector_search_scope",
        "store.vector_search(v, scope='user', 50) (write-path duplicate check)",
        lambda i: store.vector_search(vecs[i], SearchFilters(scope="user"), now=now(), limit=50),
    )
    add(
        "vector_search_plain",
        "store.vector_search(v, no filter, 50)",
        lambda i: store.vector_search(vecs[i], plain, now=now(), limit=50),
        ids=vec_ids,
    )

    def post_filtered(i: int, filters=hot, limit: int = 50):
        """alt: unfiltered index search, filter the hits in SQL, widen if too few survive."""
        where, params = sql_where(filters, now(), store.db.dialect)
        index = store.vector_cache.index
        want = limit
        while True:
            hits = index.search(vecs[i], want)
            resolved = store.vector_cache._resolve(hits, where, params)
            if len(resolved) >= limit or want >= len(index):
                return resolved[:limit]
            want = min(len(index), want * 4)

    add(
        "vector_search_hot_postfilter",
        "alt: tiers=[hot] as a post-filter (index, then SQL)",
        post_filtered,
        note="what _is_selective should do when the filter keeps most rows",
        ids=vec_ids,
    )

    def allowed_rowids(i: int):
        where, params = sql_where(hot, now(), store.db.dialect)
        rows = store.db.connection().execute(
            f"SELECT m.rowid FROM memories m WHERE {where}", params
        ).fetchall()
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))

    add("allowed_rowids_sql", "part: SELECT rowid of every hot memory (+ fromiter)", allowed_rowids)
    allowed = allowed_rowids(0)
    add(
        "allowed_to_set",
        f"part: set(allowed.tolist()) of {len(allowed):,} keys",
        lambda i: set(allowed.tolist()),
    )
    add(
        "index_search_allowed",
        f"part: VectorIndex.search(v, 50, allowed={len(allowed):,} keys)",
        lambda i: store.vector_cache.index.search(vecs[i], 50, allowed=allowed),
    )
    add(
        "index_search_plain",
        "part: VectorIndex.search(v, 50)",
        lambda i: store.vector_cache.index.search(vecs[i], 50),
    )

    def exact_subset_alt(i: int, k: int = 50):
        """alt exact subset: one matvec over the contiguous matrix, mask by np.isin (no copy)."""
        idx = store.vector_cache.index
        n_rows = idx._n
        sims = idx._matrix[:n_rows] @ np.asarray(vecs[i], dtype=np.float32)
        keep = np.isin(idx._keys[:n_rows], allowed) & idx._alive[:n_rows]
        sims = np.where(keep, sims, -np.inf)
        return idx._top(sims, idx._keys[:n_rows], k)

    if not store.vector_cache.index.uses_hnsw:
        add(
            "index_exact_subset_alt",
            "alt: exact subset as full matvec + np.isin mask",
            exact_subset_alt,
            note="no per-key Python loop, no fancy-index copy of the rows",
        )
    try:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1, user_api="blas"):
            add(
                "index_search_allowed_blas1",
                "... VectorIndex.search(allowed) with NumPy BLAS 1 thread",
                lambda i: store.vector_cache.index.search(vecs[i], 50, allowed=allowed),
            )
            add(
                "vector_search_hot_blas1",
                "... store.vector_search(tiers=[hot]) with BLAS 1 thread",
                lambda i: store.vector_search(vecs[i], hot, now=now(), limit=50),
            )
            add(
                "search_default_blas1",
                "... mem.search(q, 10, query_vector=v) with BLAS 1 thread",
                lambda i: mem.search(texts[i], 10, query_vector=vecs[i]),
            )
            add(
                "search_e2e_blas1",
                "... mem.search(q, 10) end to end with BLAS 1 thread",
                lambda i: mem.search(texts[i], 10),
            )
        add(
            "search_e2e",
            "mem.search(q, 10) end to end as shipped (same queries)",
            lambda i: mem.search(texts[i], 10),
        )
    except ImportError:
        errors["blas1"] = "threadpoolctl not installed"

    # --- keyword side ----------------------------------------------------------------
    add(
        "keyword_search_hot",
        "store.keyword_search(q, tiers=[hot], 50) as shipped",
        lambda i: store.keyword_search(texts[i], hot, now=now(), limit=50),
        ids=lambda hits: [h.memory_id for h in hits],
    )
    try:
        from memoryd.retrieval.fts import match_expression

        weights = "1.0, 0.5, 0.5"  # the FTS5 column weights memoryd ranked by before its own BM25

        def fts_first(i: int, filters=hot, limit: int = 50, over: int = 4):
            """alt: top (limit x over) from FTS5 alone, then join + filter; full query if short."""
            expression = match_expression(texts[i])
            if expression is None:
                return []
            where, params = sql_where(filters, now(), store.db.dialect)
            rows = store.db.connection().execute(
                f"SELECT m.id, f.rank FROM (SELECT rowid, bm25(memories_fts, {weights}) AS rank "
                f"FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rank LIMIT ?) AS f "
                f"JOIN memories m ON m.rowid = f.rowid WHERE {where} ORDER BY f.rank LIMIT ?",
                [expression, limit * over, *params, limit],
            ).fetchall()
            if len(rows) < limit:
                hits = store.keyword_search(texts[i], filters, now=now(), limit=limit)
                return [h.memory_id for h in hits]
            return [r[0] for r in rows]

        add(
            "keyword_fts_first",
            "alt: FTS5 top-200 first, then join memories + filter",
            fts_first,
            note="falls back to the current query when fewer than 50 survive",
            ids=lambda r: r,
        )

        # Document frequency of each query term as FTS5 sees it (porter-stemmed), counted
        # once before timing: a real implementation would keep such a cache (or read
        # fts5vocab); the timed variant only looks terms up.
        conn = store.db.connection()
        from memoryd.retrieval.fts import query_terms

        df: dict[str, int] = {}
        for text in texts:
            for term in query_terms(text) or query_terms(text, keep_stopwords=True):
                if term not in df:
                    df[term] = conn.execute(
                        "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?",
                        [f'"{term}"'],
                    ).fetchone()[0]
        total_docs = len(store.vector_cache.index) or 1

        def pruned_expression(text: str, max_share: float = 0.05):
            """Query terms minus those in more than max_share of rows (keep the 3 rarest anyway)."""
            terms = query_terms(text) or query_terms(text, keep_stopwords=True)
            if not terms:
                return None
            scored = sorted(terms, key=lambda t: df.get(t, 0))
            kept = [t for t in scored if df.get(t, 0) <= max_share * total_docs]
            if len(kept) < min(3, len(scored)):
                kept = scored[: min(3, len(scored))]
            return " OR ".join(f'"{t}"' for t in kept)

        def fts_first_pruned(i: int, filters=hot, limit: int = 50, over: int = 4):
            expression = pruned_expression(texts[i])
            if expression is None:
                return []
            where, params = sql_where(filters, now(), store.db.dialect)
            rows = conn.execute(
                f"SELECT m.id, f.rank FROM (SELECT rowid, bm25(memories_fts, {weights}) AS rank "
                f"FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rank LIMIT ?) AS f "
                f"JOIN memories m ON m.rowid = f.rowid WHERE {where} ORDER BY f.rank LIMIT ?",
                [expression, limit * over, *params, limit],
            ).fetchall()
            return [r[0] for r in rows]

        add(
            "keyword_fts_first_pruned",
            "alt: FTS5 top-200 first, terms in > 5% of rows dropped (3 rarest always kept)",
            fts_first_pruned,
            note="changes results: see overlap",
            ids=lambda r: r,
        )

        from memoryd.retrieval.fusion import reciprocal_rank_fusion
        from memoryd.store.base import KeywordHit

        def stage(keyword_ids: list[str], vector_hits):
            fused = reciprocal_rank_fusion(
                [KeywordHit(memory_id=m, score=0.0) for m in keyword_ids], vector_hits, k=60
            )
            memories = store.get_many([f.memory_id for f in fused])
            return [memories[f.memory_id].id for f in fused if f.memory_id in memories][:10]

        def stage_shipped(i: int):
            kw = [h.memory_id for h in store.keyword_search(texts[i], hot, now=now(), limit=50)]
            return stage(kw, store.vector_search(vecs[i], hot, now=now(), limit=50))

        add(
            "stage_shipped",
            "candidates stage as shipped: keyword + vector (tiers=[hot]) + RRF + get_many",
            stage_shipped,
            ids=lambda r: r,
        )
        add(
            "stage_fixed",
            "alt: same stage, FTS-first keyword + post-filtered vector",
            lambda i: stage(fts_first(i), post_filtered(i)),
            ids=lambda r: r,
        )
        add(
            "stage_fixed_pruned",
            "alt: same stage, FTS-first with df pruning + post-filtered vector",
            lambda i: stage(fts_first_pruned(i), post_filtered(i)),
            ids=lambda r: r,
        )

        def fts_only(i: int):
            expression = match_expression(texts[i])
            return store.db.connection().execute(
                f"SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? "
                f"ORDER BY bm25(memories_fts, {weights}) LIMIT 50",
                [expression],
            ).fetchall()

        add("keyword_fts_alone", "part: the FTS5 MATCH + bm25 sort alone, no join", fts_only)

        def match_count(i: int):
            expression = match_expression(texts[i])
            return store.db.connection().execute(
                "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?", [expression]
            ).fetchone()[0]

        counts = [match_count(i) for i in range(n)]
    except Exception as exc:  # noqa: BLE001
        errors["keyword_alt"] = f"{type(exc).__name__}: {exc}"
        counts = []

    # --- hydration ---------------------------------------------------------------------
    ids100 = [f"bench-{i:07d}" for i in range(0, 100 * 37, 37)]
    add(
        "get_many_100",
        "part: store.get_many(100 ids) (all fused candidates)",
        lambda i: store.get_many(ids100),
    )
    add("get_many_10", "part: store.get_many(10 ids)", lambda i: store.get_many(ids100[:10]))

    overlaps = {}
    if "vector_search_hot" in results and "vector_search_hot_postfilter" in results:
        overlaps["vector_postfilter_vs_hot"] = _overlap(
            results["vector_search_hot"], results["vector_search_hot_postfilter"]
        )
    if "keyword_search_hot" in results and "keyword_fts_first" in results:
        overlaps["keyword_fts_first_vs_current"] = _overlap(
            results["keyword_search_hot"], results["keyword_fts_first"]
        )
    for key, base in (
        ("keyword_fts_first_pruned", "keyword_search_hot"),
        ("stage_fixed", "stage_shipped"),
        ("stage_fixed_pruned", "stage_shipped"),
    ):
        if key in results and base in results:
            overlaps[f"{key}_vs_{base}"] = _overlap(results[base], results[key])
    if "search_default" in results and "search_bare" in results:
        overlaps["search_bare_vs_default_top10"] = _overlap(
            results["search_default"], results["search_bare"]
        )
    by_key = {r["key"]: r for r in rows}
    for key, value in overlaps.items():
        target = {
            "vector_postfilter_vs_hot": "vector_search_hot_postfilter",
            "keyword_fts_first_vs_current": "keyword_fts_first",
            "search_bare_vs_default_top10": "search_bare",
        }.get(key, key.split("_vs_")[0])
        if target in by_key:
            by_key[target]["note"] = (by_key[target]["note"] + f"; top-k overlap {value}").strip(
                "; "
            )
    summary = {r["key"]: r["p50_ms"] for r in rows}
    out: dict[str, Any] = {
        "queries": n,
        "rows": rows,
        "overlaps": overlaps,
        "summary": summary,
        "errors": errors,
    }
    if counts:
        out["fts_matches_per_query"] = {
            "p50": float(np.percentile(counts, 50)),
            "p95": float(np.percentile(counts, 95)),
            "max": int(max(counts)),
        }
    return out
