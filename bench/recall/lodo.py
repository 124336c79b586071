"""One ranking, three kinds of data: keyword, vector and the relevance ranking, leave one out.

For each data set (BEAM, REALTALK, agent memories; :mod:`bench.recall.sets`) every question
is ranked against its own store by keyword (memoryd's BM25), by vector (cosine) and by the
relevance ranking memoryd ships (the logistic model of :mod:`memoryd.retrieval.relevance`
over the union pool of both sides). The ranking model is fitted on the other data sets and
scored on the held-out one (leave one data set out), so no number below is in-sample.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from bench.recall import metrics as M
from bench.recall.fit import fit, logistic_weighted, model_dict
from bench.recall.pipeline import by_probability, probabilities
from bench.recall.pools import Asked, Pool, Store, keyword_order, pool, vector_order
from memoryd.retrieval.relevance import DEFAULT_RANK_K, FEATURES, RelevanceModel

LIMIT = 10
METRICS = ("hit@1", "hit@5", "hit@10", "recall@10", "mrr")
RANKERS = ("keyword", "vector", "shipped")


@dataclass
class DataSet:
    """One data set's stores and queries (every kind)."""

    name: str
    stores: dict[int, Store]
    asked: list[Asked]
    pools: dict[tuple[float, float, float], list[Pool]] = field(default_factory=dict)

    @property
    def answerable(self) -> list[int]:
        """Positions in ``asked`` of the questions with evidence."""
        return [i for i, a in enumerate(self.asked) if a.kind == "answerable" and a.evidence]

    def pools_for(self, k1: float, b: float, rank_k: float = DEFAULT_RANK_K) -> list[Pool]:
        """The candidate pool of every query for BM25 ``k1``/``b`` and reciprocal-rank
        constant ``rank_k`` (computed once)."""
        key = (k1, b, rank_k)
        if key not in self.pools:
            self.pools[key] = [pool(a, self.stores[a.store], k1, b, rank_k=rank_k)
                               for a in self.asked]
        return self.pools[key]


def question_metrics(ranked: Sequence[int], evidence: Sequence[int]) -> dict[str, float]:
    top = list(ranked)[:LIMIT]
    first = M.first_rank(top, evidence)
    return {"hit@1": M.hit_at(top, evidence, 1), "hit@5": M.hit_at(top, evidence, 5),
            "hit@10": M.hit_at(top, evidence, 10), "recall@10": M.recall_at(top, evidence, 10),
            "mrr": 1.0 / first if first else 0.0}


