"""Domains in the store and the engine, on BEAM (5,094 messages; bigger sets grow by noisy
copies of real vectors, see bench/domains/scale.py), on SQLite and PostgreSQL:

- **discovery through the engine**: sample, cluster, create the domains and assign every
  memory (one transaction); agreement with the conversation each message came from;
- **the write path**: inserting one memory alone against classifying it into the domains
  (cosine to every centroid, running mean of its best domain) and inserting it in one
  transaction, interleaved, with the vectors of unseen noisy copies (the model's time is the
  same either way and left out);
- **search**: ``Engine.search`` (hybrid, query vector given) without a filter against the same
  query limited to the domain of the message it came from, interleaved;
- **changes**: rename (rewrites every assignment), a new threshold (re-thresholds every memory
  from its scores) and a merge (re-assigns every memory).

    .venv/bin/python -m bench.domains_engine                     # 5094 and 20000, both backends
    .venv/bin/python -m bench.domains_engine --sizes 5094 --backends sqlite

Results: bench/results/domains_engine.{json,md}; the summary on top is bench/domains_engine/
findings.md.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np

from bench.common import machine_info, other_load, summarize, write_results
from bench.domains.data import load_corpus
from bench.domains.metrics import agreement
from bench.domains.scale import grow
from bench.domains_engine import stores
from bench.domains_engine.report import markdown
from memoryd.config import Settings
from memoryd.embed import LocalEmbedder
from memoryd.engine import Engine
from memoryd.engine.domains.assign import classify_new
from memoryd.store.base import Actor


def parse() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="5094,20000")
    ap.add_argument("--backends", default="sqlite,postgresql")
    ap.add_argument("--writes", type=int, default=200, help="timed single writes per variant")
    ap.add_argument("--queries", type=int, default=200, help="timed searches per variant")
    ap.add_argument("--seed", type=int, default=7)
    return ap.parse_args()


def main() -> None:
    args = parse()
    corpus = load_corpus()
    if corpus is None:
        print("BEAM data not found (../shared/data/beam or $MEMORYD_BEAM_DIR); nothing to do")
        return
    started = time.perf_counter()
    server = stores.pg_url(print) if "postgresql" in args.backends else None
    runs = []
    for size in [int(s) for s in args.sizes.split(",")]:
        vectors, truth, texts, _ = grow(corpus.vectors, corpus.labels, corpus.texts, size,
                                        args.seed)
        for backend in args.backends.split(","):
            print(f"{backend}, {size} memories")
            runs.append(one_run(backend, server, texts, vectors, truth, corpus, args))
    data = {"machine": machine_info(), "seconds": round(time.perf_counter() - started, 1),
            "args": vars(args), "runs": runs}
    paths = write_results("domains_engine", data, markdown(data))
    print("wrote", *paths)


def one_run(backend: str, server: str | None, texts: list[str], vectors: np.ndarray,
            truth: np.ndarray, corpus: Any, args: argparse.Namespace) -> dict[str, Any]:
    store = stores.open_store(backend, f"bench_domains_{len(texts)}", server)
    try:
        t0 = time.perf_counter()
        stores.fill(store, texts, vectors)
        filled = time.perf_counter() - t0
        engine = Engine(store, LocalEmbedder(), Settings(domains_auto=False))
        out: dict[str, Any] = {"backend": backend, "memories": len(texts),
                               "fill_s": round(filled, 1), "load_before": other_load()}
        out["discovery"] = discovery(engine, truth)
        print("  discovery", out["discovery"]["seconds"], "s")
        out["writes"] = writes(engine, corpus, args)
        print("  writes ratio", out["writes"]["ratio_p50"])
        out["search"] = search(engine, corpus, args)
        print("  search ratio", out["search"]["ratio_p50"])
        out["changes"] = changes(engine)
        print("  changes", out["changes"])
        return out
    finally:
        stores.drop(store)


def discovery(engine: Engine, truth: np.ndarray) -> dict[str, Any]:
    """Discover through the engine; agreement of each memory's best domain with its source."""
    t0 = time.perf_counter()
    report = engine.domains.discover(force=True)
    seconds = time.perf_counter() - t0
    names = {d.name: i for i, d in enumerate(report.domains)}
    memories = list(engine.store.iter_memories())[: len(truth)]
    labels = np.array([names[m.domains[0]] if m.domains else -1 for m in memories])
    multi = float(np.mean([len(m.domains) >= 2 for m in memories]))
    return {"seconds": round(seconds, 2), "domains": len(report.domains),
            "threshold": report.threshold, "unclassified_share": round(float(np.mean(labels < 0)), 4),
            "multi_share": round(multi, 4), **agreement(truth, labels)}


