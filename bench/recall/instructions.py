"""Conditional standing instructions ("Always X when I ask about Y"): the instruction-topic
reading measured, and its weight fitted.

memoryd reads the topic Y of such an instruction (``memoryd.retrieval.instructions``) and adds
``instruction_weight`` times how far the query's cosine to Y exceeds ``instruction_floor`` to the
instruction's log-odds; a lifted instruction never passes the best hit that was not lifted
(``relevance.below_best_direct``). Both constants are fitted by 2-fold cross-validation by
conversation **with the five shipped weights held fixed**: on the training half, for each floor
of :data:`FLOORS` the weight is a one-parameter logistic fit with the five-feature logit as
offset, and the floor whose ranking scores best there (mean of hit@1, hit@5, hit@10,
recall@10) is kept. A store without such instructions ranks exactly as before. Both rankings
are scored on the same candidate pools, on BEAM and on the user-turns-only store (no refit on
that shape).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.recall.candidates import Query, TermIndex
from bench.recall.corpus import Corpus
from bench.recall.embedding import VectorTable
from bench.recall.experiments import (
    POOL,
    SHIPPED_KEYWORD,
    SHIPPED_MODEL,
    evaluate,
    half_of,
    selection,
    sign,
)
from bench.recall.fit import HALVES
from bench.recall.pipeline import Pool, candidate_pool
from memoryd.retrieval.instructions import instruction_topic
from memoryd.retrieval.relevance import FEATURES, RelevanceModel, below_best_direct

WITH, WITHOUT = "with instruction topics", "five shipped features"
FLOORS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)
METRICS = ("hit@1", "hit@5", "hit@10", "mrr")


def topics_of(corpora: dict[int, Corpus]) -> dict[int, dict[int, str]]:
    """Per conversation, doc position -> the topic of the instruction it states."""
    return {n: {d: t for d, text in enumerate(c.texts) if (t := instruction_topic(text)) is not None}
            for n, c in corpora.items()}


def topic_column(q: Query, pool: Pool, topics: dict[int, str], table: VectorTable) -> np.ndarray:
    """The query's cosine to each candidate's instruction topic (0 for other candidates)."""
    query = table[q.text]
    return np.asarray([float(table[topics[d]] @ query) if d in topics else 0.0
                       for d in pool.docs.tolist()], dtype=np.float64)


def fit_weight(offset: np.ndarray, column: np.ndarray, labels: np.ndarray) -> float:
    """The weight w >= 0 of ``column`` in a logistic model whose other terms (``offset``) are
    fixed: mean log loss, bounded scalar minimisation."""
    from scipy.optimize import minimize_scalar

    y = labels.astype(np.float64)

    def loss(w: float) -> float:
        z = offset + w * column
        return float(np.mean(np.logaddexp(0.0, z) - y * z))

    return float(minimize_scalar(loss, bounds=(0.0, 20.0), method="bounded").x)


def section(res: dict[str, Any], queries: list[Query], indexes: dict[int, dict[str, TermIndex]],
            corpora: dict[int, Corpus], table: VectorTable, user_queries: list[Query],
            user_indexes: dict[int, dict[str, TermIndex]], user_corpora: dict[int, Corpus]
            ) -> dict[str, Any]:
    """Fit floor and weight per half (and on all), score both rankings, and record the fitted
    constants in ``res`` so that the Engine.search section and ``--refit`` use them."""
    topics, user_topics = topics_of(corpora), topics_of(user_corpora)
    table.ensure(sorted({t for m in topics.values() for t in m.values()}), "instruction topics")
    fitted = res["models"][SHIPPED_MODEL]["halves"]
    five = {h: _model(fitted[f"fitted without {h}"]) for h in HALVES}
    beam = _readings(queries, indexes, topics, table)
    chosen: dict[str, tuple[float, float]] = {}
    for h in HALVES:
        chosen[h] = _choose([q for q in queries if half_of(q.conv) != h], beam, five[h])
        fitted[f"fitted without {h}"].update(instruction_floor=chosen[h][0],
                                             instruction_weight=round(chosen[h][1], 4))
    floor, weight = _choose(queries, beam, _model(res["fitted_all"]))
    res["fitted_all"].update(instruction_floor=floor, instruction_weight=round(weight, 4))
    ans = [q for q in queries if q.kind == "answerable"]
    user_ans = [q for q in user_queries if q.kind == "answerable"]
    user = _readings(user_ans, user_indexes, user_topics, table)
    out: dict[str, Any] = {
        "instructions": sum(len(m) for m in topics.values()),
        "chosen": {f"fitted without {h}": {"floor": f, "weight": round(w, 4)} for h, (f, w) in chosen.items()},
        "chosen_all": {"floor": floor, "weight": round(weight, 4)}}
    for name, qs, readings in (("beam", ans, beam), ("user turns only", user_ans, user)):
        evals = {v: evaluate(qs, lambda q, v=v, r=readings: _ranked(
            r[id(q)], five[half_of(q.conv)], *(chosen[half_of(q.conv)] if v == WITH else (0.0, 0.0))))
                 for v in (WITHOUT, WITH)}
        out[name] = {"questions": len(qs), "tables": {v: e["table"] for v, e in evals.items()},
                     "sign": {m: sign(evals[WITHOUT], evals[WITH], m) for m in METRICS},
                     "halves": {v: {h: _half_mean(e, h) for h in HALVES} for v, e in evals.items()}}
    return out


def _choose(qs: list[Query], readings: dict[int, tuple[Pool, np.ndarray]],
            model: RelevanceModel) -> tuple[float, float]:
    """(floor, weight) fitted on ``qs``: the weight by log loss for each floor, the floor by the
    ranking it gives ``qs``' answerable questions."""
    ans = [q for q in qs if q.kind == "answerable"]
    best: tuple[float, float, float] | None = None
    for floor in FLOORS:
        weight = _fit(qs, readings, model, floor)
        table = evaluate(ans, lambda q: _ranked(readings[id(q)], model, floor, weight))["table"]
        value = selection(table["overall"])
        if best is None or value > best[0]:
            best = (value, floor, weight)
    assert best is not None
    return best[1], best[2]


