"""Scoring Engine.search's BEAM runs (bench/recall/engine_bench.py) next to the bench's rankers:
per-ability tables, sign tests, the robustness rule, CV halves, backend agreement,
calibration of the returned scores, the recall threshold and the cognitive layer."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.recall import metrics as M
from bench.recall.candidates import Query
from bench.recall.corpus import Corpus
from bench.recall.embedding import VectorTable
from bench.recall.engine_bench import (
    LIMIT,
    MARGINS,
    Ranked,
    fold_models,
    half_of,
    key,
    postgres_urls,
    run_backend,
    sqlite_urls,
)
from bench.recall.experiments import _mean, evaluate, sign
from bench.recall.extras import NEGATIVE_KINDS
from bench.recall.fit import HALVES, reliability
from memoryd.cognition.ranking import DEFAULT_CLOSE_MARGIN
from memoryd.retrieval.answer import DEFAULT_RECALL_THRESHOLD

SINGLES = ("keyword (FTS5 bm25, as shipped)", "keyword (memoryd BM25 k1=5 b=1)", "vector")
SHOWN = (*SINGLES, "RRF k=60 (textbook)", "RRF k=5, vector x2 (previous default)",
         "new pipeline (relevance fusion, CV)")
CV = "Engine.search (CV)"
BARE = "Engine.search without cognitive layer and associations (CV)"
#: query cue -> the SQLite variant that runs without it
CUES = {"time expressions": "Engine.search without time expressions (CV)",
        "speaker cues": "Engine.search without speaker cues (CV)",
        "preference cues": "Engine.search without preference cues (CV)",
        "instruction topics": "Engine.search without instruction topics (CV)"}
THRESHOLDS = (0.001, 0.002, 0.003, 0.005, 0.01, 0.03, 0.1)


def margin_variant(margin: float) -> str:
    """The name of the Engine.search variant run with near-tie margin ``margin``."""
    return f"Engine.search, margin {margin:g} (CV)"


def engine_section(queries: list[Query], corpora: dict[int, Corpus], table: VectorTable,
                   res: dict[str, Any], rankers: dict[str, Callable[[Query], Sequence[int]]],
                   backends: Sequence[str], workdir: Path, log: Callable[[str], None]) -> dict:
    """Run Engine.search on each backend and compare it with the bench's rankers."""
    models = fold_models(res["models"]["full"]["halves"])
    runs: dict[str, dict[str, Any]] = {}
    for backend in backends:
        log(f"Engine.search on {backend}")
        urls = (postgres_urls(workdir, log) if backend == "postgresql"
                else sqlite_urls(workdir / backend))
        runs[backend] = run_backend(backend, urls, corpora, queries, table, models, log)
    ans = [q for q in queries if q.kind == "answerable"]
    pos = {n: {mid: i for i, mid in enumerate(c.ids)} for n, c in corpora.items()}
    held = {b: messages_held(corpora, pos, r["alias"]) for b, r in runs.items()}

    def ranker(backend: str, variant: str) -> Callable[[Query], list[int]]:
        # A memory that took in other messages (smart ingest) stands for all of them.
        return lambda q: [p for mid, _ in runs[backend]["ranked"][variant][key(q)]
                          for p in held[backend][q.conv][mid]]

    evals = {name: evaluate(ans, rankers[name]) for name in SHOWN}
    for backend, run in runs.items():
        for variant in run["ranked"]:
            evals[f"{variant}, {backend}"] = evaluate(ans, ranker(backend, variant))
    out: dict[str, Any] = {"backends": list(runs), "n": evals[SHOWN[0]]["n"],
                           "tables": {n: e["table"] for n, e in evals.items()},
                           "halves": {h: {n: _mean([r["m"] for r in e["rows"] if half_of(r["conv"]) == h])
                                          for n, e in evals.items()} for h in HALVES}}
    main = evals[f"{CV}, sqlite"]
    out["sign"] = {n: {m: sign(evals[n], main, m) for m in ("hit@1", "hit@5", "hit@10", "mrr")}
                   for n in SHOWN}
    out["rule"] = {f"{CV}, {b}": rule(evals[f"{CV}, {b}"]["table"], evals) for b in runs}
    out["cognitive"] = {b: cognitive(evals[f"{CV}, {b}"], evals[f"{BARE}, {b}"], ans, ranker(b, CV),
                                     ranker(b, BARE)) for b in runs}
    if "sqlite" in runs:
        out["margins"] = {f"{m:g}": cognitive(evals[f"{margin_variant(m)}, sqlite"],
                                              evals[f"{BARE}, sqlite"], ans,
                                              ranker("sqlite", margin_variant(m)), ranker("sqlite", BARE))
                          for m in MARGINS}
        out["cues"] = {cue: cognitive(evals[f"{CV}, sqlite"], evals[f"{variant}, sqlite"], ans,
                                      ranker("sqlite", CV), ranker("sqlite", variant))
                       for cue, variant in CUES.items()}
    labels = {key(q): set(q.evidence) for q in queries}
    sqlite_cv = runs["sqlite"]["ranked"][CV] if "sqlite" in runs else {}
    out["calibration"] = calibration(queries, sqlite_cv, pos, labels)
    out["thresholds"] = {f"{t:g}": at_threshold(queries, sqlite_cv, pos, labels, t) for t in THRESHOLDS}
    out["shipped_threshold"] = DEFAULT_RECALL_THRESHOLD
    out["shipped_margin"] = DEFAULT_CLOSE_MARGIN
    if {"sqlite", "postgresql"} <= set(runs):
        out["agreement"] = agreement(runs["sqlite"]["ranked"][CV], runs["postgresql"]["ranked"][CV])
        out["sign"][f"{CV}, postgresql"] = {m: sign(main, evals[f"{CV}, postgresql"], m)
                                            for m in ("hit@1", "hit@5", "hit@10")}
    out["ingest_decisions"] = {b: r["decisions"] for b, r in runs.items() if r["decisions"]}
    out["timing"] = {b: {"build_s": r["build_s"], "search_ms_median": round(statistics.median(
        r["search_ms"]), 2), "searches": len(r["search_ms"])} for b, r in runs.items()}
    return out


