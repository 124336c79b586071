"""Markdown for the across-data-sets recall bench (bench/recall/across.py)."""

from __future__ import annotations

from typing import Any

from bench.recall.lodo import METRICS, RANKERS


def _row(cells: list[Any]) -> str:
    return "| " + " | ".join("" if c is None else f"{c:.3f}" if isinstance(c, float) else str(c)
                             for c in cells) + " |"


def _head(cells: list[str]) -> list[str]:
    return [_row(cells), "|" + "---|" * len(cells)]


def _counts(res: dict[str, Any]) -> list[str]:
    out = ["## Data", ""] + _head(["data set", "stores", "memories", "answerable questions",
                                   "queries (with abstention and unrelated)"])
    for name, c in res["counts"].items():
        out.append(_row([name, c["stores"], c["memories"], c["answerable"], c["queries"]]))
    return out + [""]


def _grid(res: dict[str, Any]) -> list[str]:
    if "grid" not in res:
        return []
    names = list(next(iter(res["grid"].values())))
    out = ["## BM25 k1/b and the rank-fusion constant, leave one data set out", "",
           "Per data set: keyword-only / vector-only / ranking hit@5 (the ranking fitted on the "
           "other two). Rule: ranking >= the better single side - 0.01 at hit@5 and hit@10 on "
           "every data set. Worst shortfall: the largest gap, over data sets, between this "
           "setting's ranking hit@5 and that data set's best.", ""]
    out += _head(["k1/b/k", *names, "rule holds", "worst shortfall"])
    for key, g in res["grid"].items():
        out.append(_row([key, *[f"{g[n]['keyword hit@5']:.3f} / {g[n]['vector hit@5']:.3f} / "
                                f"{g[n]['shipped hit@5']:.3f}" for n in names],
                         "yes" if res["grid_rule"][key] else "no", res["grid_regret"][key]]))
    c = res["bm25"]
    out += ["", f"Chosen on all three: k1 = {c['k1']:g}, b = {c['b']:g}, k = {c['rank_k']:g}. "
            "Chosen on two, scored on the third:", ""]
    out += _head(["held out", "chosen on the others", "keyword hit@5", "vector hit@5",
                  "ranking hit@5", "ranking hit@10", "rule holds"])
    for n, r in res["chosen_held_out"].items():
        out.append(_row([n, r["setting"], r["keyword hit@5"], r["vector hit@5"],
                         r["shipped hit@5"], r["shipped hit@10"], "yes" if r["rule holds"]
                         else "no"]))
    return out + [""]


def _ranking(res: dict[str, Any]) -> list[str]:
    r = res["ranking"]
    out = ["## Keyword, vector and the relevance ranking (held out)", "",
           "Each data set ranked by the model fitted on the other two.", ""]
    for name, tables in r["tables"].items():
        out += [f"### {name}", ""] + _head(["ability", "n", "ranker", *METRICS])
        for ability in tables["shipped"]:
            for ranker in RANKERS:
                t = tables[ranker][ability]
                out.append(_row([ability, t["n"], ranker, *[t[m] for m in METRICS]]))
        out.append("")
    out += ["Rule: ranking minus the better single side (must be >= -0.01):", ""]
    out += _head(["data set", "hit@5", "hit@10"])
    out += [_row([n, m["hit@5"], m["hit@10"]]) for n, m in r["rule"].items()] + [""]
    names = list(r["single"])
    out += ["Fitted on one data set (rows), scored on each (hit@5 / hit@10):", ""]
    out += _head(["fitted on", *names])
    for src, row in r["single"].items():
        out.append(_row([src, *[f"{row[t]['hit@5']:.3f} / {row[t]['hit@10']:.3f}"
                                for t in names]]))
    out += ["", "All seven features fitted (leave one out), hit@5 / hit@10: " + ", ".join(
        f"{n} {t['hit@5']:.3f} / {t['hit@10']:.3f}" for n, t in r["fitted seven features"].items()),
        "", "Ranking models (intercept, then cosine, cosine_gap, coverage, saturation, "
        "keyword_lead, keyword_rr, vector_rr):", ""]
    for name, m in {**{f"without {k}": v for k, v in r["models"].items()},
                    "all three (shipped)": r["all"]}.items():
        out.append(f"- {name}: {m['intercept']}, {list(m['weights'].values())}")
    return out + [""]


