"""The next turn as evidence of relevance: a sixth feature for the relevance model, measured.

BEAM labels the user's turn as evidence while the words a question uses often sit in the
assistant's reply right after it. Mixing the neighbours' vectors into a message's own vector
did not help (``contexts`` in the report); here the cosine of the *next turn of the same
session* is given to the logistic model as a feature of its own, next to the five shipped
ones, and both models are fitted and scored by 2-fold cross-validation by conversation on
the same candidate pools. Measured only: the shipped model has five features. The same models
also rank the user-turns-only store (the next turn is then the user's next message), where
BEAM's user-asks/assistant-answers structure is gone.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.recall.candidates import Query, TermIndex
from bench.recall.corpus import Corpus
from bench.recall.experiments import POOL, SHIPPED_KEYWORD, evaluate, half_of, sign
from bench.recall.fit import HALVES, logistic
from bench.recall.pipeline import Pool, candidate_pool

#: model -> columns of the extended feature matrix (the five shipped ones are 0-4).
VARIANTS = {"five shipped features": [0, 1, 2, 3, 4],
            "five + cosine of the next turn": [0, 1, 2, 3, 4, 5],
            "five + how far the next turn beats the memory": [0, 1, 2, 3, 4, 6]}


def next_turn(c: Corpus) -> np.ndarray:
    """Position of each message's next message in the same session (-1: none)."""
    n = len(c.sessions)
    return np.array([i + 1 if i + 1 < n and c.sessions[i + 1] == c.sessions[i] else -1
                     for i in range(n)], dtype=np.int64)


def with_next_cosine(q: Query, pool: Pool, following: np.ndarray) -> np.ndarray:
    """The pool's feature matrix plus two columns: the query's cosine to each candidate's
    next turn (0 without one), and how much higher that is than the candidate's own cosine
    (>= 0; 0 without a next turn, so a memory outside any conversation reads as before)."""
    cos = q.cosines["plain"]
    nxt = following[pool.docs]
    column = np.where(nxt >= 0, cos[np.maximum(nxt, 0)], 0.0)
    lift = np.where(nxt >= 0, np.maximum(column - pool.x[:, 0], 0.0), 0.0)
    return np.hstack([pool.x, column[:, None], lift[:, None]])


def section(queries: list[Query], indexes: dict[int, dict[str, TermIndex]],
            corpora: dict[int, Corpus], user: tuple[list[Query], dict[int, dict[str, TermIndex]],
                                                  dict[int, Corpus]] | None = None) -> dict[str, Any]:
    """Held-out metrics of the models, sign tests, per-half results and fitted weights; with
    ``user`` (queries, indexes, corpora of the user-turns-only store) also the same models on
    that store, where the next turn is the user's next message (no refit)."""
    following = {n: next_turn(c) for n, c in corpora.items()}
    pools = {id(q): candidate_pool(q, indexes[q.conv], SHIPPED_KEYWORD, "plain", POOL)
             for q in queries}
    x = {id(q): with_next_cosine(q, pools[id(q)], following[q.conv]) for q in queries}
    ans = [q for q in queries if q.kind == "answerable"]
    out: dict[str, Any] = {"tables": {}, "weights": {}, "halves": {}}
    evals, thetas = {}, {}
    for name, cols in VARIANTS.items():
        scores: dict[int, np.ndarray] = {}
        for half in HALVES:
            train = [q for q in queries if half_of(q.conv) != half]
            theta = logistic(np.vstack([x[id(q)][:, cols] for q in train]),
                             np.concatenate([pools[id(q)].labels for q in train]).astype(float))
            out["weights"][f"{name}, fitted without {half}"] = [round(float(t), 4) for t in theta]
            thetas[name, half] = theta
            for q in queries:
                if half_of(q.conv) == half:
                    scores[id(q)] = theta[0] + x[id(q)][:, cols] @ theta[1:]
        evals[name] = evaluate(ans, lambda q, s=scores: _ranked(pools[id(q)], s[id(q)]))
        out["tables"][name] = evals[name]["table"]
        out["halves"][name] = {h: _half_mean(evals[name], h) for h in HALVES}
    base, *others = (evals[n] for n in VARIANTS)
    out["sign"] = {name: {m: sign(base, e, m) for m in ("hit@1", "hit@5", "hit@10", "mrr")}
                   for name, e in zip(list(VARIANTS)[1:], others)}
    if user is not None:
        out["transfer"] = _transfer(thetas, *user)
    return out


def _transfer(thetas: dict[tuple[str, str], np.ndarray], queries: list[Query],
              indexes: dict[int, dict[str, TermIndex]], corpora: dict[int, Corpus]) -> dict[str, Any]:
    following = {n: next_turn(c) for n, c in corpora.items()}
    ans = [q for q in queries if q.kind == "answerable"]
    pools = {id(q): candidate_pool(q, indexes[q.conv], SHIPPED_KEYWORD, "plain", POOL) for q in ans}
    x = {id(q): with_next_cosine(q, pools[id(q)], following[q.conv]) for q in ans}
    evals = {}
    for name, cols in VARIANTS.items():
        def ranked(q: Query, cols: list[int] = cols, name: str = name) -> list[int]:
            theta = thetas[name, half_of(q.conv)]
            return _ranked(pools[id(q)], theta[0] + x[id(q)][:, cols] @ theta[1:])
        evals[name] = evaluate(ans, ranked)
    base, *others = (evals[n] for n in VARIANTS)
    return {"questions": len(ans), "tables": {n: e["table"]["overall"] for n, e in evals.items()},
            "sign": {name: {m: sign(base, e, m) for m in ("hit@1", "hit@5", "hit@10", "mrr")}
                     for name, e in zip(list(VARIANTS)[1:], others)}}


def _ranked(pool: Pool, score: np.ndarray) -> list[int]:
    order = np.lexsort((pool.docs, -pool.x[:, 0], -score))
    return pool.docs[order].tolist()


def _half_mean(e: dict[str, Any], half: str) -> dict[str, float]:
    rows = [r["m"] for r in e["rows"] if half_of(r["conv"]) == half]
    return {m: round(sum(r[m] for r in rows) / len(rows), 4) for m in rows[0]} if rows else {}