def table(rows: list[tuple[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Mean metrics overall and per ability from (ability, metrics) rows."""
    by: dict[str, list[dict[str, float]]] = {"overall": [m for _, m in rows]}
    for ability, m in rows:
        by.setdefault(ability, []).append(m)
    return {a: {k: round(sum(r[k] for r in v) / len(v), 4) for k in METRICS} | {"n": len(v)}
            for a, v in by.items()}


def rankings(ds: DataSet, k1: float, b: float, model: RelevanceModel
             ) -> dict[str, list[list[int]]]:
    """Each ranker's order of every answerable question of ``ds``."""
    pools = ds.pools_for(k1, b, model.rank_k)
    out: dict[str, list[list[int]]] = {r: [] for r in RANKERS}
    for i in ds.answerable:
        a, p = ds.asked[i], pools[i]
        out["keyword"].append(keyword_order(a, ds.stores[a.store], k1, b)[:LIMIT].tolist())
        out["vector"].append(vector_order(a)[:LIMIT].tolist())
        out["shipped"].append(by_probability(p, probabilities(model, p.x))[:LIMIT])
    return out


def scored(ds: DataSet, orders: dict[str, list[list[int]]]) -> dict[str, Any]:
    """Per ranker: the metrics table and the per-question rows (for sign tests)."""
    questions = [ds.asked[i] for i in ds.answerable]
    out = {}
    for name, lists in orders.items():
        rows = [(q.ability, question_metrics(r, q.evidence)) for q, r in zip(questions, lists)]
        out[name] = {"table": table(rows), "rows": [m for _, m in rows]}
    return out


#: The ranking memoryd ships: the keyword and the vector reciprocal ranks, weighed alike
#: (rank fusion); only the intercept and their common weight are fitted, to make the ranking
#: value a probability for the near-tie reorder. ``"fitted"``: all seven features fitted.
SHIPPED_FORM = "rank fusion"


def fit_ranking(sets: Sequence[DataSet], k1: float, b: float, rank_k: float = DEFAULT_RANK_K,
                form: str = SHIPPED_FORM) -> RelevanceModel:
    """The ranking model fitted on every query of ``sets``, each data set weighing alike
    (its pairs weighted by one over its number of queries)."""
    pools, weights = [], []
    for ds in sets:
        ps = ds.pools_for(k1, b, rank_k)
        pools.extend(ps)
        weights.extend([1.0 / len(ps)] * len(ps))
    if form == "fitted":
        return replace(fit(pools, sample_weights=weights), rank_k=rank_k)
    rr = [FEATURES.index("keyword_rr"), FEATURES.index("vector_rr")]
    x = np.concatenate([p.x[:, rr].sum(axis=1) for p in pools])[:, None]
    y = np.concatenate([p.labels for p in pools]).astype(np.float64)
    w = np.concatenate([np.full(len(p.labels), s) for p, s in zip(pools, weights)])
    theta = logistic_weighted(x, y, w)
    weights_out = [0.0] * len(FEATURES)
    for j in rr:
        weights_out[j] = float(theta[1])
    return RelevanceModel(float(theta[0]), tuple(weights_out), rank_k=rank_k)


def leave_one_out(sets: Sequence[DataSet], k1: float, b: float,
                  rank_k: float = DEFAULT_RANK_K, form: str = SHIPPED_FORM
                  ) -> tuple[dict[str, Any], dict[str, RelevanceModel]]:
    """Each data set ranked by the model fitted on the others."""
    results, models = {}, {}
    for held in sets:
        rest = [ds for ds in sets if ds is not held]
        model = fit_ranking(rest, k1, b, rank_k, form)
        models[held.name] = model
        results[held.name] = scored(held, rankings(held, k1, b, model))
    return results, models


def single_fits(sets: Sequence[DataSet], k1: float, b: float, rank_k: float = DEFAULT_RANK_K,
                form: str = "fitted") -> dict[str, dict[str, Any]]:
    """Fitted on one data set, scored on each of the others: hit@5 / hit@10 overall."""
    out: dict[str, dict[str, Any]] = {}
    for source in sets:
        model = fit_ranking([source], k1, b, rank_k, form)
        out[source.name] = {"model": model_dict(model)}
        for target in sets:
            t = scored(target, rankings(target, k1, b, model))["shipped"]["table"]["overall"]
            out[source.name][target.name] = {k: t[k] for k in ("hit@5", "hit@10", "mrr")}
    return out


def rule_margins(results: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Per data set: shipped minus the better single side at hit@5 and hit@10 (the rule asks
    for >= -0.01 everywhere)."""
    out = {}
    for name, res in results.items():
        t = {r: res[r]["table"]["overall"] for r in RANKERS}
        out[name] = {k: round(t["shipped"][k] - max(t["keyword"][k], t["vector"][k]), 4)
                     for k in ("hit@5", "hit@10")}
    return out


def bm25_grid(sets: Sequence[DataSet], grid: Sequence[tuple[float, float, float]],
              log: Callable[[str], None]) -> dict[str, Any]:
    """Keyword-only and leave-one-out ranking hit@5/hit@10 per data set for each k1/b and
    reciprocal-rank constant."""
    out: dict[str, Any] = {}
    for k1, b, rank_k in grid:
        results, _ = leave_one_out(sets, k1, b, rank_k)
        key = f"{k1:g}/{b:g}/{rank_k:g}"
        out[key] = {
            name: {f"{r} {k}": res[r]["table"]["overall"][k] for r in RANKERS
                   for k in ("hit@5", "hit@10", "mrr")}
            for name, res in results.items()}
        log(f"  k1={k1:g} b={b:g} k={rank_k:g}: " + ", ".join(
            f"{n} kw {v['keyword hit@5']:.3f} ranking {v['shipped hit@5']:.3f}"
            for n, v in out[key].items()))
        for ds in sets:
            ds.pools.pop((k1, b, rank_k), None)  # keep memory bounded
    return out


def worst_regret(grid: dict[str, Any], metric: str = "shipped hit@5") -> dict[str, float]:
    """Per k1/b: the largest shortfall, over data sets, from that data set's best setting."""
    names = list(next(iter(grid.values())))
    best = {n: max(g[n][metric] for g in grid.values()) for n in names}
    return {key: round(max(best[n] - g[n][metric] for n in names), 4) for key, g in grid.items()}


def sign(base_rows: list[dict[str, float]], new_rows: list[dict[str, float]], metric: str
         ) -> dict[str, Any]:
    wins = sum(1 for a, b in zip(base_rows, new_rows) if b[metric] > a[metric])
    losses = sum(1 for a, b in zip(base_rows, new_rows) if b[metric] < a[metric])
    return {"wins": wins, "losses": losses, "p": round(M.sign_test(wins, losses), 4)}


def as_json(models: dict[str, RelevanceModel]) -> dict[str, Any]:
    return {k: model_dict(m) for k, m in models.items()}


def mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if len(values) else 0.0
