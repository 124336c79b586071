"""The score's section of the across-data-sets bench: fit leave one out, calibration,
the default threshold, and what a new user's small store shows."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from bench.recall import answer_fit as F
from bench.recall import lodo
from bench.recall.fit import reliability
from bench.recall.pipeline import by_probability, probabilities
from memoryd.retrieval.answer import ANSWER_READINGS, DEFAULT_RECALL_THRESHOLD, AnswerModel

THRESHOLDS = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.7)
#: Thresholds tried for the default: the largest that keeps, on every data set held out, at
#: least :data:`KEEP` of the answerable questions whose answer is in the top 10.
CANDIDATE_THRESHOLDS = tuple(round(0.01 * i, 2) for i in range(1, 51))
KEEP = 0.95
TOP = 10
#: A new user's store and what they ask of it (reported, never fitted on).
NEW_USER_FACTS = (
    "Deploys go out on Tuesdays after standup",
    "The staging DB runs on port 5432",
    "Alice prefers TypeScript for frontend work",
    "Our CI runs on GitHub Actions",
    "The on-call rotation changes every Monday",
)
NEW_USER_QUERIES = (
    ("when do we ship?", "paraphrase"),
    ("which port does staging use", "exact"),
    ("what language should I use for the UI?", "paraphrase"),
    ("What's the capital of France?", "unrelated"),
    ("what is the release branch called?", "not stored"),
)


def model_json(m: AnswerModel) -> dict[str, Any]:
    return {"intercept": round(m.intercept, 4),
            "weights": {f: round(w, 4) for f, w in zip(ANSWER_READINGS, m.weights)}}


def returned(ds: lodo.DataSet, k1: float, b: float, ranking: Any
             ) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(kind, readings, labels) of the top hits the ranking returns for every query."""
    out = []
    for a, p in zip(ds.asked, ds.pools_for(k1, b, ranking.rank_k)):
        order = by_probability(p, probabilities(ranking, p.x))[:TOP]
        x = F.readings_of(a, len(a.cosines))[order]
        gold = set(a.evidence)
        out.append((a.kind, x, np.asarray([d in gold for d in order], dtype=np.float64)))
    return out


def threshold_row(hits: list[tuple[str, np.ndarray, np.ndarray]], model: AnswerModel,
                  t: float) -> dict[str, Any]:
    kept = answers = answers_kept = questions_kept = 0
    empty: dict[str, list[bool]] = {}
    answerable = 0
    for kind, x, y in hits:
        p = F.probabilities(model, x) if len(x) else np.zeros(0)
        above = p >= t
        kept += int(above.sum())
        answers += int(y.sum())
        answers_kept += int((above & (y > 0)).sum())
        if kind == "answerable":
            answerable += 1
            questions_kept += int((above & (y > 0)).any())
        empty.setdefault(kind, []).append(not above.any())
    return {"threshold": t,
            "precision": round(answers_kept / kept, 4) if kept else None,
            "recall": round(answers_kept / answers, 4) if answers else None,
            "questions keeping an answer": round(questions_kept / answerable, 4)
            if answerable else None,
            "hits kept per query": round(kept / len(hits), 2),
            **{f"empty: {k}": round(float(np.mean(v)), 4) for k, v in sorted(empty.items())
               if k != "answerable"}}


def held_out(dsets: Sequence[lodo.DataSet], held: lodo.DataSet,
             setting: tuple[float, float, float]) -> dict[str, Any]:
    """The answer model fitted without ``held``, checked on it."""
    k1, b, rank_k = setting
    model = F.fit_answer(F.Pairs.concat([F.sample(d.asked) for d in dsets if d is not held]))
    pairs = F.sample(held.asked)
    ranking = lodo.fit_ranking([d for d in dsets if d is not held], k1, b, rank_k)
    hits = returned(held, k1, b, ranking)
    x = np.vstack([h[1] for h in hits])
    y = np.concatenate([h[2] for h in hits])
    return {
        "model": model_json(model),
        "fixed-ratio sample": F.weighted_reliability(F.probabilities(model, pairs.x),
                                                     pairs.y, pairs.w),
        "returned hits": reliability(F.probabilities(model, x), y),
        "thresholds": [threshold_row(hits, model, t) for t in THRESHOLDS],
        "default threshold": threshold_row(hits, model, DEFAULT_RECALL_THRESHOLD),
        "kept share": {t: kept_share(hits, model, t) for t in CANDIDATE_THRESHOLDS},
    }


