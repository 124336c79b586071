"""The ranking bench's experiments: every ranker scored per ability, CV halves, calibration."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from bench.recall import metrics as M
from bench.recall.candidates import KINDS, Query, TermIndex
from bench.recall.corpus import Corpus
from bench.recall.fit import HALVES, fit, fit_listwise, model_dict, reliability
from bench.recall.pipeline import (
    KeywordConfig,
    Pool,
    by_probability,
    candidate_pool,
    keyword_ranking,
    probabilities,
    rrf,
    vector_ranking,
)
from bench.recall import extras
from memoryd.retrieval.relevance import FEATURES, RelevanceModel

__all__ = ["KINDS", "run_all", "constants_text"]

LIMIT = 10
METRICS = ("hit@1", "hit@5", "hit@10", "recall@5", "recall@10", "mrr")
K1S = (0.9, 1.2, 2.0, 3.0, 5.0, 8.0)
BS = (0.5, 0.75, 0.9, 1.0)
POOL = 50
SHIPPED_KEYWORD = KeywordConfig("porter", 5.0, 1.0)
#: Feature subsets of the relevance model compared by cross-validation (column indices).
MODELS = {
    "full": [0, 1, 2, 3, 4],
    "full, listwise": [0, 1, 2, 3, 4],
    "cosine+coverage": [0, 2],
    "absolute only": [0, 2, 3],
    "relative only": [1, 4],
    "no keyword_lead": [0, 1, 2, 3],
}
SHIPPED_MODEL = "full"
Ranker = Callable[[Query], Sequence[int]]


def fitter(name: str) -> Callable[..., RelevanceModel]:
    """The fitting procedure of a model variant (pointwise or listwise)."""
    return fit_listwise if name.endswith("listwise") else fit


def question_metrics(ranked: Sequence[int], q: Query) -> dict[str, float]:
    out = M.question_metrics(list(ranked)[:LIMIT], q.evidence)
    first = M.first_rank(list(ranked)[:LIMIT], q.evidence)
    out["mrr"] = 1.0 / first if first else 0.0
    return out


def evaluate(qs: Sequence[Query], ranker: Ranker) -> dict[str, Any]:
    """Metrics per ability and overall, plus per-question rows (for sign tests)."""
    rows = [{"ability": q.ability, "conv": q.conv, "m": question_metrics(ranker(q), q)} for q in qs]
    by: dict[str, list[dict]] = {}
    for r in rows:
        by.setdefault(r["ability"], []).append(r["m"])
    table = {"overall": _mean([r["m"] for r in rows])}
    table.update({a: _mean(v) for a, v in sorted(by.items())})
    return {"table": table, "rows": rows, "n": {a: len(v) for a, v in by.items()}}


def _mean(rows: list[dict[str, float]]) -> dict[str, float]:
    return {m: round(sum(r[m] for r in rows) / len(rows), 4) if rows else 0.0 for m in METRICS}


def sign(base: dict, new: dict, metric: str) -> dict[str, Any]:
    w = sum(1 for a, b in zip(base["rows"], new["rows"]) if b["m"][metric] > a["m"][metric])
    lo = sum(1 for a, b in zip(base["rows"], new["rows"]) if b["m"][metric] < a["m"][metric])
    return {"wins": w, "losses": lo, "p": round(M.sign_test(w, lo), 4)}


def selection(t: dict[str, float]) -> float:
    return (t["hit@1"] + t["hit@5"] + t["hit@10"] + t["recall@10"]) / 4


def half_of(conv: int) -> str:
    return "odd" if conv in HALVES["odd"] else "even"


def run_all(queries: list[Query], indexes: dict[int, dict[str, TermIndex]],
            corpora: dict[int, Corpus], log: Callable[[str], None]) -> dict[str, Any]:
    """Every experiment; returns the result dict the report renders."""
    ans = [q for q in queries if q.kind == "answerable"]
    idx = lambda q: indexes[q.conv]  # noqa: E731
    res: dict[str, Any] = {"counts": {k: sum(q.kind == k for q in queries) for k in KINDS}}
    log("keyword grid")
    res["keyword"] = keyword_section(ans, indexes)
    log("vector contexts")
    res["vector"] = {ctx: evaluate(ans, lambda q, c=ctx: vector_ranking(q, c))["table"]
                     for ctx in ans[0].cosines}
    log("candidate pools")
    pools = {ctx: {id(q): candidate_pool(q, idx(q), SHIPPED_KEYWORD, ctx, POOL) for q in queries}
             for ctx in ans[0].cosines}
    log("relevance models (2-fold CV by conversation)")
    held, fitted = cv_probabilities(queries, pools["plain"])
    res["models"] = {name: {"halves": fitted[name], "table": evaluate(
        ans, lambda q, n=name: by_probability(pools["plain"][id(q)], held[n][id(q)]))["table"]}
        for name in MODELS}
    res["contexts"] = context_section(queries, ans, pools)
    log("main table")
    res["main"], rankers = main_section(ans, indexes, pools["plain"], held[SHIPPED_MODEL])
    res["_rankers"] = rankers  # for the Engine.search section; not written to the JSON
    singles = [res["main"]["tables"][n] for n in res["main"]["tables"] if n.startswith(("keyword", "vector"))]
    for name, m in res["models"].items():
        full = evaluate(ans, lambda q, n=name: by_probability(pools["plain"][id(q)], held[n][id(q)]))["table"]
        m["worst_margin_hit@5"] = round(min(full[a]["hit@5"] - max(t[a]["hit@5"] for t in singles)
                                            for a in full if a != "overall"), 4)
    res["calibration"] = calibration_section(queries, pools["plain"], held[SHIPPED_MODEL])
    log("cognitive layer")
    res["cognitive"] = extras.cognitive_section(ans, pools["plain"], held[SHIPPED_MODEL], corpora,
                                                question_metrics)
    res["time"] = extras.time_section(ans, pools["plain"], held[SHIPPED_MODEL], corpora,
                                      question_metrics)
    res["speaker"] = extras.speaker_section(ans, pools["plain"], held[SHIPPED_MODEL], corpora,
                                            question_metrics)
    res["preference"] = extras.preference_section(ans, pools["plain"], held[SHIPPED_MODEL], corpora,
                                                  question_metrics)
    res["latency"] = extras.latency_section(ans, indexes, SHIPPED_KEYWORD, corpora)
    all_model = fitter(SHIPPED_MODEL)([pools["plain"][id(q)] for q in queries], MODELS[SHIPPED_MODEL])
    res["fitted_all"] = model_dict(all_model)
    res["shipped"] = {"keyword": SHIPPED_KEYWORD.__dict__, "model": SHIPPED_MODEL, "pool": POOL,
                      "features": list(FEATURES)}
    return res


def keyword_section(ans: list[Query], indexes: dict[int, dict[str, TermIndex]]) -> dict[str, Any]:
    idx = lambda q: indexes[q.conv]  # noqa: E731
    out: dict[str, Any] = {"fts5": evaluate(ans, lambda q: q.fts5)["table"], "grid": {}}
    emu = KeywordConfig("porter", 1.2, 0.75, "fts5")
    out["emulation_top10_same_as_fts5"] = sum(
        keyword_ranking(q, idx(q), emu)[:LIMIT].tolist() == q.fts5[:LIMIT] for q in ans)
    out["questions"] = len(ans)
    for stem in ans[0].matches:
        for k1 in K1S:
            for b in BS:
                cfg = KeywordConfig(stem, k1, b)
                ev = evaluate(ans, lambda q, c=cfg: keyword_ranking(q, idx(q), c))
                out["grid"][f"{stem} k1={k1:g} b={b:g}"] = {
                    "table": ev["table"]["overall"],
                    "halves": {h: _mean([r["m"] for r in ev["rows"] if half_of(r["conv"]) == h])
                               for h in HALVES}}
    if "porter+date" in ans[0].matches:
        out["dated"] = {name: evaluate(ans, lambda q, c=KeywordConfig(name, 5.0, 1.0): keyword_ranking(
            q, idx(q), c))["table"] for name in ("porter", "porter+date")}
    out["prepool"] = {}
    for size in (20, 50, 100):
        def rescored(q: Query, n: int = size) -> list[int]:
            full = keyword_ranking(q, idx(q), SHIPPED_KEYWORD).tolist()
            allowed = set(q.fts5[:n])
            return [d for d in full if d in allowed]
        ev = evaluate(ans, rescored)["table"]["overall"]
        same = sum(rescored(q)[:LIMIT] == keyword_ranking(q, idx(q), SHIPPED_KEYWORD)[:LIMIT].tolist()
                   for q in ans)
        out["prepool"][f"FTS5 top {size}, re-scored"] = {"table": ev, "top10_same_as_full": same}
    out["cv"] = {}
    for h in HALVES:
        other = "even" if h == "odd" else "odd"
        best = max(out["grid"], key=lambda k: selection(out["grid"][k]["halves"][h]))
        out["cv"][f"chosen on {h}"] = {"config": best, f"held-out ({other})": out["grid"][best]["halves"][other]}
    return out


def cv_probabilities(queries: list[Query], pools: dict[int, Pool]
                     ) -> tuple[dict[str, dict[int, np.ndarray]], dict[str, dict]]:
    """Held-out probabilities per model variant: each half scored by the other half's fit."""
    held: dict[str, dict[int, np.ndarray]] = {n: {} for n in MODELS}
    fitted: dict[str, dict] = {n: {} for n in MODELS}
    for h in HALVES:
        train = [pools[id(q)] for q in queries if half_of(q.conv) != h]
        for name, cols in MODELS.items():
            model = fitter(name)(train, cols)
            fitted[name][f"fitted without {h}"] = model_dict(model)
            for q in queries:
                if half_of(q.conv) == h:
                    held[name][id(q)] = probabilities(model, pools[id(q)].x)
    return held, fitted


