"""Markdown for the Engine.search section of bench/results/recall.md."""

from __future__ import annotations

from typing import Any

from bench.recall.engine_bench import INGEST_BACKEND
from bench.recall.engine_eval import BARE, CUES, CV

COLS = ("hit@1", "hit@5", "hit@10", "recall@5", "recall@10", "mrr")


def _row(label: str, t: dict[str, float]) -> str:
    return f"| {label} | " + " | ".join(f"{t.get(c, 0):.3f}" for c in COLS) + " |"


def _head(first: str) -> list[str]:
    return [f"| {first} | " + " | ".join(COLS) + " |", "|---|" + "---:|" * len(COLS)]


def _is_margin(name: str) -> bool:
    """Variants at other near-tie margins: overall only, their table is in the cognitive part."""
    return ", margin " in name


def summary_lines(e: dict[str, Any]) -> list[str]:
    """Bullets for the report's summary."""
    out = []
    for backend in e["backends"]:
        t = e["tables"][f"{CV}, {backend}"]["overall"]
        missed = [f"{a} ({r['margin']:+.3f})" for a, r in e["rule"][f"{CV}, {backend}"].items()
                  if not r["holds"]]
        how = ("over the same chats written through smart ingest" if backend == INGEST_BACKEND
               else "as shipped")
        out.append(f"- Engine.search {how}, {backend} (held-out constants): hit@1 {t['hit@1']:.3f}, "
                   f"hit@5 {t['hit@5']:.3f}, hit@10 {t['hit@10']:.3f}, MRR {t['mrr']:.3f}; robustness rule "
                   + ("holds in every ability." if not missed else "misses " + ", ".join(missed) + "."))
    if "agreement" in e:
        a = e["agreement"]
        out.append(f"- SQLite and PostgreSQL return the identical top 10 for {a['identical_top10']} of "
                   f"{a['queries']} queries (largest score difference {a['max_score_difference']:.2g}).")
    for backend, c in e["cognitive"].items():
        d, ku = c["delta"], c["knowledge_update_order"]
        total = sum(ku["with"].values())
        out.append(f"- Cognitive layer and associations on {backend}: hit@1 {d['hit@1']:+.3f}, hit@5 "
                   f"{d['hit@5']:+.3f}, hit@10 {d['hit@10']:+.3f}; knowledge updates current-first "
                   f"{ku['with']['updated_first']}/{total} with, {ku['without']['updated_first']}/{total} "
                   "without.")
    for cue, c in e.get("cues", {}).items():
        d, s = c["delta"], c["sign"]
        out.append(f"- {cue[0].upper()}{cue[1:]} on sqlite: hit@1 {d['hit@1']:+.3f} (W/L "
                   f"{s['hit@1']['wins']}/{s['hit@1']['losses']}), hit@5 {d['hit@5']:+.3f}, hit@10 "
                   f"{d['hit@10']:+.3f} (W/L {s['hit@10']['wins']}/{s['hit@10']['losses']}), MRR "
                   f"{d['mrr']:+.3f} (W/L {s['mrr']['wins']}/{s['mrr']['losses']} p={s['mrr']['p']}).")
    return out