def messages_held(corpora: dict[int, Corpus], pos: dict[int, dict[str, int]],
                  alias: dict[str, str]) -> dict[int, dict[str, list[int]]]:
    """Conversation -> memory id -> positions of the messages it holds (its own, and those
    smart ingest put into it)."""
    out: dict[int, dict[str, list[int]]] = {}
    for n, c in corpora.items():
        held = {mid: [i] for i, mid in enumerate(c.ids)}
        for mid in c.ids:
            if mid in alias:
                held.setdefault(alias[mid], []).append(pos[n][mid])
        out[n] = held
    return out


def rule(table: dict[str, dict], evals: dict[str, dict]) -> dict[str, dict]:
    """Within 0.02 hit@5 of the best single mode in every ability, above it overall."""
    out = {}
    for ability, row in table.items():
        best = max(evals[s]["table"][ability]["hit@5"] for s in SINGLES)
        out[ability] = {"engine": row["hit@5"], "best_single": best,
                        "margin": round(row["hit@5"] - best, 4),
                        "holds": row["hit@5"] >= best - 0.02 if ability != "overall"
                        else row["hit@5"] > best}
    return out


def cognitive(with_: dict, without: dict, ans: list[Query], ranked_with: Callable,
              ranked_without: Callable) -> dict[str, Any]:
    """With minus without the cognitive layer, and knowledge-update ordering in both."""
    a, b = with_["table"]["overall"], without["table"]["overall"]
    order: dict[str, dict[str, int]] = {}
    for name, ranked in (("with", ranked_with), ("without", ranked_without)):
        counts = {"updated_first": 0, "original_first": 0, "neither": 0}
        for q in ans:
            if q.ability == "knowledge_update" and "updated_info" in q.groups:
                counts[M.update_order(ranked(q)[:LIMIT], q.groups.get("original_info", []),
                                      q.groups["updated_info"])] += 1
        order[name] = counts
    return {"delta": {m: round(a[m] - b[m], 4) for m in ("hit@1", "hit@5", "hit@10", "mrr")},
            "sign": {m: sign(without, with_, m) for m in ("hit@1", "hit@5", "hit@10", "mrr")},
            "knowledge_update_order": order}