def context_section(queries: list[Query], ans: list[Query], pools: dict[str, dict[int, Pool]]) -> dict:
    out = {}
    for ctx, by_q in pools.items():
        held, _ = cv_probabilities_one(queries, by_q)
        out[ctx] = evaluate(ans, lambda q: by_probability(by_q[id(q)], held[id(q)]))["table"]["overall"]
    return out


def cv_probabilities_one(queries: list[Query], pools: dict[int, Pool]) -> tuple[dict[int, np.ndarray], None]:
    held: dict[int, np.ndarray] = {}
    for h in HALVES:
        model = fitter(SHIPPED_MODEL)([pools[id(q)] for q in queries if half_of(q.conv) != h],
                                      MODELS[SHIPPED_MODEL])
        for q in queries:
            if half_of(q.conv) == h:
                held[id(q)] = probabilities(model, pools[id(q)].x)
    return held, None


def main_section(ans: list[Query], indexes, pools: dict[int, Pool], held: dict[int, np.ndarray]):
    idx = lambda q: indexes[q.conv]  # noqa: E731
    rankers: dict[str, Ranker] = {
        "keyword (FTS5 bm25, as shipped)": lambda q: q.fts5,
        "keyword (memoryd BM25 k1=5 b=1)": lambda q: keyword_ranking(q, idx(q), SHIPPED_KEYWORD),
        "vector": lambda q: vector_ranking(q),
        "RRF k=60 (textbook)": lambda q: rrf(q.fts5, vector_ranking(q), k=60),
        "RRF k=5, vector x2 (previous default)": lambda q: rrf(q.fts5, vector_ranking(q), k=5, wv=2.0),
        "new pipeline (relevance fusion, CV)": lambda q: by_probability(pools[id(q)], held[id(q)]),
    }
    evals = {name: evaluate(ans, r) for name, r in rankers.items()}
    new = evals["new pipeline (relevance fusion, CV)"]
    out: dict[str, Any] = {"tables": {n: e["table"] for n, e in evals.items()}, "n": new["n"],
                           "sign": {}, "halves": {}, "rule": {}}
    for name, e in evals.items():
        if e is not new:
            out["sign"][name] = {m: sign(e, new, m) for m in ("hit@1", "hit@5", "hit@10", "mrr")}
    for h in HALVES:
        out["halves"][h] = {n: _mean([r["m"] for r in e["rows"] if half_of(r["conv"]) == h])
                            for n, e in evals.items()}
    kw, vec = evals["keyword (memoryd BM25 k1=5 b=1)"]["table"], evals["vector"]["table"]
    kw_old = evals["keyword (FTS5 bm25, as shipped)"]["table"]
    for ability, row in new["table"].items():
        best = max(kw[ability]["hit@5"], vec[ability]["hit@5"], kw_old[ability]["hit@5"])
        out["rule"][ability] = {"new": row["hit@5"], "best_single": best,
                                "margin": round(row["hit@5"] - best, 4),
                                "holds": row["hit@5"] >= best - 0.02 if ability != "overall"
                                else row["hit@5"] > best}
    return out, rankers


