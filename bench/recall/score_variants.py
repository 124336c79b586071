"""Ways to read the answer score from a (query, memory) pair, compared held out on three kinds
of data: does a reading separate a real answer from noise better than cosine and word
coverage alone?

    .venv/bin/python -m bench.recall.score_variants     # results/recall_score.{json,md}

Readings (every one depends on the pair and on fixed reference texts only, never on the
user's store):

- ``cosine``, ``coverage``: what the shipped score reads (:mod:`memoryd.retrieval.answer`);
- ``query z``: the cosine's z-score against the query's cosines to a fixed cohort of generic
  memories (``bench/recall/cohort.txt``, written for this bench): how unusual this similarity is for this
  query (Z-normalisation, as in speaker verification);
- ``memory z``: the same against the memory's cosines to the cohort (T-normalisation);
- ``s-norm``: the mean of the two.

Each model is fitted on the fixed-ratio sample of two data sets (:mod:`bench.recall.answer_fit`)
and checked on the third: on that sample and on the hits ``Engine.search`` really returned
(the top 10 of every query, from :mod:`bench.recall.engine_sets`' run of this version). Each
model's threshold is chosen by the shipped rule (the largest keeping, on every data set held
out, 95% of the answerable questions whose answer is in the top 10). A new user's five-fact
store is scored with each (reported, never fitted on).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.recall import sets  # noqa: E402
from bench.recall.answer_fit import RATIO, readings_of  # noqa: E402
from bench.recall.answer_report import CANDIDATE_THRESHOLDS, KEEP, NEW_USER_FACTS, NEW_USER_QUERIES  # noqa: E402
from bench.recall.fit import logistic_weighted, reliability  # noqa: E402
from bench.recall.pools import Asked, asks, build_store  # noqa: E402

#: Knots of the monotone piecewise-linear cosine and coverage readings.
COSINE_KNOTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 1.0)
COVERAGE_KNOTS = (0.0, 0.34, 0.67, 1.0)
RAMPS = tuple(f"cosine {lo:g}-{hi:g}" for lo, hi in zip(COSINE_KNOTS, COSINE_KNOTS[1:])) + tuple(
    f"coverage {lo:g}-{hi:g}" for lo, hi in zip(COVERAGE_KNOTS, COVERAGE_KNOTS[1:]))
READINGS = ("cosine", "coverage", "query z", "memory z", "s-norm", *RAMPS)
COSINE_RAMPS = tuple(r for r in RAMPS if r.startswith("cosine"))
COVERAGE_RAMPS = tuple(r for r in RAMPS if r.startswith("coverage"))
VARIANTS: dict[str, tuple[str, ...]] = {
    "cosine + coverage (shipped)": ("cosine", "coverage"),
    "query z + coverage": ("query z", "coverage"),
    "cosine + query z + coverage": ("cosine", "query z", "coverage"),
    "s-norm + coverage": ("s-norm", "coverage"),
    "cosine + s-norm + coverage": ("cosine", "s-norm", "coverage"),
    "cosine ramps + coverage": (*COSINE_RAMPS, "coverage"),
    "cosine ramps + coverage ramps": (*COSINE_RAMPS, *COVERAGE_RAMPS),
}
RUN = REPO_ROOT / "bench" / ".cache" / "recall" / "engine_sets" / "runs" / "this-sqlite.json"
_started = time.perf_counter()


def log(message: str) -> None:
    print(f"[{time.perf_counter() - _started:7.1f}s] {message}", flush=True)


class Cohort:
    """The cohort's vectors and the z-scores they give."""

    def __init__(self, vectors: np.ndarray) -> None:
        self.vectors = vectors.astype(np.float64)

    def stats(self, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean and standard deviation of each row's cosines to the cohort."""
        c = np.atleast_2d(v) @ self.vectors.T
        return c.mean(axis=1), np.maximum(c.std(axis=1), 1e-6)

    def readings(self, cos: np.ndarray, coverage: np.ndarray, query: np.ndarray,
                 memories: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        """(n, len(READINGS)) for one query against memories with cohort stats ``memories``."""
        mq, sq = self.stats(query)
        zq = (cos - mq[0]) / sq[0]
        zm = (cos - memories[0]) / memories[1]
        return np.column_stack([cos, coverage, zq, zm, (zq + zm) / 2, *ramps(cos, COSINE_KNOTS),
                                *ramps(coverage, COVERAGE_KNOTS)])


def ramps(x: np.ndarray, knots: Sequence[float]) -> list[np.ndarray]:
    """``x`` as the pieces of a monotone piecewise-linear function: with weights >= 0 on
    them, any increasing function that is linear between ``knots``."""
    return [np.clip(x, lo, hi) - lo for lo, hi in zip(knots, knots[1:])]


def all_readings(asked: Sequence[Asked], stores: dict, table: Any, cohort: Cohort
                 ) -> list[np.ndarray]:
    """Every query's readings against every memory of its store."""
    stats = {n: cohort.stats(s.vectors) for n, s in stores.items()}
    out = []
    for a in asked:
        base = readings_of(a, len(a.cosines))
        out.append(cohort.readings(base[:, 0], base[:, 1], np.asarray(table[a.text]),
                                   stats[a.store]))
    return out


def sample(asked: Sequence[Asked], readings: Sequence[np.ndarray]
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The fixed-ratio sample (answers weigh 1, the rest of the store RATIO, per question)."""
    xs, ys, ws = [], [], []
    for a, x in zip(asked, readings):
        if a.kind != "answerable" or not a.evidence:
            continue
        gold = np.zeros(len(x), dtype=bool)
        gold[a.evidence] = True
        if gold.all():
            continue
        xs.append(x)
        ys.append(gold.astype(np.float64))
        ws.append(np.where(gold, 1.0 / gold.sum(), RATIO / (~gold).sum()))
    return np.vstack(xs), np.concatenate(ys), np.concatenate(ws)


def returned(asked: Sequence[Asked], readings: Sequence[np.ndarray], run: dict[str, list]
             ) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(kind, readings, labels) of the top 10 Engine.search returned for each query."""
    out, index = [], {}
    for a, x in zip(asked, readings):
        i = index.get(a.store, 0)
        index[a.store] = i + 1
        top = [h[0] for h in run.get(f"{a.store}:{i}", [])]
        gold = set(a.evidence)
        out.append((a.kind, x[top], np.asarray([d in gold for d in top], dtype=np.float64)))
    return out


def auc(p: np.ndarray, y: np.ndarray) -> float:
    """Area under the ROC curve (ties count half)."""
    from scipy.stats import rankdata

    pos = y > 0
    n1, n0 = int(pos.sum()), int((~pos).sum())
    if not n1 or not n0:
        return float("nan")
    r = rankdata(p)
    return float((r[pos].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def predict(theta: np.ndarray, x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-(theta[0] + x @ theta[1:])))


def kept_share(hits: list[tuple[str, np.ndarray, np.ndarray]], p: list[np.ndarray], t: float
               ) -> float:
    found = kept = 0
    for (kind, _x, y), pr in zip(hits, p):
        if kind == "answerable" and y.any():
            found += 1
            kept += bool((pr[y > 0] >= t).any())
    return kept / found if found else 1.0


def at(hits: list[tuple[str, np.ndarray, np.ndarray]], p: list[np.ndarray], t: float
       ) -> dict[str, Any]:
    kept = sum(int((pr >= t).sum()) for pr in p)
    good = sum(int(((pr >= t) & (y > 0)).sum()) for (_k, _x, y), pr in zip(hits, p))
    answers = sum(int(y.sum()) for _k, _x, y in hits)
    empty: dict[str, list[bool]] = {}
    for (kind, _x, _y), pr in zip(hits, p):
        if kind != "answerable":
            empty.setdefault(kind, []).append(not (pr >= t).any())
    return {"threshold": t, "precision": round(good / kept, 4) if kept else None,
            "recall": round(good / answers, 4) if answers else None,
            "questions keeping an answer": round(kept_share(hits, p, t), 4),
            "hits kept per query": round(kept / len(hits), 2),
            **{f"empty: {k}": round(float(np.mean(v)), 4) for k, v in sorted(empty.items())}}


def weighted_brier(p: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    return float((w * (p - y) ** 2).sum() / w.sum())


def held_out(data: dict[str, dict[str, Any]], held: str, cols: list[int]) -> dict[str, Any]:
    """The model fitted without ``held``; its readings of ``held``."""
    parts = [d["sample"] for n, d in data.items() if n != held]
    x = np.vstack([p[0] for p in parts])[:, cols]
    theta = logistic_weighted(x, np.concatenate([p[1] for p in parts]),
                              np.concatenate([p[2] for p in parts]))
    sx, sy, sw = data[held]["sample"]
    ps = predict(theta, sx[:, cols])
    hits = data[held]["hits"]
    p = [predict(theta, h[1][:, cols]) if len(h[1]) else np.zeros(0) for h in hits]
    flat_p = np.concatenate(p)
    flat_y = np.concatenate([h[2] for h in hits])
    return {"theta": [round(float(t), 4) for t in theta],
            "sample": {"brier": round(weighted_brier(ps, sy, sw), 4), "auc": round(auc(ps, sy), 4)},
            "returned": {**reliability(flat_p, flat_y), "auc": round(auc(flat_p, flat_y), 4)},
            "_p": p}


def new_user(theta: np.ndarray, cols: list[int], table: Any, cohort: Cohort) -> list[dict]:
    """Each query's best-scoring memory of a new user's five facts."""
    from memoryd.retrieval.bm25 import Candidate, CorpusStats, keyword_evidence
    from memoryd.retrieval.tokens import query_terms, term_counts

    table.ensure(list(NEW_USER_FACTS) + [q for q, _ in NEW_USER_QUERIES], "new user's store")
    facts = table.matrix(list(NEW_USER_FACTS))
    mstats = cohort.stats(facts)
    counts = [term_counts(f) for f in NEW_USER_FACTS]
    out = []
    for query, kind in NEW_USER_QUERIES:
        cos = (facts @ table[query]).astype(np.float64)
        terms = query_terms(query)
        stats = CorpusStats(len(counts), float(np.mean([sum(c.values()) for c in counts])),
                            {t: sum(1 for c in counts if t in c) for t in terms})
        cands = [Candidate(str(i), sum(c.values()), {t: c[t] for t in terms if t in c})
                 for i, c in enumerate(counts)]
        cov = np.asarray([e.coverage for e in keyword_evidence(terms, cands, stats)])
        x = cohort.readings(cos, cov, np.asarray(table[query]), mstats)
        p = predict(theta, x[:, cols])
        best = int(np.argmax(p))
        out.append({"query": query, "kind": kind, "best": NEW_USER_FACTS[best],
                    "score": round(float(p[best]), 4), "cosine": round(float(cos[best]), 3),
                    "query z": round(float(x[best, 2]), 2), "memory z": round(float(x[best, 3]), 2)})
    return out


def variant_section(data: dict[str, dict[str, Any]], columns: tuple[str, ...], table: Any,
                    cohort: Cohort) -> dict[str, Any]:
    cols = [READINGS.index(c) for c in columns]
    held = {n: held_out(data, n, cols) for n in data}
    ok = [t for t in CANDIDATE_THRESHOLDS
          if all(kept_share(data[n]["hits"], h["_p"], t) >= KEEP for n, h in held.items())]
    t = max(ok) if ok else CANDIDATE_THRESHOLDS[0]
    x = np.vstack([d["sample"][0] for d in data.values()])[:, cols]
    theta = logistic_weighted(x, np.concatenate([d["sample"][1] for d in data.values()]),
                              np.concatenate([d["sample"][2] for d in data.values()]))
    for n, h in held.items():
        h["at threshold"] = at(data[n]["hits"], h.pop("_p"), t)
    return {"readings": list(columns), "threshold": t, "held out": held,
            "all": [round(float(v), 4) for v in theta],
            "new user's store": new_user(theta, cols, table, cohort)}


def cohort_texts() -> list[str]:
    path = Path(__file__).resolve().with_name("cohort.txt")
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.startswith("#")]


def main() -> int:
    convs = sets.load_sets(list(sets.NAMES), log)
    if len(convs) < 2 or not RUN.is_file():
        print("needs two data sets and the Engine.search run (python -m bench.recall.engine_sets)")
        return 0
    table = sets.vector_table(log)
    sets.embed_sets(convs, table)
    texts = cohort_texts()
    table.ensure(texts, "cohort")
    cohort = Cohort(table.matrix(texts))
    run = json.loads(RUN.read_text())["runs"]
    data: dict[str, dict[str, Any]] = {}
    for name, cs in convs.items():
        stores = {c.number: build_store(name, c, table) for c in cs}
        asked = [a for c in cs for a in asks(stores[c.number], c, table)]
        readings = all_readings(asked, stores, table, cohort)
        data[name] = {"sample": sample(asked, readings),
                      "hits": returned(asked, readings, run[name]["shipped"])}
        log(f"{name}: readings done")
    res = {"cohort": len(texts), "variants": {v: variant_section(data, cols, table, cohort)
                                              for v, cols in VARIANTS.items()}}
    out = REPO_ROOT / "bench" / "results"
    (out / "recall_score.json").write_text(json.dumps(res, indent=1) + "\n")
    from bench.recall.score_render import render

    (out / "recall_score.md").write_text(render(res))
    log(f"wrote {out}/recall_score.{{json,md}}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