def render_engine(e: dict[str, Any]) -> list[str]:
    out = ["## Engine.search as shipped (SQLite and PostgreSQL)", "",
           "The read path users get: each conversation written through `Engine.add_many` into a fresh "
           "store (one memory per message, session ids, write time = session date + one minute per "
           "message), every question asked with `Engine.search(question, 10, record_access=False)` with "
           "the defaults: relevance fusion, the cognitive layer, associations, tier passes. (CV): each "
           "half searched with the relevance constants fitted on the other half; the shipped constants "
           "(fitted on all 20 conversations) are in-sample. Bench rankers as in the main table.", ""]
    out += _head("ability / ranker")
    for ability in e["tables"][f"{CV}, {e['backends'][0]}"]:
        n = e["n"].get(ability, sum(e["n"].values()))
        out.append(f"| **{ability}** (n={n}) |" + " |" * len(COLS))
        for name, t in e["tables"].items():
            if ability == "overall" or not _is_margin(name):
                out.append(_row(name, t[ability]))
    out += ["", f"Sign tests, `{CV}, sqlite` against each ranker (W/L = questions better/worse):", "",
            "| against | hit@1 W/L p | hit@5 W/L p | hit@10 W/L p | mrr W/L p |", "|---|---|---|---|---|"]
    for name, s in e["sign"].items():
        cells = [f"{s[m]['wins']}/{s[m]['losses']} p={s[m]['p']}" if m in s else "" for m in
                 ("hit@1", "hit@5", "hit@10", "mrr")]
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    out += _rule(e) + _halves(e) + _agreement(e) + _ingest(e) + _cognitive(e) + _cues(e)
    out += _calibration(e)
    out += _thresholds(e)
    timing = "; ".join(f"{b}: build {t['build_s']} s for all 20 stores, search median "
                       f"{t['search_ms_median']} ms over {t['searches']} searches" for b, t in e["timing"].items())
    return out + ["", f"Timing (stores of ~250 memories; latency at 10k and 100k: "
                      f"bench/results/search_ranking.md): {timing}.", ""]


def _rule(e: dict) -> list[str]:
    out = ["", "Robustness rule (hit@5 within 0.02 of the best single mode in every ability, above it "
           "overall):", "", "| ability | " + " | ".join(e["rule"]) + " | best single |",
           "|---|" + "---:|" * (len(e["rule"]) + 1)]
    first = next(iter(e["rule"].values()))
    for ability in first:
        cells = [f"{r[ability]['engine']:.3f} ({r[ability]['margin']:+.3f}{'' if r[ability]['holds'] else ', **no**'})"
                 for r in e["rule"].values()]
        out.append(f"| {ability} | " + " | ".join(cells) + f" | {first[ability]['best_single']:.3f} |")
    return out


def _halves(e: dict) -> list[str]:
    out = []
    for h, tables in e["halves"].items():
        out += ["", f"Conversations {h} (overall):", ""] + _head("ranker")
        out += [_row(name, t) for name, t in tables.items() if not _is_margin(name)]
    return out


def _agreement(e: dict) -> list[str]:
    if "agreement" not in e:
        return []
    a = e["agreement"]
    return ["", f"Backends: of {a['queries']} queries (answerable, abstention, foreign, unrelated), "
            f"{a['identical_top10']} get the identical top 10 from SQLite and PostgreSQL, "
            f"{a['same_top10_ties_aside']} the same memories with scores equal to 1e-5; the largest "
            f"difference of one memory's score between them is {a['max_score_difference']:.2g} "
            "(cosines: NumPy float32 vs pgvector)."]


def _ingest(e: dict) -> list[str]:
    out = []
    for backend, decisions in e.get("ingest_decisions", {}).items():
        out += ["", f"`{backend}`: the same messages written through smart ingest "
                "(`Engine.ingest_many`, batches of 50, in order) instead of `add_many`. Decisions: "
                + ", ".join(f"{k} {v}" for k, v in sorted(decisions.items())) + ". A memory that "
                "took in other messages (reinforce, update, merge) counts as each of them; a "
                "superseded one is not searched."]
    return out