def _reliability(rows: list[dict[str, Any]], mass: str) -> list[str]:
    out = _head(["predicted", mass, "mean predicted", "observed"])
    return out + [_row([r["bin"], r.get(mass), r["predicted"], r["observed"]]) for r in rows]


def _answer(res: dict[str, Any]) -> list[str]:
    a = res["answer"]
    out = ["## The score: P(answers), held out", "",
           f"Fixed-ratio sample: each answerable question's answers weigh 1, the other memories "
           f"of its store {a['ratio']:g} in all. Default threshold {a['threshold']}.", ""]
    for name, h in a["held out"].items():
        fr, rh = h["fixed-ratio sample"], h["returned hits"]
        out += [f"### held out: {name}", "",
                f"Fitted on the others: {h['model']}. Fixed-ratio sample: Brier {fr['brier']}, "
                f"ECE {fr['ece']} ({fr['pairs']} pairs). Top {10} returned hits of every query "
                f"(answerable, abstention, unrelated): Brier {rh['brier']}, ECE {rh['ece']} "
                f"({rh['pairs']} hits, {rh['positives']} answers).", ""]
        out += _reliability(fr["rows"], "weight") + [""]
        out += _reliability(rh["rows"], "n") + [""]
        keys = list(h["thresholds"][0])
        out += _head(keys)
        out += [_row([t[k] for k in keys]) for t in h["thresholds"]] + [""]
    out += [f"Shipped (all three): {a['all']}. The default threshold is the largest that keeps, "
            f"on every data set held out, at least 95% of the answerable questions whose answer "
            f"is in the top 10: {a['chosen threshold']}.", ""]
    for key in ("new user's store", "new user's store, fitted without agent memories"):
        out += [f"### {key}", ""] + _head(["query", "kind", "best memory", "cosine", "score"])
        out += [_row([r["query"], r["kind"], r["best"], r["cosine"], r["score"]])
                for r in a[key]] + [""]
    return out


def _context(res: dict[str, Any]) -> list[str]:
    if "context" not in res:
        return []
    out = ["## Conversation context (held out)", "",
           "The ranking's hit@1 / hit@5 / hit@10 / MRR with each variant, and sign tests of "
           "its hit@5 and MRR against the plain store (wins/losses).", ""]
    out += _head(["variant", "data set", "hit@1", "hit@5", "hit@10", "mrr", "W/L hit@5",
                  "W/L mrr"])
    base = res["ranking"]["tables"]
    for name, t in base.items():
        o = t["shipped"]["overall"]
        out.append(_row(["plain", name, o["hit@1"], o["hit@5"], o["hit@10"], o["mrr"], "", ""]))
    for variant, per in res["context"].items():
        for name, row in per.items():
            s5, sm = row["sign hit@5"], row["sign mrr"]
            out.append(_row([variant, name, row["shipped hit@1"], row["shipped hit@5"],
                             row["shipped hit@10"], row["shipped mrr"],
                             f"{s5['wins']}/{s5['losses']}", f"{sm['wins']}/{sm['losses']}"]))
    return out + [""]


def render(res: dict[str, Any]) -> str:
    lines = ["# Recall across three kinds of data", "",
             "`python -m bench.recall.across` (bench/recall/across.py); "
             f"run {res['meta']['run']}, {res['meta']['runtime_s']} s; {res['meta']['model']}.",
             ""]
    for part in (_counts, _grid, _ranking, _answer, _context):
        lines += part(res)
    return "\n".join(lines) + "\n"