def _labelled(queries: list[Query], ranked: dict[str, Ranked], pos: dict, labels: dict
              ) -> list[tuple[Query, list[float], list[int]]]:
    rows = []
    for q in queries:
        hits = ranked.get(key(q), [])
        rows.append((q, [s for _, s in hits], [int(pos[q.conv][mid] in labels[key(q)]) for mid, _ in hits]))
    return rows


def calibration(queries: list[Query], ranked: dict[str, Ranked], pos: dict, labels: dict) -> dict:
    """Reliability of the returned top-10 scores (evidence = relevant), per half and both."""
    out = {}
    rows = _labelled(queries, ranked, pos, labels)
    for h in (*HALVES, "both"):
        sel = [r for r in rows if h == "both" or half_of(r[0].conv) == h]
        p = np.asarray([s for r in sel for s in r[1]], dtype=np.float64)
        lab = np.asarray([x for r in sel for x in r[2]], dtype=np.float64)
        out[h] = reliability(p, lab)
    return out


def at_threshold(queries: list[Query], ranked: dict[str, Ranked], pos: dict, labels: dict,
                 t: float) -> dict[str, Any]:
    """What a recall block (hits at or above ``t``) keeps of the returned top 10."""
    kept = kept_ev = ev_total = answer_ok = answer_n = 0
    empty = {k: [0, 0] for k in NEGATIVE_KINDS}
    for q, scores, lab in _labelled(queries, ranked, pos, labels):
        passed = [s >= t for s in scores]
        kept += sum(passed)
        kept_ev += sum(1 for p, x in zip(passed, lab) if p and x)
        ev_total += sum(lab)
        if q.kind == "answerable" and any(lab):
            answer_n += 1
            answer_ok += any(p and x for p, x in zip(passed, lab))
        elif q.kind in empty:
            empty[q.kind][0] += not any(passed)
            empty[q.kind][1] += 1
    return {"hit_precision": round(kept_ev / kept, 4) if kept else None,
            "hit_recall": round(kept_ev / ev_total, 4) if ev_total else None,
            "answerable_keep_evidence": round(answer_ok / answer_n, 4) if answer_n else None,
            "mean_hits_kept": round(kept / len(queries), 2) if queries else 0.0,
            "empty_block": {k: round(v[0] / v[1], 4) if v[1] else None for k, v in empty.items()}}


def agreement(a: dict[str, Ranked], b: dict[str, Ranked], rel: float = 1e-5) -> dict[str, Any]:
    """How often two backends return the same top 10 (exactly, and ties aside)."""
    same = tie_same = 0
    worst = 0.0
    for k, left in a.items():
        right = b.get(k, [])
        same += [m for m, _ in left] == [m for m, _ in right]
        scores = dict(left)
        worst = max([worst, *(abs(s - scores[m]) for m, s in right if m in scores)])
        tie_same += len(left) == len(right) and all(
            math.isclose(sl, sr, rel_tol=rel, abs_tol=1e-12) for (_, sl), (_, sr) in zip(left, right)
        ) and {m for m, _ in left} == {m for m, _ in right}
    return {"queries": len(a), "identical_top10": same, "same_top10_ties_aside": tie_same,
            "max_score_difference": worst}
