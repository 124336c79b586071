"""Scoring the Engine.search runs of :mod:`bench.recall.engine_sets`: per data set and ability
hit@1/5/10, recall@10 and MRR of each version and variant, the rule (the defaults >= the
better of keyword-only and vector-only - 0.01 at hit@5 and hit@10), this version against the
previous, both backends, the score on the returned hits, and the query cues leave one data
set out (:mod:`bench.recall.engine_cues`). Writes bench/results/recall_engine.{json,md}."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.recall import sets
from bench.recall.engine_sets import BASE, queries_of
from bench.recall.fit import reliability
from bench.recall.metrics import sign_test

REPO_ROOT = Path(__file__).resolve().parents[2]
METRICS = ("hit@1", "hit@5", "hit@10", "recall@10", "mrr")
THRESHOLDS = (0.003, 0.1, 0.15, 0.17, 0.2, 0.3, 0.5)
#: Each version's default recall threshold (the previous score was a relevance probability
#: calibrated to BEAM's base rate).
VERSION_THRESHOLD = {"this": 0.17, "previous": 0.003}
Meta = dict[str, dict[str, tuple[str, str, list[int]]]]  # data set -> key -> (kind, ability, evidence)


def query_meta(names: Sequence[str]) -> Meta:
    """Every query's kind, ability and evidence positions, keyed as the runs are."""
    out: Meta = {}
    for name, convs in sets.load_sets(names, lambda _m: None).items():
        out[name] = {f"{c.number}:{i}": (kind, ability, evidence)
                     for c in convs for i, (kind, ability, _t, evidence) in enumerate(queries_of(c))}
    return out


def question_metrics(ranked: Sequence[int], evidence: Sequence[int]) -> dict[str, float]:
    gold = set(evidence)
    first = next((i for i, d in enumerate(ranked[:10], start=1) if d in gold), None)
    return {"hit@1": float(first == 1), "hit@5": float(first is not None and first <= 5),
            "hit@10": float(first is not None), "recall@10": len(gold & set(ranked[:10])) / len(gold),
            "mrr": 1.0 / first if first else 0.0}


def per_question(meta: dict[str, tuple], run: dict[str, list], fallback: dict[str, list] | None = None
                 ) -> dict[str, dict[str, float]]:
    """key -> metrics of every answerable question (a key missing from ``run`` is read from
    ``fallback``: a cue variant only asks the questions its cue changes)."""
    out = {}
    for key, (kind, _ability, evidence) in meta.items():
        if kind != "answerable":
            continue
        hits = run.get(key) if key in run or fallback is None else fallback.get(key)
        out[key] = question_metrics([h[0] for h in hits or []], evidence)
    return out


