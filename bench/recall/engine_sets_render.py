"""Markdown for bench/results/recall_engine.md (:mod:`bench.recall.engine_sets_report`)."""

from __future__ import annotations

import time
from typing import Any

COLS = ("hit@1", "hit@5", "hit@10", "recall@10", "mrr")
LABELS = {"this-sqlite": "this version", "previous-sqlite": "previous version",
          "this-postgresql": "this version, PostgreSQL"}


def _row(cells: list[Any]) -> str:
    return "| " + " | ".join(f"{c:.3f}" if isinstance(c, float) else str(c) for c in cells) + " |"


def _head(cells: list[str]) -> list[str]:
    return ["| " + " | ".join(cells) + " |", "|" + "---|" * len(cells)]


def _name(key: str) -> str:
    label, variant = key.split(": ", 1)
    return f"{LABELS.get(label, label)}: {variant}"


def _tables(res: dict[str, Any]) -> list[str]:
    out = ["## Per data set and ability", ""]
    for name, tables in res["tables"].items():
        out += [f"### {name}", ""] + _head(["ability", "n", "search", *COLS])
        abilities = next(iter(tables.values()))
        for ability in abilities:
            for key, t in tables.items():
                if ability in t:
                    out.append(_row([ability, t[ability]["n"], _name(key),
                                     *[t[ability][c] for c in COLS]]))
        out.append("")
    return out


def _rule(res: dict[str, Any]) -> list[str]:
    out = ["## The rule", "",
           "`Engine.search` with the defaults minus the better of keyword-only and vector-only "
           "(`mode=`), overall; it holds at >= -0.01.", ""]
    out += _head(["data set", "version", "hit@5", "hit@10", "holds"])
    for name, by in res["rule"].items():
        for label, r in by.items():
            out.append(_row([name, LABELS.get(label, label), f"{r['hit@5']:+.3f}",
                             f"{r['hit@10']:+.3f}", "yes" if r["holds"] else "no"]))
    out += ["", "This version against the previous (`Engine.search` with the defaults, SQLite), "
            "questions better / worse and the sign test:", ""]
    out += _head(["data set", "hit@1", "hit@5", "hit@10", "mrr"])
    for name, s in res["versus previous"].items():
        out.append(_row([name, *[f"{s[k]['wins']}/{s[k]['losses']} p={s[k]['p']}"
                                 for k in ("hit@1", "hit@5", "hit@10", "mrr")]]))
    for name, a in res.get("backends", {}).items():
        out += ["", f"SQLite and PostgreSQL ({name}): the identical top 10 for "
                f"{a['identical_top10']} of {a['queries']} queries; largest score difference "
                f"{a['max_score_difference']:.2g}."]
    return out + [""]


def _score(res: dict[str, Any]) -> list[str]:
    out = ["## The score of the returned hits", "",
           "Every query's top 10 from `Engine.search` (answerable, abstention, unrelated), "
           "an evidence memory counting as an answer. The previous version's score was a "
           "relevance probability with threshold 0.003.", ""]
    for label, by in res["score"].items():
        for name, s in by.items():
            r = s["returned hits"]
            out += [f"### {LABELS.get(label, label)}, {name}: Brier {r['brier']:.4f}, "
                    f"ECE {r['ece']:.4f}", ""]
            out += _head(["predicted", "n", "mean predicted", "observed"])
            out += [_row([b["bin"], b["n"], b["predicted"], b["observed"]])
                    for b in r["rows"] if b["n"]]
            keys = [k for k in s["thresholds"][0] if k != "threshold"]
            out += [""] + _head(["threshold", *keys])
            out += [_row([t["threshold"], *[t[k] if t[k] is not None else "" for k in keys]])
                    for t in s["thresholds"]]
            out.append("")
    return out


def _cues(res: dict[str, Any]) -> list[str]:
    out = ["## Query cues, near-tie margin and instruction topics, leave one data set out", "",
           "Each value on all answerable questions of a data set (questions its cue does not "
           "change keep the shipped result). Objective = hit@5 + hit@10 + MRR. W/L against the "
           "cue turned off (hit@5, mrr).", ""]
    for family, f in res.get("cues", {}).items():
        out += [f"### {family} (shipped {f['shipped']:g})", ""]
        out += _head(["data set", "value", "questions changed", "hit@1", "hit@5", "hit@10", "mrr",
                      "W/L vs off hit@5", "W/L vs off mrr"])
        for name, values in f["per data set"].items():
            for value, s in values.items():
                vs = s.get("versus off")
                out.append(_row([name, value, s["questions changed"], s["hit@1"], s["hit@5"],
                                 s["hit@10"], s["mrr"],
                                 "/".join(map(str, vs["hit@5"])) if vs else "",
                                 "/".join(map(str, vs["mrr"])) if vs else ""]))
        out += [""] + _head(["held out", "chosen on the others", "hit@5 / hit@10 / mrr there",
                             "shipped there", "off there"])
        for h, d in f["leave one out"].items():
            def fmt(s: dict | None) -> str:
                return f"{s['hit@5']:.3f} / {s['hit@10']:.3f} / {s['mrr']:.3f}" if s else ""
            out.append(_row([h, d["chosen on the others"], fmt(d["there"]),
                             fmt(d["shipped there"]), fmt(d["off there"])]))
        holds = ", ".join(f"{v}: {'yes' if ok else 'no'}" for v, ok in f["holds on every data set"].items())
        out += ["", f"Chosen on all: {f['chosen on all']}. Loses no hit@5/hit@10 against off on "
                f"every data set: {holds}. Kept (the shipped value if it holds, else the largest "
                f"smaller one that does): {f['kept']}.", ""]
    return out


def _rankings(res: dict[str, Any]) -> list[str]:
    out = ["## The ranking's constants in Engine.search", "",
           "This version's `Engine.search` (defaults otherwise) with the BM25 k1 / b and the "
           "rank-fusion k at other values (shipped: 2 / 1 / 10).", ""]
    out += _head(["data set", "search", "n", *COLS])
    for name, by in res.get("rankings", {}).items():
        out += [_row([name, v, t["n"], *[t[c] for c in COLS]]) for v, t in by.items()]
    return out + [""]


def render(res: dict[str, Any]) -> str:
    counts = "; ".join(f"{n}: {c['answerable']} answerable, {c['abstention']} abstention, "
                       f"{c['unrelated']} unrelated" for n, c in res["counts"].items())
    head = ["# Engine.search on three kinds of data", "",
            f"`python -m bench.recall.engine_sets` (bench/recall/engine_sets.py); written "
            f"{time.strftime('%Y-%m-%d', time.gmtime())}. Every store written with "
            "`Engine.add_many` (SQLite; BEAM also PostgreSQL), every query asked with "
            "`Engine.search(question, 10, record_access=False)` and the defaults; keyword-only "
            "and vector-only with `mode=`; 'fusion alone' without the cognitive layer, "
            "associations and query cues. The previous version is the code before rank "
            f"fusion and the answer score ({res.get('previous')}), run by the same harness "
            f"on the same vectors. Queries: {counts}.", ""]
    return "\n".join(head + _rule(res) + _tables(res) + _rankings(res) + _score(res) + _cues(res)) + "\n"
