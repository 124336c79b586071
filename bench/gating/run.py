"""Evaluate the smart-ingest gate on labelled pairs with real similarities.

    .venv/bin/python -m bench.gating            # ~3 min; writes bench/results/gating.{json,md}

Data and sets: :mod:`bench.gating.pairs`. Each pair is gated as a new text against one stored
candidate with the real ``gating.decide`` and the cosine similarity of the default model.
Reported: precision / recall / F1 per decision and the confusion table per set, decisions per
class of the gate pairs, the thresholds fitted on the fit topics (grid search, hard limits:
reinforce precision >= 0.98 and no changed value folded in) and their result on the held-out
topics, and the contradiction detector against a plain word-list baseline. Pairwise data
cannot exercise MERGE (it needs two stored candidates); unit tests cover it.
"""

from __future__ import annotations

import json
import platform
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.gating import measures, pairs
from bench.gating.report import markdown
from memoryd.cognition import gating

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results"
WORD_LIST = ("not", "no", "never", "no longer", "instead", "actually", "now", "changed",
             "switched", "moved", "anymore", "correction", "updated", "replaced", "n't")


def word_list_baseline(old: str, new: str) -> bool:
    """Contradiction if the new text carries a change/negation cue the old one does not."""
    def cues(text: str) -> set[str]:
        low = text.lower()
        return {w for w in WORD_LIST
                if (w == "n't" and "n't" in low) or re.search(r"\b" + re.escape(w) + r"\b", low)}

    return bool(cues(new) - cues(old))


def detector_scores(items: list[dict[str, Any]]) -> dict[str, Any]:
    """The detector and the word list as a binary test: does the new text change the old?"""
    truth = [i["expected"] == "supersede" for i in items]

    def prf(flags: list[bool]) -> dict[str, float]:
        tp = sum(t and f for t, f in zip(truth, flags))
        fp = sum((not t) and f for t, f in zip(truth, flags))
        fn = sum(t and (not f) for t, f in zip(truth, flags))
        return {"precision": tp / (tp + fp) if tp + fp else float("nan"),
                "recall": tp / (tp + fn) if tp + fn else float("nan"),
                "f1": 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else float("nan"),
                "false_alarms": fp}

    ours = prf([pairs.cached_detect(i["old"], i["new"]).is_contradiction for i in items])
    words = prf([word_list_baseline(i["old"], i["new"]) for i in items])
    return {"n": len(items), "positives": sum(truth), "detector": ours, "word_list": words}


def by_class(items: list[dict[str, Any]], params: gating.GatingParams) -> dict[str, dict[str, int]]:
    """Class of the gate pairs -> how many pairs got each decision."""
    out: dict[str, Counter[str]] = {}
    for item in items:
        out.setdefault(item["class"], Counter())[pairs.gate(item, params).decision] += 1
    return {k: dict(v) for k, v in out.items()}


def errors(items: list[dict[str, Any]], params: gating.GatingParams) -> list[dict[str, Any]]:
    """The pairs the gate decided otherwise than expected."""
    out = []
    for item in items:
        gate = pairs.gate(item, params)
        if gate.decision != item["expected"]:
            out.append({"id": item["id"], "class": item.get("class", item.get("label")),
                        "decided": gate.decision, "similarity": round(item["similarity"], 3),
                        "old": item["old"], "new": item["new"], "reason": gate.reason})
    return out


def main() -> None:
    started = time.time()
    model_id, raw = pairs.scored_sets()
    sets = pairs.split(raw)
    shipped = gating.GatingParams()
    # The earlier pairs join the fit: they hold the only elaborations (expected update).
    fitted, fitted_f1, top = measures.fit(sets["gate_fit"] + sets["earlier"])
    report: dict[str, Any] = {
        "model": model_id, "python": platform.python_version(),
        "counts": {name: dict(Counter(i.get("class", i.get("label")) for i in items))
                   for name, items in sets.items()},
        "fit_topics": sorted(pairs.FIT_TOPICS),
        "held_topics": sorted({p["topic"] for p in sets["gate_held"]}),
        "shipped": {"params": measures.params_dict(shipped),
                    "sets": {n: measures.run(items, shipped) for n, items in sets.items()}},
        "fitted": {"params": measures.params_dict(fitted), "macro_f1_on_fit": fitted_f1,
                   "top": top,
                   "sets": {n: measures.run(sets[n], fitted)
                            for n in ("gate_fit", "earlier", "gate_held")}},
        "by_class": {n: by_class(sets[n], shipped) for n in ("gate_fit", "gate_held", "fresh")},
        "detector": {n: detector_scores(items) for n, items in sets.items()},
        "held_errors": errors(sets["gate_held"], shipped),
        "fresh_errors": errors(sets["fresh"], shipped),
        "earlier_errors": errors(sets["earlier"], shipped),
    }
    report["run_s"] = round(time.time() - started)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "gating.json").write_text(json.dumps(report, indent=2, default=float) + "\n")
    (RESULTS / "gating.md").write_text(markdown(report))
    print(markdown(report))


if __name__ == "__main__":
    main()