def table(meta: dict[str, tuple], rows: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """Means per ability and overall (with n)."""
    groups: dict[str, list[dict[str, float]]] = {"overall": list(rows.values())}
    for key, m in rows.items():
        groups.setdefault(meta[key][1], []).append(m)
    return {g: {"n": len(v), **{k: round(float(np.mean([r[k] for r in v])), 4) for k in METRICS}}
            for g, v in groups.items()}


def sign(base: dict[str, dict[str, float]], new: dict[str, dict[str, float]], metric: str
         ) -> dict[str, Any]:
    wins = sum(1 for k in new if new[k][metric] > base[k][metric])
    losses = sum(1 for k in new if new[k][metric] < base[k][metric])
    return {"wins": wins, "losses": losses, "p": round(sign_test(wins, losses), 4)}


def rule(t: dict[str, dict[str, dict[str, float]]], shipped: str, keyword: str, vector: str
         ) -> dict[str, Any]:
    """Shipped minus the better single side, overall hit@5 and hit@10 (>= -0.01 holds)."""
    out = {k: round(t[shipped]["overall"][k] - max(t[keyword]["overall"][k],
                                                   t[vector]["overall"][k]), 4)
           for k in ("hit@5", "hit@10")}
    return {**out, "holds": all(v >= -0.01 for v in out.values())}


def score_section(meta: dict[str, tuple], run: dict[str, list], threshold: float) -> dict[str, Any]:
    """The returned top 10's scores: reliability and Brier (evidence = answers), and what a
    recall block at each threshold keeps."""
    p, y = [], []
    for key, (_kind, _a, evidence) in meta.items():
        gold = set(evidence)
        for h in run.get(key, []):
            p.append(h[1])
            y.append(float(h[0] in gold))
    return {"returned hits": reliability(np.asarray(p), np.asarray(y)),
            "thresholds": [at_threshold(meta, run, t) for t in sorted({*THRESHOLDS, threshold})]}


def at_threshold(meta: dict[str, tuple], run: dict[str, list], t: float) -> dict[str, Any]:
    kept = kept_answers = answers = found = found_kept = 0
    empty: dict[str, list[bool]] = {}
    for key, (kind, _a, evidence) in meta.items():
        gold = set(evidence)
        hits = run.get(key, [])
        above = [h for h in hits if h[1] >= t]
        kept += len(above)
        kept_answers += sum(1 for h in above if h[0] in gold)
        answers += sum(1 for h in hits if h[0] in gold)
        if kind == "answerable" and any(h[0] in gold for h in hits):
            found += 1
            found_kept += any(h[0] in gold for h in above)
        elif kind != "answerable":
            empty.setdefault(kind, []).append(not above)
    return {"threshold": t, "precision": round(kept_answers / kept, 4) if kept else None,
            "recall": round(kept_answers / answers, 4) if answers else None,
            "questions keeping an answer": round(found_kept / found, 4) if found else None,
            "hits kept per query": round(kept / max(1, len(meta)), 2),
            **{f"empty: {k}": round(float(np.mean(v)), 4) for k, v in sorted(empty.items())}}


def agreement(a: dict[str, list], b: dict[str, list]) -> dict[str, Any]:
    same = sum(1 for k, left in a.items() if [h[0] for h in left] == [h[0] for h in b.get(k, [])])
    worst = max((abs(x[1] - y[1]) for k in a for x, y in zip(a[k], b.get(k, [])) if x[0] == y[0]),
                default=0.0)
    return {"queries": len(a), "identical_top10": same, "max_score_difference": worst}


def load_runs(runs: Path) -> dict[str, dict[str, Any]]:
    """version-backend -> data set -> variant -> key -> hits (files present only; a file
    ``<version>-<backend>-<part>.json`` adds variants to ``<version>-<backend>``)."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(runs.glob("*.json")):
        label = "-".join(path.stem.split("-")[:2])
        for name, variants in json.loads(path.read_text())["runs"].items():
            out.setdefault(label, {}).setdefault(name, {}).update(variants)
    return out


def ranking_variants(meta: Meta, run: dict[str, Any]) -> dict[str, Any]:
    """This version's search at other BM25 / rank-fusion constants, overall per data set."""
    from bench.recall.engine_sets import RANKINGS

    out: dict[str, Any] = {}
    for name, m in meta.items():
        if name not in run:
            continue
        for v in ("shipped", "keyword", "vector", *RANKINGS):
            if v in run[name]:
                out.setdefault(name, {})[v] = table(m, per_question(m, run[name][v]))["overall"]
    return out


def version_tables(meta: Meta, runs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Tables, the rule and the comparison of this version with the previous one."""
    out: dict[str, Any] = {"tables": {}, "rule": {}, "versus previous": {}}
    for name, m in meta.items():
        rows = {f"{label}: {v}": per_question(m, r[name][v]) for label, r in runs.items()
                if name in r for v in BASE if v in r[name]}
        out["tables"][name] = {k: table(m, v) for k, v in rows.items()}
        for label in runs:
            if f"{label}: shipped" in rows and f"{label}: keyword" in rows:
                out["rule"].setdefault(name, {})[label] = rule(
                    out["tables"][name], f"{label}: shipped", f"{label}: keyword", f"{label}: vector")
        if "this-sqlite: shipped" in rows and "previous-sqlite: shipped" in rows:
            out["versus previous"][name] = {
                k: sign(rows["previous-sqlite: shipped"], rows["this-sqlite: shipped"], k)
                for k in ("hit@1", "hit@5", "hit@10", "mrr")}
    return out


def commit_of(src: Path) -> str:
    """The git commit of the checkout holding ``src`` (its path when that cannot be read)."""
    import subprocess

    try:
        out = subprocess.run(["git", "-C", str(src), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, check=True, timeout=10)
        return f"commit {out.stdout.strip()}"
    except (OSError, subprocess.SubprocessError):
        return str(src)


def report(runs_dir: Path, names: Sequence[str], previous: Path | None,
           log: Callable[[str], None], out_dir: Path | None = None) -> dict[str, Any]:
    from bench.recall.engine_cues import cue_section
    from bench.recall.engine_sets_render import render

    runs = load_runs(runs_dir)
    meta = query_meta(names)
    res = version_tables(meta, runs)
    res["previous"] = commit_of(previous) if previous else None
    res["counts"] = {n: {k: sum(1 for v in m.values() if v[0] == k)
                         for k in ("answerable", "abstention", "unrelated")} for n, m in meta.items()}
    res["score"] = {label: {n: score_section(meta[n], r[n]["shipped"],
                                             VERSION_THRESHOLD[label.split("-")[0]])
                            for n in meta if n in r and "shipped" in r[n]}
                    for label, r in runs.items() if label.endswith("sqlite")}
    if "this-postgresql" in runs and "this-sqlite" in runs:
        res["backends"] = {n: agreement(runs["this-sqlite"][n]["shipped"],
                                        runs["this-postgresql"][n]["shipped"])
                           for n in runs["this-postgresql"]}
    if "this-sqlite" in runs:
        res["cues"] = cue_section(meta, runs["this-sqlite"])
        res["rankings"] = ranking_variants(meta, runs["this-sqlite"])
    out_dir = out_dir or REPO_ROOT / "bench" / "results"
    (out_dir / "recall_engine.json").write_text(json.dumps(res, indent=1) + "\n")
    (out_dir / "recall_engine.md").write_text(render(res))
    log(f"wrote {out_dir}/recall_engine.{{json,md}}")
    return res