def kept_share(hits: list[tuple[str, np.ndarray, np.ndarray]], model: AnswerModel,
               t: float) -> float:
    """Of the answerable questions with an answer in the top 10, the share that keep one at
    or above ``t``."""
    found = kept = 0
    for kind, x, y in hits:
        if kind != "answerable" or not y.any():
            continue
        found += 1
        kept += bool((F.probabilities(model, x[y > 0]) >= t).any())
    return kept / found if found else 1.0


def chosen_threshold(held: dict[str, Any]) -> float:
    """The largest candidate threshold keeping :data:`KEEP` on every held-out data set."""
    ok = [t for t in CANDIDATE_THRESHOLDS if all(h["kept share"][t] >= KEEP
                                                  for h in held.values())]
    return max(ok) if ok else CANDIDATE_THRESHOLDS[0]


def new_user_store(model: AnswerModel, table: Any) -> list[dict[str, Any]]:
    """Each query's best-scoring memory of :data:`NEW_USER_FACTS` and its score."""
    from memoryd.retrieval.answer import pair_readings
    from memoryd.retrieval.bm25 import Candidate, CorpusStats, keyword_evidence
    from memoryd.retrieval.tokens import query_terms, term_counts

    table.ensure(list(NEW_USER_FACTS) + [q for q, _ in NEW_USER_QUERIES], "new user's store")
    facts = table.matrix(list(NEW_USER_FACTS))
    counts = [term_counts(f) for f in NEW_USER_FACTS]
    out = []
    for query, kind in NEW_USER_QUERIES:
        cos = facts @ table[query]
        terms = query_terms(query)
        stats = CorpusStats(len(counts), float(np.mean([sum(c.values()) for c in counts])),
                            {t: sum(1 for c in counts if t in c) for t in terms})
        cands = [Candidate(str(i), sum(c.values()), {t: c[t] for t in terms if t in c})
                 for i, c in enumerate(counts)]
        ev = keyword_evidence(terms, cands, stats)
        scores = [model.probability(pair_readings(float(c), e.coverage))
                  for c, e in zip(cos, ev)]
        best = int(np.argmax(scores))
        out.append({"query": query, "kind": kind, "best": NEW_USER_FACTS[best],
                    "score": round(scores[best], 4), "cosine": round(float(cos[best]), 3)})
    return out


def section(dsets: Sequence[lodo.DataSet], setting: tuple[float, float, float], table: Any,
            log: Callable[[str], None]) -> dict[str, Any]:
    out: dict[str, Any] = {"ratio": F.RATIO, "threshold": DEFAULT_RECALL_THRESHOLD,
                           "held out": {}}
    for held in dsets:
        log(f"  score held out on {held.name}")
        out["held out"][held.name] = held_out(dsets, held, setting)
    model = F.fit_answer(F.Pairs.concat([F.sample(d.asked) for d in dsets]))
    out["all"] = model_json(model)
    out["chosen threshold"] = chosen_threshold(out["held out"])
    out["new user's store"] = new_user_store(model, table)
    out["new user's store, fitted without agent memories"] = new_user_store(
        F.fit_answer(F.Pairs.concat([F.sample(d.asked) for d in dsets if d.name != "agent"])),
        table)
    return out


def constants_text(res: dict[str, Any]) -> str:
    r, a = res["ranking"]["all"], res["answer"]["all"]
    return "\n".join([
        f"bm25: k1={res['bm25']['k1']} b={res['bm25']['b']} rank_k={res['bm25']['rank_k']}",
        f"RelevanceModel(intercept={r['intercept']}, weights={tuple(r['weights'].values())})",
        f"AnswerModel(intercept={a['intercept']}, weights={tuple(a['weights'].values())})",
        f"threshold: {res['answer']['chosen threshold']}",
    ])