def calibration_section(queries: list[Query], pools: dict[int, Pool], held: dict[int, np.ndarray]) -> dict:
    """Reliability of held-out probabilities; the recall threshold chosen per half."""
    out: dict[str, Any] = {}
    for h in list(HALVES) + ["both"]:
        qs = [q for q in queries if h == "both" or half_of(q.conv) == h]
        prob = np.concatenate([held[id(q)] for q in qs])
        lab = np.concatenate([pools[id(q)].labels for q in qs]).astype(np.float64)
        top_p, top_l = _top10(qs, pools, held)
        out[h] = {"all pairs": reliability(prob, lab), "top-10 hits": reliability(top_p, top_l)}
    out["thresholds"] = extras.threshold_table(queries, pools, held, half_of, LIMIT)
    return out


def _top10(qs: list[Query], pools: dict[int, Pool], held: dict[int, np.ndarray]):
    ps, ls = [], []
    for q in qs:
        p = held[id(q)]
        order = np.argsort(-p, kind="stable")[:LIMIT]
        ps.append(p[order])
        ls.append(pools[id(q)].labels[order])
    return np.concatenate(ps), np.concatenate(ls).astype(np.float64)


def constants_text(res: dict[str, Any]) -> str:
    m = res["fitted_all"]
    weights = ", ".join(f"{w}" for w in m["weights"].values())
    return (f"DEFAULT_MODEL = RelevanceModel(intercept={m['intercept']}, weights=({weights}), "
            f"instruction_weight={m.get('instruction_weight', 0.0)}, "
            f"instruction_floor={m.get('instruction_floor', 0.0)})\n"
            f"DEFAULT_RECALL_THRESHOLD = {res['calibration']['thresholds']['chosen_all']}")


