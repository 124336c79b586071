"""The recall bench across three kinds of data: ranking, BM25 constants, the score, context.

    .venv/bin/python -m bench.recall.across                 # results/recall_sets.{json,md}
    .venv/bin/python -m bench.recall.across --sets agent    # one data set (a quick look)
    .venv/bin/python -m bench.recall.across --refit         # also print the constants to ship

Data: BEAM and REALTALK read in place from ``../shared/data`` (left out when absent) and the
project's own agent memories (bench/recall/agent_memories.txt). Every fitted number is
reported leave one data set out: fitted on the others, scored on the one shown.

1. BM25 k1/b: a grid, each setting scored by keyword-only and by the relevance ranking
   (leave one out) on every data set; the choice is the setting whose worst shortfall from a
   data set's own best is smallest.
2. Ranking: keyword, vector and the relevance ranking per data set and ability (hit@1/5/10,
   recall@10, MRR), the rule (ranking >= better single side - 0.01 at hit@5 and hit@10), and
   fitted on one data set, scored on each.
3. The score (:mod:`memoryd.retrieval.answer`): fitted on the fixed-ratio sample of two data
   sets, its reliability and Brier score on the third, on that sample and on the hits the
   ranking returns; precision and recall of the default threshold; a small store's scores.
4. Conversation context (:mod:`bench.recall.context_variants`), leave one out like 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Sequence

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.recall import answer_report, context_variants, lodo, sets  # noqa: E402
from bench.recall.across_report import render  # noqa: E402
from bench.recall.pools import asks, build_store  # noqa: E402

BM25_GRID = ((1.2, 0.75), (1.2, 0.9), (1.2, 1.0), (2.0, 0.75), (2.0, 1.0), (5.0, 1.0))
RANK_KS = (1.0, 2.0, 5.0, 10.0)
GRID = tuple((k1, b, k) for k1, b in BM25_GRID for k in RANK_KS)
TEXTBOOK = (1.2, 0.75, 5.0)
_started = time.perf_counter()


def log(message: str) -> None:
    print(f"[{time.perf_counter() - _started:7.1f}s] {message}", flush=True)


def data_sets(convs: dict[str, list], table: Any, variant: str = "plain") -> list[lodo.DataSet]:
    out = []
    for name, cs in convs.items():
        stores, asked = {}, []
        for c in cs:
            store = (build_store(name, c, table) if variant == "plain"
                     else context_variants.variant_store(name, c, table, variant))
            stores[c.number] = store
            asked.extend(asks(store, c, table))
        out.append(lodo.DataSet(name, stores, asked))
    return out


def holds(row: dict[str, Any]) -> bool:
    """The rule on one data set: ranking >= the better single side - 0.01 (hit@5, hit@10)."""
    return all(row[f"shipped {k}"] >= max(row[f"keyword {k}"], row[f"vector {k}"]) - 0.01
               for k in ("hit@5", "hit@10"))


def choose(grid: dict[str, Any], names: Sequence[str]) -> tuple[float, float, float]:
    """The setting, judged on ``names`` only: among those where the rule holds on each, the
    one whose worst shortfall from a data set's best ranking hit@5 is smallest (all settings
    when none holds; the textbook BM25 constants win ties)."""
    part = {key: {n: g[n] for n in names} for key, g in grid.items()}
    regret = lodo.worst_regret(part)
    allowed = [k for k, g in part.items() if all(holds(g[n]) for n in names)] or list(part)
    best = min(regret[k] for k in allowed)
    ties = [k for k in allowed if regret[k] <= best + 1e-9]
    textbook = [k for k in ties if k.startswith(f"{TEXTBOOK[0]:g}/{TEXTBOOK[1]:g}/")]
    k1, b, rank_k = (textbook or ties)[0].split("/")
    return float(k1), float(b), float(rank_k)


def chosen_held_out(grid: dict[str, Any]) -> dict[str, Any]:
    """For each data set: the setting chosen on the other two, and its numbers there."""
    names = list(next(iter(grid.values())))
    out = {}
    for held in names:
        k1, b, k = choose(grid, [n for n in names if n != held])
        row = grid[f"{k1:g}/{b:g}/{k:g}"][held]
        out[held] = {"setting": f"{k1:g}/{b:g}/{k:g}", **row, "rule holds": holds(row)}
    return out


def ranking_section(dsets: list[lodo.DataSet], k1: float, b: float, rank_k: float
                    ) -> dict[str, Any]:
    results, models = lodo.leave_one_out(dsets, k1, b, rank_k)
    fitted, _ = lodo.leave_one_out(dsets, k1, b, rank_k, "fitted")
    return {
        "tables": {n: {r: v["table"] for r, v in res.items()} for n, res in results.items()},
        "fitted seven features": {n: res["shipped"]["table"]["overall"]
                                  for n, res in fitted.items()},
        "rule": lodo.rule_margins(results),
        "models": lodo.as_json(models),
        "all": lodo.as_json({"all": lodo.fit_ranking(dsets, k1, b, rank_k)})["all"],
        "single": lodo.single_fits(dsets, k1, b, rank_k),
        "_rows": {n: {r: v["rows"] for r, v in res.items()} for n, res in results.items()},
    }


def context_section(convs: dict[str, list], table: Any, setting: tuple[float, float, float],
                    base: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for variant in context_variants.VARIANTS[1:]:
        log(f"context variant: {variant}")
        dsets = data_sets(convs, table, variant)
        results, _ = lodo.leave_one_out(dsets, *setting)
        out[variant] = {}
        for name, res in results.items():
            row = {f"{r} {k}": res[r]["table"]["overall"][k] for r in lodo.RANKERS
                   for k in ("hit@1", "hit@5", "hit@10", "mrr")}
            row["sign hit@5"] = lodo.sign(base["_rows"][name]["shipped"], res["shipped"]["rows"],
                                          "hit@5")
            row["sign mrr"] = lodo.sign(base["_rows"][name]["shipped"], res["shipped"]["rows"],
                                        "mrr")
            out[variant][name] = row
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.recall.across",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default=",".join(sets.NAMES))
    ap.add_argument("--refit", action="store_true", help="print the constants to ship")
    ap.add_argument("--skip-grid", action="store_true", help="use the textbook k1/b")
    ap.add_argument("--skip-context", action="store_true")
    ap.add_argument("--out-dir", type=Path, default=REPO_ROOT / "bench" / "results")
    args = ap.parse_args(argv)
    convs = sets.load_sets(args.sets.split(","), log)
    if len(convs) < 2:
        print("fewer than two data sets present: nothing to leave out. Skipping.")
        return 0
    table = sets.vector_table(log)
    sets.embed_sets(convs, table)
    dsets = data_sets(convs, table)
    res: dict[str, Any] = {"counts": {d.name: {"stores": len(d.stores), "memories": sum(
        len(s.texts) for s in d.stores.values()), "answerable": len(d.answerable),
        "queries": len(d.asked)} for d in dsets}}
    if args.skip_grid:
        k1, b, rank_k = TEXTBOOK
    else:
        log("BM25 and rank-fusion grid (leave one data set out)")
        res["grid"] = lodo.bm25_grid(dsets, GRID, log)
        res["grid_regret"] = lodo.worst_regret(res["grid"])
        res["grid_rule"] = {k: all(holds(r) for r in g.values()) for k, g in res["grid"].items()}
        res["chosen_held_out"] = chosen_held_out(res["grid"])
        k1, b, rank_k = choose(res["grid"], list(convs))
    res["bm25"] = {"k1": k1, "b": b, "rank_k": rank_k}
    log(f"ranking at k1={k1:g} b={b:g} k={rank_k:g}")
    res["ranking"] = ranking_section(dsets, k1, b, rank_k)
    log("the score")
    res["answer"] = answer_report.section(dsets, (k1, b, rank_k), table, log)
    if not args.skip_context:
        res["context"] = context_section(convs, table, (k1, b, rank_k), res["ranking"])
    res["ranking"].pop("_rows")
    res["meta"] = {"run": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                   "runtime_s": round(time.perf_counter() - _started, 1),
                   "model": "all-MiniLM-L6-v2, ONNX int8 (the shipped embedder)"}
    stem = "recall_sets" if args.sets == ",".join(sets.NAMES) else "recall_sets_partial"
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / f"{stem}.json").write_text(json.dumps(res, indent=1, default=str) + "\n")
    (args.out_dir / f"{stem}.md").write_text(render(res))
    log(f"wrote {args.out_dir / stem}.{{json,md}}")
    if args.refit:
        print(answer_report.constants_text(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
