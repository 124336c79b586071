"""The query cues, the near-tie margin and the instruction-topic constants of Engine.search,
re-checked on the rank-fusion scale, leave one data set out.

Each family is one constant at several values (the shipped one is the ``shipped`` run). A
value is chosen on two data sets (the best mean of hit@5 + hit@10 + MRR over them; ties go to
the shipped value, then to the smaller one) and reported on the third, next to the shipped
value and to the cue turned off. A value holds on a data set when it loses no hit@5 and no
hit@10 against the cue turned off there.

The rule the shipped values follow (:func:`kept`): a value that holds on every data set is
kept; one that does not is lowered to the largest smaller value that does. No value is raised:
what a larger one gains comes from BEAM alone (speaker and preference cues fire on 83 and 61
of its questions, on 6 and 3 of REALTALK's, on 0 and 44 of the agent memories'), which no
other data set can confirm.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.recall.engine_sets import (
    CLOSE_MARGINS,
    CUE_SETTINGS,
    CUE_VALUES,
    TOPIC_FLOORS,
    TOPIC_WEIGHTS,
    shipped_values,
)


def families() -> dict[str, tuple[float, dict[float, str], float | None]]:
    """family -> (shipped value, value -> variant name, the value that turns it off or None)."""
    shipped = shipped_values()
    return {
        **{f"{cue} margin": (shipped[cue], {v: f"{cue} {v:g}" for v in CUE_VALUES}, 0.0)
           for cue in CUE_SETTINGS},
        "near-tie margin": (shipped["near-tie"], {m: f"near-tie {m:g}" for m in CLOSE_MARGINS},
                            0.0),
        "instruction weight": (shipped["topic weight"],
                               {w: f"topic weight {w:g}" for w in TOPIC_WEIGHTS}, 0.0),
        "instruction floor": (shipped["topic floor"],
                              {f: f"topic floor {f:g}" for f in TOPIC_FLOORS}, None),
    }


KEYS = ("hit@1", "hit@5", "hit@10", "mrr")


def _metrics(meta: dict[str, tuple], hits: dict[str, list]) -> dict[str, dict[str, float]]:
    from bench.recall.engine_sets_report import question_metrics

    return {k: question_metrics([h[0] for h in hits.get(k, [])], ev)
            for k, (kind, _a, ev) in meta.items() if kind == "answerable"}


def family_rows(meta: dict[str, dict[str, tuple]], run: dict[str, Any], family: str
                ) -> dict[str, dict[float, dict[str, dict[str, float]]]]:
    """data set -> value -> key -> metrics (a question a variant did not ask is the shipped
    run's)."""
    shipped_value, variants, _off = families()[family]
    out: dict[str, dict[float, dict[str, dict[str, float]]]] = {}
    for name, m in meta.items():
        if name not in run:
            continue
        base = _metrics(m, run[name]["shipped"])
        out[name] = {shipped_value: base}
        for value, variant in variants.items():
            if variant in run[name]:
                changed = _metrics({k: v for k, v in m.items() if k in run[name][variant]},
                                   run[name][variant])
                out[name][value] = {**base, **changed}
    return out


def summary(rows: dict[str, dict[str, float]], changed: set[str]) -> dict[str, Any]:
    means = {k: round(float(np.mean([r[k] for r in rows.values()])), 4) for k in KEYS}
    return {**means, "objective": round(means["hit@5"] + means["hit@10"] + means["mrr"], 4),
            "questions changed": len(changed)}


def choose(per: dict[str, dict[float, dict[str, Any]]], names: list[str], shipped: float
           ) -> float:
    """The value with the best mean objective over ``names`` (ties: shipped, then smaller)."""
    values = sorted(set.intersection(*(set(per[n]) for n in names)))
    score = {v: float(np.mean([per[n][v]["objective"] for n in names])) for v in values}
    best = max(score.values())
    ties = [v for v in values if score[v] >= best - 1e-9]
    return shipped if shipped in ties else min(ties)


def family_section(meta: dict[str, dict[str, tuple]], run: dict[str, Any], family: str
                   ) -> dict[str, Any]:
    shipped, _variants, off = families()[family]
    rows = family_rows(meta, run, family)
    per: dict[str, dict[float, dict[str, Any]]] = {}
    for name, by_value in rows.items():
        base = by_value[shipped]
        per[name] = {}
        for value, r in by_value.items():
            changed = {k for k in r if r[k] != base[k]} if value != shipped else set()
            per[name][value] = summary(r, changed)
            if off is not None and off in by_value and value != off:
                ref = by_value[off]
                per[name][value]["versus off"] = {
                    k: [sum(r[q][k] > ref[q][k] for q in r), sum(r[q][k] < ref[q][k] for q in r)]
                    for k in KEYS}
    names = list(per)
    held = {}
    for h in names:
        others = [n for n in names if n != h]
        value = choose(per, others, shipped) if others else shipped
        held[h] = {"chosen on the others": value, "there": per[h][value],
                   "shipped there": per[h][shipped],
                   "off there": per[h].get(off) if off is not None else None}
    holds = {}
    for value in sorted(set.intersection(*(set(p) for p in per.values()))):
        holds[f"{value:g}"] = all(
            off is None or value == off or
            all(per[n][value][k] >= per[n][off][k] for k in ("hit@5", "hit@10")) for n in names)
    return {"shipped": shipped, "off": off, "kept": f"{kept(holds, shipped):g}",
            "per data set": {
        n: {f"{v:g}": s for v, s in sorted(p.items())} for n, p in per.items()},
        "leave one out": {h: {**d, "chosen on the others": f"{d['chosen on the others']:g}"}
                          for h, d in held.items()},
        "chosen on all": f"{choose(per, names, shipped):g}", "holds on every data set": holds}


def kept(holds: dict[str, bool], shipped: float) -> float:
    """The shipped value if it holds on every data set, else the largest smaller one that
    does (the shipped value when none was tried)."""
    if holds.get(f"{shipped:g}", True):
        return shipped
    lower = [float(v) for v, ok in holds.items() if ok and float(v) < shipped]
    return max(lower) if lower else shipped


def cue_section(meta: dict[str, dict[str, tuple]], run: dict[str, Any]) -> dict[str, Any]:
    """Every family whose variants were run."""
    present = {v for r in run.values() for v in r}
    return {family: family_section(meta, run, family) for family, (_s, variants, _o)
            in families().items() if present & set(variants.values())}
