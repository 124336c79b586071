"""Vector index decision: memoryd's exact NumPy path vs its usearch HNSW path, same run.

Both sides go through ``memoryd.store.sqlite.vector_index.VectorIndex`` (so the numbers include
its Python overhead) on real all-MiniLM-L6-v2 vectors of the synthetic corpus and real
query vectors. HNSW parameters are memoryd's: M=16, ef_add=128, cosine, f16 storage.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from bench.common import Stopwatch, summarize


def _times(fn: Callable[[np.ndarray], Any], queries: np.ndarray, warmup: int = 10):
    for q in queries[:warmup]:
        fn(q)
    times, results = [], []
    for q in queries:
        t0 = time.perf_counter()
        r = fn(q)
        times.append((time.perf_counter() - t0) * 1000.0)
        results.append(r)
    return times, results


Hits = list[list[tuple[int, float]]]


def _recall(approx: Hits, exact: Hits, k: int) -> float:
    total = 0.0
    for a, e in zip(approx, exact):
        truth = {key for key, _ in e[:k]}
        total += len(truth & {key for key, _ in a[:k]}) / max(1, len(truth))
    return round(total / len(exact), 4)


def _exact_index(vectors: np.ndarray):
    from memoryd.store.sqlite.vector_index import VectorIndex

    idx = VectorIndex(vectors.shape[1], hnsw_threshold=0)
    idx.upsert(range(1, len(vectors) + 1), vectors)
    return idx


def _blas_one_thread():
    """A context limiting NumPy's BLAS to one thread (threadpoolctl), or None."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return None
    return threadpool_limits(limits=1, user_api="blas")


def exact_curve(vectors: np.ndarray, queries: np.ndarray, sizes: list[int]) -> list[dict[str, Any]]:
    """Exact query p50/p95 (k=10 and k=50) at each size; k=50 also with BLAS on one thread."""
    out = []
    for n in sizes:
        idx = _exact_index(vectors[:n])
        t10, _ = _times(lambda q: idx.search(q, 10), queries)
        t50, _ = _times(lambda q: idx.search(q, 50), queries)
        row = {"n": n, "k10": summarize(t10), "k50": summarize(t50)}
        limiter = _blas_one_thread()
        if limiter is not None:
            with limiter:
                t50b, _ = _times(lambda q: idx.search(q, 50), queries)
            row["k50_blas1"] = summarize(t50b)
        out.append(row)
    return out


def compare_at(
    vectors: np.ndarray,
    queries: np.ndarray,
    n: int,
    efs: tuple[int, ...] = (64, 128, 256),
    dtype: str = "f16",
) -> dict[str, Any]:
    """Exact vs HNSW at one size: build time, query p50/p95, recall@10 and recall@50."""
    from memoryd.store.sqlite.vector_index import VectorIndex

    data = vectors[:n]
    exact = _exact_index(data)
    e10, r_e10 = _times(lambda q: exact.search(q, 10), queries)
    e50, r_e50 = _times(lambda q: exact.search(q, 50), queries)

    hnsw = VectorIndex(data.shape[1], hnsw_threshold=0)
    hnsw.upsert(range(1, n + 1), data)
    hnsw.hnsw_threshold = n
    if dtype != "f16":

        def patched():
            from usearch.index import Index

            return Index(
                ndim=hnsw.dims,
                metric="cos",
                dtype=dtype,
                connectivity=16,
                expansion_add=128,
                expansion_search=hnsw.ef_search,
            )

        hnsw._new_hnsw = patched
    with Stopwatch() as sw:
        hnsw.ensure_hnsw()
    assert hnsw.uses_hnsw
    out: dict[str, Any] = {
        "n": n,
        "dtype": dtype,
        "build_seconds": round(sw.seconds, 2),
        "build_cpu_seconds": round(sw.cpu_seconds, 2),
        "graph_memory_mb": round(hnsw._hnsw.memory_usage / 2**20, 1),
        "exact": {"k10": summarize(e10), "k50": summarize(e50)},
        "hnsw": {},
    }
    for ef in efs:
        hnsw._hnsw.expansion_search = ef
        h10, r_h10 = _times(lambda q: hnsw.search(q, 10), queries)
        h50, r_h50 = _times(lambda q: hnsw.search(q, 50), queries)
        out["hnsw"][f"ef{ef}"] = {
            "k10": summarize(h10),
            "k50": summarize(h50),
            "recall_at_10": _recall(r_h10, r_e10, 10),
            "recall_at_50": _recall(r_h50, r_e50, 50),
            "speedup_p50_k10": round(out["exact"]["k10"]["p50_ms"] / out_p50(h10), 2),
            "speedup_p50_k50": round(out["exact"]["k50"]["p50_ms"] / out_p50(h50), 2),
        }
    hnsw._hnsw.expansion_search = hnsw.ef_search
    out["_index"] = hnsw  # for the save/restore and insert measurements; dropped before JSON
    return out


def out_p50(times: list[float]) -> float:
    return summarize(times)["p50_ms"]