def _cognitive(e: dict) -> list[str]:
    out = ["", f"Cognitive layer (`{CV}` minus `{BARE}`):", "",
           "| backend | Δhit@1 | Δhit@5 | Δhit@10 | ΔMRR | hit@1 W/L | hit@5 W/L | hit@10 W/L | "
           "knowledge updates current-first with / without |", "|---|---:|---:|---:|---:|---|---|---|---|"]
    for b, c in e["cognitive"].items():
        d, s, ku = c["delta"], c["sign"], c["knowledge_update_order"]
        out.append(f"| {b} | {d['hit@1']:+.3f} | {d['hit@5']:+.3f} | {d['hit@10']:+.3f} | {d['mrr']:+.3f} | "
                   + " | ".join(f"{s[m]['wins']}/{s[m]['losses']}" for m in ("hit@1", "hit@5", "hit@10"))
                   + f" | {ku['with']['updated_first']} / {ku['without']['updated_first']} (original first "
                   f"{ku['with']['original_first']} / {ku['without']['original_first']}) |")
    if "margins" in e:
        out += ["", f"The same on SQLite at wider near-tie margins (`rank_close_margin`; shipped "
                f"{e['shipped_margin']:g}), each minus `{BARE}`:", "",
                "| margin | Δhit@1 | Δhit@5 | Δhit@10 | ΔMRR | hit@1 W/L | hit@5 W/L | hit@10 W/L | "
                "knowledge updates current-first |", "|---:|---:|---:|---:|---:|---|---|---|---:|"]
        for m, c in e["margins"].items():
            d, s = c["delta"], c["sign"]
            out.append(f"| {m} | {d['hit@1']:+.3f} | {d['hit@5']:+.3f} | {d['hit@10']:+.3f} | "
                       f"{d['mrr']:+.3f} | " + " | ".join(f"{s[k]['wins']}/{s[k]['losses']}" for k in
                                                         ("hit@1", "hit@5", "hit@10"))
                       + f" | {c['knowledge_update_order']['with']['updated_first']} |")
    return out


def _cues(e: dict) -> list[str]:
    if "cues" not in e:
        return []
    out = ["", f"Query cues on SQLite (`{CV}` minus the same without the cue; a cue lifts matching "
           "hits by its margin in log-odds, a bounded near-tie reorder):", "",
           "| cue | Δhit@1 | Δhit@5 | Δhit@10 | ΔMRR | hit@1 W/L p | hit@5 W/L p | hit@10 W/L p | mrr W/L p |",
           "|---|---:|---:|---:|---:|---|---|---|---|"]
    for cue, c in e["cues"].items():
        d, s = c["delta"], c["sign"]
        out.append(f"| {cue} ({CUES[cue]}) | {d['hit@1']:+.3f} | {d['hit@5']:+.3f} | {d['hit@10']:+.3f} | "
                   f"{d['mrr']:+.3f} | " + " | ".join(f"{s[m]['wins']}/{s[m]['losses']} p={s[m]['p']}"
                                                      for m in ("hit@1", "hit@5", "hit@10", "mrr")) + " |")
    return out


def _calibration(e: dict) -> list[str]:
    c = e["calibration"]
    out = ["", "Calibration of the scores Engine.search returns (SQLite, held-out constants; top-10 hits, "
           "BEAM evidence = relevant):", ""]
    out += [f"- {h}: Brier {c[h]['brier']}, ECE {c[h]['ece']}, {c[h]['pairs']} hits, {c[h]['positives']} "
            "relevant" for h in c]
    out += ["", "| predicted bin | n | mean predicted | observed |", "|---|---:|---:|---:|"]
    out += [f"| {r['bin']} | {r['n']} | {r['predicted']} | {r['observed']} |" for r in c["both"]["rows"]]
    return out


def _thresholds(e: dict) -> list[str]:
    out = ["", f"Recall threshold on Engine.search's top 10 (SQLite, held-out; shipped "
           f"{e['shipped_threshold']:g}): precision and recall of the evidence hits a recall block keeps, and "
           "how often the block is empty:", "",
           "| threshold | hit precision | hit recall | answerable keep evidence | hits kept/query | "
           "empty: abstention | empty: foreign | empty: unrelated |", "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for t, r in e["thresholds"].items():
        em = r["empty_block"]
        out.append(f"| {t} | {r['hit_precision']} | {r['hit_recall']} | {r['answerable_keep_evidence']} | "
                   f"{r['mean_hits_kept']} | {em['abstention']} | {em['foreign']} | {em['unrelated']} |")
    return out
