"""The markdown report of the gating bench (bench/results/gating.md)."""

from __future__ import annotations

import math
from typing import Any

from bench.gating.measures import DECISIONS

_SETS = {
    "gate": "gate pairs, all topics",
    "gate_fit": "gate pairs, fit topics",
    "gate_held": "gate pairs, held-out topics",
    "fresh": "fresh pairs (written after the gate, measured as written)",
    "earlier": "earlier pairs (the detector was built on them)",
    "beam_message": "BEAM pairs, whole messages",
    "beam_sentence": "BEAM pairs, closest sentences",
    "beam_sentence_held": "BEAM pairs, closest sentences, conversations 11-20",
}


def _f(x: float) -> str:
    return "n/a" if isinstance(x, float) and math.isnan(x) else f"{x:.2f}"


def _table(runs: dict[str, dict[str, Any]]) -> list[str]:
    shown = ("reinforce", "update", "supersede", "create")
    out = ["| set | n | accuracy | macro-F1 | " + " | ".join(f"{d} P / R" for d in shown)
           + " | changed value folded in |", "|---" * (5 + len(shown)) + "|"]
    for name, m in runs.items():
        pd = m["per_decision"]
        cells = [f"{_f(pd[d]['precision'])} / {_f(pd[d]['recall'])}" for d in shown]
        out.append(f"| {_SETS.get(name, name)} | {m['n']} | {_f(m['accuracy'])} | "
                   f"{_f(m['macro_f1'])} | " + " | ".join(cells)
                   + f" | {len(m['changed_folded'])} |")
    return out + [""]


def _confusion(title: str, m: dict[str, Any]) -> list[str]:
    out = [f"Confusion ({title}; rows expected, columns decided):", "",
           "| expected \\ decided | " + " | ".join(DECISIONS) + " |",
           "|---" * (len(DECISIONS) + 1) + "|"]
    for expected, row in m["confusion"].items():
        out.append(f"| {expected} | " + " | ".join(str(row[d]) for d in DECISIONS) + " |")
    return out + [""]


def _classes(by_class: dict[str, dict[str, dict[str, int]]]) -> list[str]:
    out = ["Decisions per class of the gate pairs (fit topics / held-out topics):", "",
           "| class | " + " | ".join(DECISIONS) + " |", "|---" * (len(DECISIONS) + 1) + "|"]
    classes = ("duplicate", "rephrase", "new_value", "contradiction", "distinct")
    for c in classes:
        fit, held = by_class["gate_fit"].get(c, {}), by_class["gate_held"].get(c, {})
        out.append(f"| {c} | " + " | ".join(f"{fit.get(d, 0)} / {held.get(d, 0)}"
                                            for d in DECISIONS) + " |")
    return out + [""]


def _detector(report: dict[str, Any]) -> list[str]:
    out = ["## The contradiction detector against a word list", "",
           "Binary: does the new text change the old one (expected supersede)? The word list "
           "flags a pair when the new text has a negation or change cue the old one lacks. "
           "The gate does not take the detector's word alone (see gating.py).", "",
           "| set | n | positives | detector P / R / F1 | false alarms | word list P / R / F1 "
           "| false alarms |", "|---|---|---|---|---|---|---|"]
    for name, d in report["detector"].items():
        o, w = d["detector"], d["word_list"]
        out.append(f"| {_SETS.get(name, name)} | {d['n']} | {d['positives']} | "
                   f"{_f(o['precision'])} / {_f(o['recall'])} / {_f(o['f1'])} | "
                   f"{o['false_alarms']} | {_f(w['precision'])} / {_f(w['recall'])} / "
                   f"{_f(w['f1'])} | {w['false_alarms']} |")
    return out + [""]


def _errors(title: str, errors: list[dict[str, Any]]) -> list[str]:
    out = [f"## {title}", ""]
    out += [f"- {e['id']} {e['class']} -> {e['decided']} (similarity {e['similarity']:.2f}): "
            f"{e['old']!r} / {e['new']!r}" for e in errors]
    return out + [""]


def markdown(report: dict[str, Any]) -> str:
    """The report as markdown."""
    shipped, fitted = report["shipped"], report["fitted"]
    out = ["# The smart-ingest gate on labelled pairs", "",
           f"Model: {report['model']}; each pair is gated as a new text against one stored "
           "memory with their real cosine similarity and the real `gating.decide` "
           "(`python -m bench.gating`). Expected decisions: duplicate and rephrase -> "
           "reinforce; new value and contradiction -> supersede; related but distinct -> "
           "create (earlier pairs: update -> update). `changed value folded in` counts "
           "pairs whose new text changes a value and still ended in reinforce or merge "
           "(must be 0).", "",
           f"Fit topics: {', '.join(report['fit_topics'])}. Held-out topics: "
           f"{', '.join(report['held_topics'])}.", "",
           f"Pairs: {report['counts']}", "",
           "## Shipped defaults (`gating.GatingParams()`)", "",
           f"Parameters: `{shipped['params']}`", ""]
    out += _table(shipped["sets"])
    out += _classes(report["by_class"])
    for name in ("gate_held", "fresh", "gate_fit", "earlier", "beam_sentence"):
        if name in shipped["sets"]:
            out += _confusion(_SETS[name], shipped["sets"][name])
    out += ["## Fit on the fit topics", "",
            "Grid search (reinforce, update, supersede, changed_value, swap_similarity, "
            "max_added_words) for the best macro-F1 on the fit topics of the gate pairs plus "
            "the earlier pairs (the only ones with elaborations, expected update), with "
            "reinforce precision >= 0.98 and no changed value folded in, smoothed over "
            "neighbouring grid points. The held-out topics were not used.", "",
            f"Best: `{fitted['params']}` (macro-F1 {fitted['macro_f1_on_fit']:.3f} on the fit "
            "data). Top grid points:", ""]
    out += [f"- {t}" for t in fitted["top"]] + [""]
    out += _table(fitted["sets"])
    out += _detector(report)
    out += _errors("Held-out gate pairs the shipped defaults decide otherwise",
                   report["held_errors"])
    out += _errors("Fresh pairs the shipped defaults decide otherwise",
                   report.get("fresh_errors", []))
    out += _errors("Earlier pairs the shipped defaults decide otherwise", report["earlier_errors"])
    out += ["## Notes", "", *[f"- {n}" for n in NOTES], ""]
    out.append(f"Run time {report['run_s']} s.")
    return "\n".join(out) + "\n"


NOTES = (
    "A rephrasing the gate cannot prove equal (other words, not just other spellings) becomes "
    "a new memory: reinforce recall is what precision costs, and a duplicate loses nothing.",
    "BEAM pairs are user requests of one to five clauses in which the changed statement is a "
    "part ('I've never used Zotero, how do I ...' after 'I just downloaded Zotero on March "
    "2, can you ...'); superseding the old message would hide the rest of it, so the gate "
    "keeps both (create). The detector still flags most of them (table above).",
    "`changed value folded in` on BEAM's closest sentences can count a pair whose two chosen "
    "sentences do not hold the change (the sentence nearest the old one is picked by "
    "similarity): beam-3-knowledge_update-1 reinforces 'I'm using Bootstrap 5.3.0, and I've "
    "tried using the card-deck and modal popups' into a sentence that says all of it.",
)
