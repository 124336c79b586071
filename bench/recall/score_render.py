"""Markdown for bench/results/recall_score.md (:mod:`bench.recall.score_variants`)."""

from __future__ import annotations

from typing import Any


def _row(cells: list[Any]) -> str:
    return "| " + " | ".join(f"{c:.4f}" if isinstance(c, float) else str(c) for c in cells) + " |"


def _head(cells: list[str]) -> list[str]:
    return ["| " + " | ".join(cells) + " |", "|" + "---|" * len(cells)]


def _summary(res: dict[str, Any]) -> list[str]:
    names = list(next(iter(res["variants"].values()))["held out"])
    cells = ["readings", "threshold"]
    for n in names:
        cells += [f"{n} Brier (hits)", f"{n} AUC (hits)", f"{n} precision / recall",
                  f"{n} empty: abstention / unrelated"]
    out = _head(cells)
    for name, v in res["variants"].items():
        row: list[Any] = [name, v["threshold"]]
        for n in names:
            h = v["held out"][n]
            a = h["at threshold"]
            row += [h["returned"]["brier"], h["returned"]["auc"],
                    f"{a['precision']} / {a['recall']}",
                    f"{a.get('empty: abstention', '')} / {a.get('empty: unrelated', '')}"]
        out.append(_row(row))
    return out


def _new_user(res: dict[str, Any]) -> list[str]:
    out = _head(["readings", *[q["query"] for q in
                               next(iter(res["variants"].values()))["new user's store"]]])
    for name, v in res["variants"].items():
        out.append(_row([name, *[f"{q['score']:.3f}" for q in v["new user's store"]]]))
    return out


def _details(res: dict[str, Any]) -> list[str]:
    out = []
    for name, v in res["variants"].items():
        out += [f"### {name}", "", f"Fitted on all three: {v['all']} (intercept, then "
                f"{', '.join(v['readings'])}); threshold {v['threshold']}.", ""]
        out += _head(["held out", "fitted on the others", "sample Brier", "sample AUC",
                      "hits Brier", "hits ECE", "hits AUC", "questions keeping an answer",
                      "hits kept per query"])
        for n, h in v["held out"].items():
            a = h["at threshold"]
            out.append(_row([n, h["theta"], h["sample"]["brier"], h["sample"]["auc"],
                             h["returned"]["brier"], h["returned"]["ece"], h["returned"]["auc"],
                             a["questions keeping an answer"], a["hits kept per query"]]))
        for n, h in v["held out"].items():
            out += ["", f"Reliability of the returned hits, {n} held out:", ""]
            out += _head(["predicted", "n", "mean predicted", "observed"])
            out += [_row([b["bin"], b["n"], b["predicted"], b["observed"]])
                    for b in h["returned"]["rows"] if b["n"]]
        out.append("")
    return out


def render(res: dict[str, Any]) -> str:
    head = ["# The answer score: readings compared held out", "",
            "`python -m bench.recall.score_variants` (bench/recall/score_variants.py). Each "
            "model fitted on the fixed-ratio sample of two data sets, scored on the third: on "
            "that sample and on the top 10 `Engine.search` returned for every query "
            "(answerable, abstention, unrelated; an evidence memory is an answer). Threshold: "
            "the largest keeping, on every data set held out, 95% of the answerable questions "
            f"whose answer is in the top 10. Cohort: {res['cohort']} generic sentences "
            "(bench/recall/cohort.txt).", "", "## Held out", ""]
    return "\n".join(head + _summary(res) + ["", "## A new user's five facts (fitted on all "
                                             "three; never fitted on)", ""] + _new_user(res)
                     + ["", "## Details", ""] + _details(res)) + "\n"