def save_restore(hnsw, vectors: np.ndarray, queries: np.ndarray) -> dict[str, Any]:
    """Save the graph, then restore it into a fresh index (memoryd's load) and as a mmap view."""
    from usearch.index import Index

    from memoryd.store.sqlite.vector_index import VectorIndex

    n = len(hnsw)
    with tempfile.TemporaryDirectory(dir=Path(__file__).resolve().parents[1] / ".cache") as tmp:
        path = Path(tmp) / "graph.usearch"
        with Stopwatch() as sw_save:
            hnsw.save_hnsw(path)
        fresh = VectorIndex(vectors.shape[1], hnsw_threshold=0)
        with Stopwatch() as sw_fill:
            fresh.upsert(range(1, n + 1), vectors[:n])
        fresh.hnsw_threshold = hnsw.hnsw_threshold
        with Stopwatch() as sw_load:
            ok = fresh.load_hnsw(path)
        same = [fresh.search(q, 10) == hnsw.search(q, 10) for q in queries[:50]]
        with Stopwatch() as sw_view:
            view = Index.restore(str(path), view=True)
        view_ok = view is not None and len(view) == n
        out = {
            "n": n,
            "file_mb": round(path.stat().st_size / 2**20, 1),
            "save_seconds": round(sw_save.seconds, 3),
            "load_seconds": round(sw_load.seconds, 3),
            "loaded_ok": bool(ok),
            "same_results_after_load": round(sum(same) / len(same), 3),
            "matrix_fill_seconds": round(sw_fill.seconds, 3),
            "mmap_view_seconds": round(sw_view.seconds, 4),
            "mmap_view_ok": bool(view_ok),
        }
        del view, fresh
    return out


def incremental_insert(
    hnsw, vectors: np.ndarray, n_single: int = 200, batch: int = 256
) -> dict[str, Any]:
    """Adding new vectors to a built graph: one at a time (single add) and a 256 batch."""
    rng = np.random.default_rng(0)
    base = len(hnsw) + 10_000_000
    # New vectors: stored vectors with a little noise, renormalised (realistic neighbourhoods).
    src = vectors[rng.integers(0, len(hnsw), n_single + batch + 10)]
    new = src + rng.normal(0, 0.02, src.shape).astype(np.float32)
    new /= np.linalg.norm(new, axis=1, keepdims=True)
    times = []
    for i in range(n_single + 10):
        t0 = time.perf_counter()
        hnsw.upsert([base + i], new[i : i + 1])
        if i >= 10:
            times.append((time.perf_counter() - t0) * 1000.0)
    keys = list(range(base + n_single + 10, base + n_single + 10 + batch))
    with Stopwatch() as sw:
        hnsw.upsert(keys, new[n_single + 10 : n_single + 10 + batch])
    return {
        "single_upsert": summarize(times),
        "batch": batch,
        "batch_upsert_seconds": round(sw.seconds, 3),
        "batch_per_vector_ms": round(sw.seconds * 1000 / batch, 3),
    }


def _crossing(xs: list[float], ys: list[float], limit: float) -> float | None:
    """First x where the piecewise-linear curve through (xs, ys) reaches ``limit``."""
    for (x0, y0), (x1, y1) in zip(zip(xs, ys), zip(xs[1:], ys[1:])):
        if y0 >= limit:
            return x0
        if y1 >= limit:
            return x0 + (limit - y0) * (x1 - x0) / (y1 - y0)
    return None


def threshold_recommendation(
    exact: list[dict[str, Any]], compared: list[dict[str, Any]]
) -> dict[str, Any]:
    """Where HNSW starts to pay off, from this run's numbers.

    HNSW (ef 128, k 50 — memoryd asks the index for the 50-candidate pool) costs about
    the same at every size here; exact search grows with the size. HNSW "pays off" once
    exact search costs more than HNSW by a margin worth its price (build time on an open
    without a saved graph, a synchronous build inside the add() that crosses the
    threshold, ~1 ms per incremental insert, recall < 1): the size where exact p50 (k=50)
    exceeds max(2 ms, 2 x HNSW p50) — 2 ms is 20% of the 10 ms no-embedding search budget.
    Sizes are read off the measured curve by linear interpolation, for the shipped path
    and for the exact path with NumPy's BLAS on one thread (the recommended setting).
    """
    xs = [float(e["n"]) for e in exact]
    hnsw_p50 = float(np.median([c["hnsw"]["ef128"]["k50"]["p50_ms"] for c in compared]))
    limit = max(2.0, 2 * hnsw_p50)
    out: dict[str, Any] = {
        "hnsw_ef128_k50_p50_ms_median_over_sizes": round(hnsw_p50, 3),
        "payoff_rule": "exact p50 (k=50) > max(2 ms, 2 x HNSW ef128 p50)",
        "limit_ms": round(limit, 3),
    }
    for key, label in (("k50", "shipped"), ("k50_blas1", "blas1")):
        if not all(key in e for e in exact):
            continue
        ys = [float(e[key]["p50_ms"]) for e in exact]
        even = _crossing(xs, ys, hnsw_p50)
        pay = _crossing(xs, ys, limit)
        out[f"exact_{label}_p50_ms_by_size"] = {int(x): y for x, y in zip(xs, ys)}
        out[f"size_where_exact_equals_hnsw_{label}"] = int(even) if even is not None else None
        out[f"size_where_rule_holds_{label}"] = int(pay) if pay is not None else None
    basis = out.get("size_where_rule_holds_blas1") or out.get("size_where_rule_holds_shipped")
    if basis is None:
        out["recommended_hnsw_threshold"] = None
        out["note"] = "exact search stayed under the limit at every measured size"
    else:
        out["recommended_hnsw_threshold"] = int(max(5_000, round(basis / 5_000) * 5_000))
    return out