def writes(engine: Engine, corpus: Any, args: argparse.Namespace) -> dict[str, Any]:
    """One memory per transaction: insert alone, against classify + insert (interleaved)."""
    fresh, _, texts, _ = grow(corpus.vectors, corpus.labels, corpus.texts,
                              len(corpus.texts) + args.writes, args.seed + 1)
    fresh, texts = fresh[len(corpus.texts):], texts[len(corpus.texts):]
    store, ctx, actor = engine.store, engine.context, Actor("bench")
    times: dict[str, list[float]] = {"insert": [], "classify_insert": []}
    for i, (text, vector) in enumerate(zip(texts, fresh)):
        for variant in (("insert", "classify_insert") if i % 2 else
                        ("classify_insert", "insert")):
            m = stores.memory(text, 10_000_000 + 2 * i + (variant == "insert"))
            t0 = time.perf_counter()
            if variant == "insert":
                store.insert([m], vector[None, :], actor)
            else:
                with store.transaction():
                    (m,) = classify_new(ctx, [m], vector[None, :])
                    store.insert([m], vector[None, :], actor)
            times[variant].append((time.perf_counter() - t0) * 1000)
    return _compare(times, "insert", "classify_insert")


def search(engine: Engine, corpus: Any, args: argparse.Namespace) -> dict[str, Any]:
    """Hybrid search without a filter against the same query within its source's domain."""
    rng = np.random.default_rng(args.seed)
    picks = rng.choice(len(corpus.texts), size=args.queries, replace=False)
    memories = list(engine.store.iter_memories())
    times: dict[str, list[float]] = {"all": [], "one_domain": []}
    in_domain = []
    for n, i in enumerate(picks.tolist()):
        query, vector = corpus.texts[i][-1000:], corpus.vectors[i]
        domain = (memories[i].domains or [None])[0]
        if domain is None:
            continue
        for variant in (("all", "one_domain") if n % 2 else ("one_domain", "all")):
            extra = {"domains": [domain]} if variant == "one_domain" else {}
            t0 = time.perf_counter()
            hits = engine.search(query, 10, query_vector=vector, record_access=False, **extra)
            times[variant].append((time.perf_counter() - t0) * 1000)
            if extra:
                in_domain.append(all(domain in h.memory.domains for h in hits))
    out = _compare(times, "all", "one_domain")
    out["filtered_hits_in_domain"] = float(np.mean(in_domain)) if in_domain else None
    return out


def changes(engine: Engine) -> dict[str, float]:
    """Seconds for a rename, a new threshold and a merge of the two smallest domains."""
    smallest = sorted(engine.domains.list(), key=lambda d: d.member_count)
    threshold = engine.domains.threshold() or 0.3
    out = {}
    for name, call in (
        ("rename_s", lambda: engine.domains.rename(smallest[0].name, "renamed-by-bench")),
        ("threshold_s", lambda: engine.domains.set_threshold(round(threshold + 0.02, 2))),
        ("merge_s", lambda: engine.domains.merge(["renamed-by-bench", smallest[1].name])),
    ):
        t0 = time.perf_counter()
        call()
        out[name] = round(time.perf_counter() - t0, 2)
    return out


def _compare(times: dict[str, list[float]], base: str, other: str) -> dict[str, Any]:
    a, b = summarize(times[base]), summarize(times[other])
    return {base: a, other: b, "ratio_p50": round(b["p50_ms"] / a["p50_ms"], 3),
            "ratio_p95": round(b["p95_ms"] / a["p95_ms"], 3),
            "extra_p50_ms": round(b["p50_ms"] - a["p50_ms"], 3),
            "median_pair_ratio": round(statistics.median(
                y / x for x, y in zip(times[base], times[other]) if x > 0), 3)}
