"""A local re-ranker over the top 20 or 50 of memoryd's shipped hybrid search.

The candidates are the first N hits of ``Engine.search`` (hybrid as shipped, the baseline
model). The re-ranker (run by ``worker.py rerank`` in its scratch venv, no network) scores
each (question, memory content) pair; the top N are re-ordered by that score and the metrics
are computed on the new top 10. The worker times every call, so latency per query is the
re-ranker's own cost for N candidates.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from bench.embedmodels.recall import Question, aggregate, paired
from bench.embedmodels.texts import WORK

DEPTHS = (20, 50)
MAX_CHARS = 1000  # first 1,000 characters of each memory (the evidence is mostly short)


def reranked(questions: Sequence[Question], depth: int, scores: Sequence[Sequence[float]],
             source: str) -> list[Question]:
    """Copies of ``questions`` whose ``ranked[f"rerank@{depth}"]`` is the re-scored top ``depth``."""
    out = []
    for q, s in zip(questions, scores):
        top = q.ranked[source][:depth]
        order = np.argsort(-np.asarray(s, dtype=np.float64), kind="stable")
        copy = Question(q.conv, q.ability, q.index, q.text, q.evidence, dict(q.ranked))
        copy.ranked[f"rerank@{depth}"] = [top[i] for i in order][:10]
        out.append(copy)
    return out


def sample(questions: Sequence[Question], n: int | None) -> list[Question]:
    """Every ``len/n``-th question (all when ``n`` is None): a spread over conversations."""
    if not n or n >= len(questions):
        return list(questions)
    step = len(questions) / n
    return [questions[int(i * step)] for i in range(n)]


def run(name: str, questions: Sequence[Question], content: Mapping[tuple[int, str], str],
        score_file: Callable[[Path, Path], dict[str, Any]], source: str,
        limit: int | None = None) -> dict[str, Any]:
    """Re-rank the top 20 and top 50 of every question (or of an even ``limit``-question
    sample, for re-rankers too slow for all) with re-ranker ``name``; metrics and timing."""
    questions = sample(questions, limit)
    result: dict[str, Any] = {"name": name, "source": source, "questions": len(questions),
                              "depths": {}}
    for depth in DEPTHS:
        items = [{"query": q.text,
                  "docs": [content[(q.conv, i)][:MAX_CHARS] for i in q.ranked[source][:depth]]}
                 for q in questions]
        pairs = WORK / "rerank" / f"{name}-{depth}-pairs.json"
        pairs.parent.mkdir(parents=True, exist_ok=True)
        payload = json.dumps(items)
        out = pairs.with_name(f"{name}-{depth}-scores.json")
        status_file = pairs.with_name(f"{name}-{depth}-status.json")
        # the same pairs as a finished earlier run: reuse its scores
        if not (out.exists() and status_file.exists() and pairs.exists()
                and pairs.read_text(encoding="utf-8") == payload):
            pairs.write_text(payload, encoding="utf-8")
            out.unlink(missing_ok=True)
            status = score_file(pairs, out)
            if not status.get("ok"):
                result["error"] = status.get("error")
                return result
            status_file.write_text(json.dumps(status), encoding="utf-8")
        status = json.loads(status_file.read_text(encoding="utf-8"))
        data = json.loads(out.read_text(encoding="utf-8"))
        ms = [m for m, it in zip(data["ms"], items) if len(it["docs"]) == depth]  # full lists only
        rq = reranked(questions, depth, data["scores"], source)
        label = f"rerank@{depth}"
        result["depths"][depth] = {
            "metrics": aggregate(rq, label),
            "shipped_same_questions": aggregate(questions, "hybrid")["overall"],
            "vs_shipped_hit@5": paired(questions, rq, label, "hit@5", base_mode="hybrid"),
            "vs_shipped_hit@10": paired(questions, rq, label, "hit@10", base_mode="hybrid"),
            "latency_p50_ms": round(float(np.median(ms)), 1) if ms else None,
            "latency_p95_ms": round(float(np.percentile(ms, 95)), 1) if ms else None,
            "timed_queries": len(ms),
            "load_s": status.get("load_s"),
        }
    return result