def _readings(qs: list[Query], indexes: dict[int, dict[str, TermIndex]],
              topics: dict[int, dict[int, str]], table: VectorTable) -> dict[int, tuple[Pool, np.ndarray]]:
    out = {}
    for q in qs:
        pool = candidate_pool(q, indexes[q.conv], SHIPPED_KEYWORD, "plain", POOL)
        out[id(q)] = (pool, topic_column(q, pool, topics[q.conv], table))
    return out


def _fit(qs: list[Query], readings: dict[int, tuple[Pool, np.ndarray]], model: RelevanceModel,
         floor: float) -> float:
    offset = np.concatenate([_logit(readings[id(q)][0], model) for q in qs])
    column = np.concatenate([np.maximum(readings[id(q)][1] - floor, 0.0) for q in qs])
    labels = np.concatenate([readings[id(q)][0].labels for q in qs])
    return fit_weight(offset, column, labels)


def _model(m: dict[str, Any]) -> RelevanceModel:
    return RelevanceModel(m["intercept"], tuple(m["weights"][f] for f in FEATURES))


def _logit(pool: Pool, model: RelevanceModel) -> np.ndarray:
    return model.intercept + pool.x @ np.asarray(model.weights, dtype=np.float64)


def _ranked(reading: tuple[Pool, np.ndarray], model: RelevanceModel, floor: float,
            weight: float) -> list[int]:
    pool, cosines = reading
    plain = _logit(pool, model)
    z = np.asarray(below_best_direct(plain.tolist(),
                                     (plain + weight * np.maximum(cosines - floor, 0.0)).tolist()))
    return pool.docs[np.lexsort((pool.docs, -pool.x[:, 0], -z))].tolist()


def _half_mean(e: dict[str, Any], half: str) -> dict[str, float]:
    rows = [r["m"] for r in e["rows"] if half_of(r["conv"]) == half]
    return {m: round(sum(r[m] for r in rows) / len(rows), 4) for m in rows[0]} if rows else {}
