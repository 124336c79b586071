"""Markdown summary of the ranking bench (bench/results/recall.md)."""

from __future__ import annotations

from typing import Any

from bench.recall.engine_report import render_engine, summary_lines

COLS = ("hit@1", "hit@5", "hit@10", "recall@5", "recall@10", "mrr")


def _row(label: str, t: dict[str, float], cols=COLS) -> str:
    return f"| {label} | " + " | ".join(f"{t.get(c, 0):.3f}" for c in cols) + " |"


def _head(first: str, cols=COLS) -> list[str]:
    return [f"| {first} | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]


def render(res: dict[str, Any]) -> str:
    meta, main = res["meta"], res["main"]
    out = ["# Recall on BEAM: ranking", "",
           f"Run {meta['run']}; conversations {len(meta['conversations'])}, {meta['messages']} messages "
           f"(one memory each); {res['counts']['answerable']} questions with evidence; model {meta['model']}; "
           f"runtime {meta['runtime_s']}s. Produced by `python -m bench.recall.ranking` "
           "(bench/recall/ranking.py). Fitted parts are scored by 2-fold cross-validation by "
           "conversation: odd-numbered conversations ranked by the model fitted on the even ones and "
           "vice versa. hit@k: any evidence message in the top k; recall@k: share of the evidence in "
           "the top k; mrr: 1/rank of the first evidence within the top 10.", ""]
    out += _summary(res)
    if "engine" in res:
        out += render_engine(res["engine"])
    out += _main(res, main)
    out += _robustness(main)
    out += _halves(main)
    if "transfer" in res:
        out += _transfer(res["transfer"])
    out += _keyword(res["keyword"])
    out += _fusion(res)
    if "instructions" in res:
        out += _instructions(res["instructions"])
    if "neighbours" in res:
        out += _neighbours(res["neighbours"])
    out += _calibration(res["calibration"])
    out += _cognitive(res["cognitive"], res["time"])
    if "speaker" in res:
        out += _speaker(res["speaker"])
    if "preference" in res:
        out += _preference(res["preference"])
    out += _latency(res["latency"])
    return "\n".join(out) + "\n"


def _summary(res: dict) -> list[str]:
    t = res["main"]["tables"]
    new = t["new pipeline (relevance fusion, CV)"]["overall"]
    old = t["RRF k=5, vector x2 (previous default)"]["overall"]
    kw_old, kw = t["keyword (FTS5 bm25, as shipped)"]["overall"], t["keyword (memoryd BM25 k1=5 b=1)"]["overall"]
    rule = res["main"]["rule"]
    missed = [f"{a} ({r['margin']:+.3f})" for a, r in rule.items() if not r["holds"]]
    cal = res["calibration"]["both"]
    sign = res["main"]["sign"]["RRF k=5, vector x2 (previous default)"]
    return ["## Summary", "",
            f"- New pipeline (held-out): hit@1 {new['hit@1']:.3f}, hit@5 {new['hit@5']:.3f}, hit@10 "
            f"{new['hit@10']:.3f}, MRR {new['mrr']:.3f}; previous default (RRF k=5, vector x2) {old['hit@1']:.3f} / "
            f"{old['hit@5']:.3f} / {old['hit@10']:.3f} / {old['mrr']:.3f} (hit@1 W/L {sign['hit@1']['wins']}/"
            f"{sign['hit@1']['losses']} p={sign['hit@1']['p']}; hit@5 W/L {sign['hit@5']['wins']}/"
            f"{sign['hit@5']['losses']} p={sign['hit@5']['p']}).",
            f"- Keyword side: memoryd BM25 (k1=5, b=1) hit@1 {kw['hit@1']:.3f}, hit@5 {kw['hit@5']:.3f} vs FTS5 "
            f"bm25() {kw_old['hit@1']:.3f}, {kw_old['hit@5']:.3f}.",
            "- Robustness rule: " + ("holds in every ability." if not missed else
                                     "holds overall and in every ability but " + ", ".join(missed) + "."),
            f"- Calibration (held-out, both halves): Brier {cal['all pairs']['brier']} over all pairs, "
            f"{cal['top-10 hits']['brier']} over the returned top 10; ECE {cal['top-10 hits']['ece']}.",
            *(summary_lines(res["engine"]) if "engine" in res else []), ""]


def _main(res: dict, main: dict) -> list[str]:
    out = ["## Main table (per ability, 10 results)", "",
           "keyword-only, vector-only, textbook RRF (k=60, FTS5 list + vector list, pool 50), the "
           "previous shipped fusion (RRF k=5, vector weight 2), and the new pipeline (memoryd BM25 "
           "k1=5 b=1 + vector, union of the top 50 of each, ranked by the relevance model). Fusion "
           "only: no cognitive re-ranking.", ""]
    tables = main["tables"]
    abilities = list(next(iter(tables.values())).keys())
    out += _head("ability / ranker")
    for a in abilities:
        n = main["n"].get(a, sum(main["n"].values()))
        out.append(f"| **{a}** (n={n}) |" + " |" * len(COLS))
        for name, t in tables.items():
            out.append(_row(name, t[a]))
    out += ["", "Sign tests, new pipeline against each ranker (W/L = questions better/worse, two-sided p):", ""]
    out += ["| against | hit@1 W/L p | hit@5 W/L p | hit@10 W/L p | mrr W/L p |", "|---|---|---|---|---|"]
    for name, s in main["sign"].items():
        out.append(f"| {name} | " + " | ".join(f"{s[m]['wins']}/{s[m]['losses']} p={s[m]['p']}"
                                               for m in ("hit@1", "hit@5", "hit@10", "mrr")) + " |")
    return out + [""]


def _robustness(main: dict) -> list[str]:
    out = ["## Robustness rule (hit@5)", "",
           "In every ability the new pipeline must be within 0.02 of the best single mode (keyword "
           "as shipped, memoryd BM25, vector), and above it overall.", "",
           "| ability | new | best single | margin | holds |", "|---|---:|---:|---:|---|"]
    for a, r in main["rule"].items():
        out.append(f"| {a} | {r['new']:.3f} | {r['best_single']:.3f} | {r['margin']:+.3f} | "
                   f"{'yes' if r['holds'] else '**no**'} |")
    return out + [""]


def _halves(main: dict) -> list[str]:
    out = ["## Cross-validation halves (overall)", ""]
    for h, tables in main["halves"].items():
        out += [f"Conversations {h} (scored by the model fitted on the other half):", ""]
        out += _head("ranker")
        out += [_row(n, t) for n, t in tables.items()] + [""]
    return out


def _transfer(tr: dict) -> list[str]:
    out = ["## Transfer check: a store of user turns only", "",
           f"Each conversation indexed with the user's turns only (short first-person chat), "
           f"{tr['questions']} questions with user-turn evidence; the relevance model is the one "
           "fitted on the full conversations of the other half (no refit on this shape).", ""]
    out += _head("ranker")
    out += [_row(n, t["overall"]) for n, t in tr["tables"].items()]
    out += ["", "Per ability, hit@5 (new pipeline vs best single mode):", ""]
    new = tr["tables"]["new pipeline (fitted on full conversations)"]
    singles = [n for n in tr["tables"] if n.startswith(("keyword", "vector"))]
    for a, row in new.items():
        best = max(tr["tables"][n][a]["hit@5"] for n in singles)
        out.append(f"- {a}: {row['hit@5']:.3f} vs {best:.3f} ({row['hit@5'] - best:+.3f})")
    out += ["", "Sign tests (new pipeline against): " + "; ".join(
        f"{n}: hit@5 {s['hit@5']['wins']}/{s['hit@5']['losses']} p={s['hit@5']['p']}, hit@10 "
        f"{s['hit@10']['wins']}/{s['hit@10']['losses']} p={s['hit@10']['p']}" for n, s in tr["sign"].items()), ""]
    return out


def _keyword(kw: dict) -> list[str]:
    out = ["## Keyword ranking", "",
           f"memoryd's tokenizer + BM25 at FTS5's k1=1.2, b=0.75 with FTS5's idf gives the same top 10 "
           f"as FTS5 itself on {kw['emulation_top10_same_as_fts5']}/{kw['questions']} questions.", ""]
    out += _head("keyword ranking")
    out.append(_row("FTS5 bm25() as shipped", kw["fts5"]["overall"]))
    grid = kw["grid"]
    for key in ("porter k1=1.2 b=0.75", "porter k1=5 b=1", "english k1=5 b=1", "none k1=5 b=1",
                "porter+date k1=5 b=1"):
        if key in grid:
            out.append(_row(f"memoryd BM25, {key}", grid[key]["table"]))
    best = max(grid, key=lambda k: sum(grid[k]["table"][m] for m in ("hit@1", "hit@5", "hit@10", "recall@10")))
    out.append(_row(f"best cell: {best}", grid[best]["table"]))
    for label, r in kw["prepool"].items():
        out.append(_row(f"memoryd BM25 k1=5 b=1 over {label} (top 10 = full on {r['top10_same_as_full']})",
                        r["table"]))
    if "dated" in kw:
        out += ["", "The memory's date in words added to its keyword text (hit@5, k1=5 b=1), per ability:", "",
                "| ability | without date | with date |", "|---|---:|---:|"]
        for a, row in kw["dated"]["porter"].items():
            out.append(f"| {a} | {row['hit@5']:.3f} | {kw['dated']['porter+date'][a]['hit@5']:.3f} |")
    out += ["", "Chosen on one half (mean of hit@1, hit@5, hit@10, recall@10), scored on the other:", ""]
    for label, r in kw["cv"].items():
        held = [v for k, v in r.items() if k.startswith("held-out")][0]
        out.append(f"- {label}: `{r['config']}` → held-out hit@1 {held['hit@1']:.3f}, hit@5 "
                   f"{held['hit@5']:.3f}, hit@10 {held['hit@10']:.3f}, recall@10 {held['recall@10']:.3f}")
    out += ["", "Grid (hit@5 / hit@10), stemming × k1 × b:", "",
            "| stemming, k1 \\ b | " + " | ".join(sorted({k.split('b=')[1] for k in grid}, key=float)) + " |",
            "|---|" + "---:|" * len({k.split('b=')[1] for k in grid})]
    rows: dict[str, list[str]] = {}
    for key, v in grid.items():
        label = key.split(" b=")[0]
        rows.setdefault(label, []).append(f"{v['table']['hit@5']:.3f} / {v['table']['hit@10']:.3f}")
    out += [f"| {k} | " + " | ".join(v) + " |" for k, v in rows.items()]
    return out + [""]


def _fusion(res: dict) -> list[str]:
    out = ["## Relevance model variants (held-out, overall)", "",
           "Each variant is a logistic model over a subset of the features, fitted on one half and "
           "scored on the other.", ""]
    out += _head("features", COLS + ("worst ability, hit@5 vs best single",))
    out += [_row(n, {**m["table"]["overall"], "worst ability, hit@5 vs best single": m["worst_margin_hit@5"]},
                 COLS + ("worst ability, hit@5 vs best single",)) for n, m in res["models"].items()]
    out += ["", "Vector text (same model features, refitted per variant):", ""]
    out += _head("vector text")
    out += [_row(ctx, t) for ctx, t in res["contexts"].items()]
    out += ["", "Vector side alone by vector text:", ""]
    out += _head("vector text")
    out += [_row(ctx, t["overall"]) for ctx, t in res["vector"].items()]
    fa = res["fitted_all"]
    out += ["", f"Coefficients fitted on all 20 conversations (shipped in memoryd.retrieval.relevance): "
            f"intercept {fa['intercept']}, " + ", ".join(f"{k} {v}" for k, v in fa["weights"].items()) + ".",
            "Per half:", ""]
    for half, m in res["models"]["full"]["halves"].items():
        out.append(f"- {half}: intercept {m['intercept']}, " + ", ".join(f"{k} {v}" for k, v in m["weights"].items()))
    return out + [""]


def _instructions(ins: dict) -> list[str]:
    """bench/recall/instructions.py: the instruction-topic reading (shipped)."""
    out = ["## Conditional standing instructions", "",
           f"{ins['instructions']} memories state an instruction conditioned on a topic (\"Always X "
           "when I ask about Y\"); each gains a weight times how far the query's cosine to Y "
           "exceeds a floor, never passing the best hit that was not lifted; floor and weight "
           "fitted with the five shipped weights held fixed (bench/recall/instructions.py), so "
           "other memories rank as before. Held-out: each half ranked with the constants fitted "
           "on the other half (" + "; ".join(f"{k}: floor {v['floor']}, weight {v['weight']}"
                                             for k, v in ins["chosen"].items())
           + f"; on all: floor {ins['chosen_all']['floor']}, weight {ins['chosen_all']['weight']}). "
           "The user-turns-only store is ranked with the same constants (no refit).", ""]
    for store in ("beam", "user turns only"):
        part = ins[store]
        names = list(part["tables"])
        out += [f"**{store}** ({part['questions']} questions)", ""] + _head("ability / ranking")
        for ability in part["tables"][names[0]]:
            out.append(f"| **{ability}** | | | | | | |")
            out += [_row(n, part["tables"][n][ability]) for n in names]
        out += ["", "Sign tests (with against without): " + ", ".join(
            f"{m} {s['wins']}/{s['losses']} p={s['p']}" for m, s in part["sign"].items()) + ". Per half: " + "; ".join(
            f"{n}, {h}: hit@1 {t['hit@1']}, hit@5 {t['hit@5']}, hit@10 {t['hit@10']}"
            for n, halves in part["halves"].items() for h, t in halves.items()) + ".", ""]
    return out


def _neighbours(nb: dict) -> list[str]:
    """bench/recall/neighbours.py: the next turn's cosine as a sixth feature (not shipped)."""
    names = list(nb["tables"])
    out = ["## The next turn as a feature (measured, not shipped)", "",
           "The cosine of the query to the next message of the same session, given to the "
           "relevance model as a sixth feature; both models fitted on one half and scored on the "
           "other, on the same candidate pools (bench/recall/neighbours.py).", ""]
    out += _head("ability / model")
    for ability in nb["tables"][names[0]]:
        out.append(f"| **{ability}** | | | | | | |")
        out += [_row(n, nb["tables"][n][ability]) for n in names]
    out += [""] + [f"Sign tests, {name} against the five: " + ", ".join(
        f"{m} {s['wins']}/{s['losses']} p={s['p']}" for m, s in tests.items()) + "."
        for name, tests in nb["sign"].items()] + ["",
        "Per half (overall): " + "; ".join(
            f"{n}, {h}: hit@1 {t['hit@1']}, hit@5 {t['hit@5']}, hit@10 {t['hit@10']}"
            for n, halves in nb["halves"].items() for h, t in halves.items()) + ".", "",
        "Weights (intercept, cosine, cosine_gap, coverage, saturation, keyword_lead[, the "
        "added feature]): " + "; ".join(f"{k}: {v}" for k, v in nb["weights"].items()) + ".", ""]
    if "transfer" in nb:
        tr = nb["transfer"]
        out += [f"The same models on the user-turns-only store ({tr['questions']} questions; the next "
                "turn is the user's next message):", ""] + _head("model")
        out += [_row(n, t) for n, t in tr["tables"].items()]
        out += [""] + [f"Sign tests there, {name} against the five: " + ", ".join(
            f"{m} {s['wins']}/{s['losses']} p={s['p']}" for m, s in tests.items()) + "."
            for name, tests in tr["sign"].items()] + [""]
    return out


def _calibration(cal: dict) -> list[str]:
    out = ["## Calibration of the score (held-out halves)", "",
           "Pairs: every candidate of every query's pool: BEAM evidence = relevant; other candidates, "
           "and all candidates of abstention questions, questions of a conversation of another "
           "category ('foreign') and the bench's own unrelated questions = not relevant.", ""]
    for h in ("odd", "even", "both"):
        for part in ("all pairs", "top-10 hits"):
            r = cal[h][part]
            out.append(f"- {h}, {part}: Brier {r['brier']}, ECE {r['ece']}, {r['pairs']} pairs, "
                       f"{r['positives']} relevant")
    out += ["", "Reliability table (both halves, held-out; top-10 hits | all pairs):", "",
            "| predicted bin | n | mean predicted | observed | n (all) | predicted (all) | observed (all) |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    for a, b in zip(cal["both"]["top-10 hits"]["rows"], cal["both"]["all pairs"]["rows"]):
        out.append(f"| {a['bin']} | {a['n']} | {a['predicted']} | {a['observed']} | {b['n']} | "
                   f"{b['predicted']} | {b['observed']} |")
    th = cal["thresholds"]
    out += ["", f"Recall threshold: the largest threshold keeping at least {th['target_hit_recall']:.0%} of "
            "the evidence hits in the top 10, chosen on one half and scored on the other:", ""]
    for h in ("odd", "even"):
        r = th[f"chosen on {h}"]
        held = [v for k, v in r.items() if k.startswith("held-out")][0]
        out.append(f"- chosen on {h}: {r['threshold']} → held-out hit precision {held['hit_precision']}, "
                   f"hit recall {held['hit_recall']}, answerable questions keeping evidence "
                   f"{held['answerable_keep_evidence']}, empty block for {held['empty_block']}")
    out += [f"- chosen on all: {th['chosen_all']}"]
    sh = th["shipped"]
    for h in ("odd", "even"):
        r = sh[h]
        if r:
            out.append(f"- shipped DEFAULT_RECALL_THRESHOLD {sh['threshold']}, conversations {h}: hit precision "
                       f"{r['hit_precision']}, hit recall {r['hit_recall']}, answerable questions keeping "
                       f"evidence {r['answerable_keep_evidence']}, empty block for {r['empty_block']}")
    out += ["",
            "| threshold | hit precision | hit recall | answerable keep evidence | hits kept/query | "
            "empty: abstention | empty: foreign | empty: unrelated |", "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for t, r in th["halves"]["both"].items():
        e = r["empty_block"]
        out.append(f"| {t} | {r['hit_precision']} | {r['hit_recall']} | {r['answerable_keep_evidence']} | "
                   f"{r['mean_hits_kept']} | {e['abstention']} | {e['foreign']} | {e['unrelated']} |")
    return out + [""]


def _cognitive(cog: dict, tm: dict) -> list[str]:
    out = ["## Cognitive layer as a near-tie breaker", "",
           f"Signal: {cog['signal']}. Order key = logit(relevance) + margin × bonus (bonus spread over [0, 1] "
           "across those hits): a hit whose log-odds are higher by more than the margin never moves below; "
           "margin 0 = without. Engine.search does not rescale the bonus (so memories written minutes "
           "apart keep their relevance order); its margins are measured in the Engine.search section.", ""]
    out += _head("variant")
    out.append(_row("without", cog["without"]))
    out += [_row(k, v) for k, v in cog["with"].items()]
    out += ["", "Knowledge update, updated fact above the original in the top 10 (updated first / "
            "original first / neither):", ""]
    out += [f"- {k}: {v['updated_first']} / {v['original_first']} / {v['neither']}"
            for k, v in cog["knowledge_update_order"].items()]
    finding = (f"{tm['questions_with_time_expression']} questions name a date or period "
               f"({tm['by_ability']}); evidence created inside the window: "
               f"{tm['evidence_created_inside_window']}. Parse cost median {tm['parse_ms_median']} ms.")
    out += [""] + _boosted("Time expressions in questions", finding, tm,
                           "boost for memories created in the window")
    return out


def _speaker(sp: dict) -> list[str]:
    return _boosted("Speaker cues in questions",
                    f"{sp['questions_with_speaker']} questions ask what one party said ({sp['by_speaker']}; "
                    f"{sp['by_ability']}); evidence said by that party: "
                    f"{sp['evidence_said_by_that_speaker']}.", sp, "boost for that party's messages")


def _boosted(title: str, finding: str, section: dict, variant: str) -> list[str]:
    """A boost section: what was found, examples, and the metrics with and without the boost."""
    out = [f"## {title}", "", finding + " Examples: " + "; ".join(f"'{e}'" for e in section["examples"]), ""]
    out += _head(variant)
    out += [_row(k, v) for k, v in section["metrics"].items() if v]
    return out + [""]


def _preference(pr: dict) -> list[str]:
    out = ["## Requests for advice: the user's preferences and standing instructions", "",
           f"{pr['requests']} questions ask for advice or action ({pr['by_ability']}); for them the "
           "user's messages that state a preference or standing instruction are lifted. Examples: "
           + "; ".join(f"'{e}'" for e in pr["examples"]), "", "hit@5 per ability (all questions):", ""]
    abilities = list(pr["metrics"]["without"])
    out += ["| variant | " + " | ".join(abilities) + " |", "|---|" + "---:|" * len(abilities)]
    out += [f"| {k} | " + " | ".join(f"{v[a].get('hit@5', 0):.3f}" for a in abilities) + " |"
            for k, v in pr["metrics"].items()]
    return out + [""]


def _latency(lat: dict) -> list[str]:
    out = ["## Cost of the new steps per query", "", "| step | median ms |", "|---|---:|"]
    out += [f"| {k} | {v} |" for k, v in lat.items() if k != "unit"]
    return out + [""]