def transfer_section(res: dict[str, Any], queries: list[Query],
                     indexes: dict[int, dict[str, TermIndex]]) -> dict[str, Any]:
    """A differently shaped store (user turns only), ranked by the models fitted on the full
    conversations of the other half: no refit on this shape."""
    ans = [q for q in queries if q.kind == "answerable"]
    idx = lambda q: indexes[q.conv]  # noqa: E731
    halves = res["models"][SHIPPED_MODEL]["halves"]
    models = {h: RelevanceModel(m["intercept"], tuple(m["weights"][f] for f in FEATURES))
              for h, m in ((h, halves[f"fitted without {h}"]) for h in HALVES)}
    pools = {id(q): candidate_pool(q, idx(q), SHIPPED_KEYWORD, "plain", POOL) for q in ans}
    rankers: dict[str, Ranker] = {
        "keyword (FTS5 bm25, as shipped)": lambda q: q.fts5,
        "keyword (memoryd BM25 k1=5 b=1)": lambda q: keyword_ranking(q, idx(q), SHIPPED_KEYWORD),
        "vector": lambda q: vector_ranking(q),
        "RRF k=60 (textbook)": lambda q: rrf(q.fts5, vector_ranking(q), k=60),
        "RRF k=5, vector x2 (previous default)": lambda q: rrf(q.fts5, vector_ranking(q), k=5, wv=2.0),
        "new pipeline (fitted on full conversations)": lambda q: by_probability(
            pools[id(q)], probabilities(models[half_of(q.conv)], pools[id(q)].x)),
    }
    evals = {n: evaluate(ans, r) for n, r in rankers.items()}
    new = evals["new pipeline (fitted on full conversations)"]
    return {"questions": len(ans), "tables": {n: e["table"] for n, e in evals.items()},
            "sign": {n: {m: sign(e, new, m) for m in ("hit@5", "hit@10")}
                     for n, e in evals.items() if e is not new}}
