"""Choose memoryd's embedding model (and a re-ranker) by evidence.

    .venv/bin/python -m bench.embedmodels.packages   # 1. install + offline load test per package
    .venv/bin/python -m bench.embedmodels            # 2. recall, speed, re-ranking, report
    .venv/bin/python -m bench.embedmodels --quick    # smoke run: 3 conversations, 1 speed round

Reads ``bench/.cache/embedmodels/packages.json`` (step 1), then for every embedder that loads
offline: its vectors for BEAM messages and questions (cached), recall through memoryd's own
pipeline (``recall.py``), speed in fresh processes (``speed.py``); for every re-ranker that
loads: re-ranking of the shipped pipeline's top 20/50 (``rerank.py``). MiniLM
(``minilm-torch``, memoryd's default) is the baseline in the same run. Writes
``bench/results/embedmodels.{json,md}`` (``--quick``: ``embedmodels_quick.*``). Exits 0 with a
message when the BEAM data is absent.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.common import machine_info, write_results  # noqa: E402
from bench.embedmodels import recall, rerank, report, speed, texts  # noqa: E402
from bench.embedmodels.candidates import BY_NAME  # noqa: E402
from bench.embedmodels.packages import PACKAGES_JSON, run_worker  # noqa: E402

BASELINE = "minilm-torch"
MIXED_QUERIES = "minilm-int8-onnx"
MIXED = "mixed: int8-onnx queries on a minilm-torch store"
QUICK_CONVERSATIONS = 3
_started = time.perf_counter()
FRESH_RECALL = False
PARTIAL_SPEED_OK = False


def log(message: str) -> None:
    print(f"[{time.perf_counter() - _started:7.1f}s] {message}", flush=True)


def same_model(rec: dict[str, Any], other: dict[str, Any]) -> bool:
    """Whether ``rec`` packages the weights of ``other``: the same weight file (sha256) or,
    where no hash was taken, the same probe vectors (cosines to 4 decimals)."""
    mine, theirs = set(rec.get("weights_sha256", {}).values()), set(other.get("weights_sha256", {}).values())
    if mine and theirs:
        return bool(mine & theirs)
    keys = ("cos_paraphrase", "cos_unrelated", "dims")
    p, o = rec.get("probe", {}), other.get("probe", {})
    return all(p.get(k) is not None and p.get(k) == o.get(k) for k in keys)


def select(packages: dict[str, Any], wanted: set[str]) -> tuple[list[str], list[str], dict[str, str]]:
    """Embedders and re-rankers to measure, and the ones skipped with the reason."""
    base = packages.get(BASELINE)
    if not base or not base.get("loads_offline"):
        raise SystemExit(f"the baseline {BASELINE} did not load; run bench.embedmodels.packages first")
    embedders, rerankers, skipped = [BASELINE], [], {}
    for name, rec in packages.items():
        if name == BASELINE or (wanted and name not in wanted):
            continue
        twin = next((m for m in embedders if same_model(rec, packages[m])), None)
        if not rec.get("loads_offline"):
            skipped[name] = "does not load offline"
        elif rec["kind"] == "reranker":
            rerankers.append(name)
        elif twin:
            skipped[name] = f"same model as {twin}"
        else:
            embedders.append(name)
    return embedders, rerankers, skipped


def embed_fn(model: str):
    candidate = BY_NAME[model]

    def embed(texts_file: Path, role: str, out: Path) -> dict[str, Any]:
        return run_worker(candidate, ["embed", model, "--texts", str(texts_file), "--role", role,
                                      "--out", str(out)], timeout=6 * 3600)

    return embed


def evaluate_cached(model: str, part: Any, docs: dict, qs: dict, depth: int) -> dict[str, Any]:
    """``recall.evaluate``, kept in ``bench/.cache`` by model, conversations and depth, so a
    re-run (or a model evaluated ahead of the full run) costs nothing; ``--fresh-recall``
    (or deleting ``bench/.cache/embedmodels/recall``) recomputes."""
    path = texts.WORK / "recall" / f"{model}-{len(part.conversations)}c-{depth}.pkl"
    if path.exists() and not FRESH_RECALL:
        log(f"  {model}: recall from {path.name}")
        return pickle.loads(path.read_bytes())
    res = recall.evaluate(model, part.conversations, docs, qs, log, extra_depth=depth)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(res))
    return res


def recall_all(models: list[str], limit: int | None, depth: int,
               subsets: dict[str, int]) -> tuple[dict[str, Any], Any]:
    data = texts.load_beam(limit)
    if data is None:
        return {}, None
    log(f"BEAM: {len(data.conversations)} conversations, {len(data.docs)} messages, "
        f"{len(data.questions)} questions")
    results: dict[str, Any] = {}
    vectors: dict[str, tuple[dict, dict]] = {}
    for m in models:
        part = data
        if m in subsets and subsets[m] < len(data.conversations):
            part = texts.load_beam(subsets[m])  # the first N conversations only
            log(f"  {m}: on the first {subsets[m]} conversations ({len(part.questions)} questions)")
        try:
            docs = texts.vectors_for(m, part.docs, "doc", embed_fn(m), log)
            qs = texts.vectors_for(m, part.questions, "query", embed_fn(m), log)
        except RuntimeError as exc:
            results[m] = {"error": str(exc)}
            log(f"  {m}: {exc}")
            continue
        vectors[m] = (docs, qs)
        results[m] = evaluate_cached(m, part, docs, qs, depth if m == BASELINE else 0)
        if part is not data:
            results[m]["subset_conversations"] = len(part.conversations)
    if BASELINE in vectors and MIXED_QUERIES in vectors:
        # A store embedded by MiniLM (torch) searched with int8 ONNX query vectors: what a
        # store that switched runtime without `memoryd reembed` would see.
        results[MIXED] = evaluate_cached("mixed", data, vectors[BASELINE][0],
                                         vectors[MIXED_QUERIES][1], 0)
    return results, data


def rerank_all(rerankers: list[str], base: dict[str, Any], data: Any,
               limit: int | None = None) -> dict[str, Any]:
    content = {(c.number, str(m.id)): m.content for c in data.conversations for m in c.messages}
    out = {}
    for name in rerankers:
        cand = BY_NAME[name]

        def score_file(pairs: Path, dest: Path, cand=cand, name=name) -> dict[str, Any]:
            return run_worker(cand, ["rerank", name, "--pairs", str(pairs), "--out", str(dest),
                                     "--timed", str(RERANK_TIMED)], timeout=6 * 3600)

        log(f"re-ranking with {name}")
        out[name] = rerank.run(name, base["questions"], content, score_file,
                               f"hybrid@{max(rerank.DEPTHS)}", limit)
    return out


SPEED_JSON = texts.WORK / "speed.json"
RERANK_TIMED = 10  # queries timed through the re-ranker's own uncached path, per depth
SPEED_TEXTS = 256  # short memories embedded in batches of 64 per speed sample
SPEED_QUERIES = 110  # 10 warm-up + 100 timed single queries


def speed_all(models: list[str], rounds: int, reuse: bool) -> dict[str, Any]:
    """Speed of every model (or the saved run of ``--speed-only``, when it covers them)."""
    if reuse and SPEED_JSON.exists():
        saved = json.loads(SPEED_JSON.read_text())
        if set(models) <= set(saved["models"]) or PARTIAL_SPEED_OK:
            log(f"speed: reusing {SPEED_JSON} ({saved['started']})")
            return saved
    short, queries = texts.short_memories(SPEED_TEXTS, SPEED_QUERIES)
    tf, qf = str(texts.write_texts(short)), str(texts.write_texts(queries))
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    def save(measured: dict[str, Any]) -> dict[str, Any]:
        out = {"started": started, "rounds": rounds, "models": measured,
               "budgets": speed.projections(measured, BASELINE), "short_texts": len(short),
               "queries": len(queries)}
        SPEED_JSON.write_text(json.dumps(out, indent=2))  # after every sample: a partial run counts
        return out

    return save(speed.measure(models, lambda m, args: run_worker(BY_NAME[m], args, timeout=3600),
                              tf, qf, rounds, log, checkpoint=save))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--quick", action="store_true", help="3 conversations, 1 speed round")
    ap.add_argument("--models", default="", help="comma-separated model names (default: all)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved speed rounds")
    ap.add_argument("--subset", default="",
                    help="slow models on the first N conversations only, e.g. e5-small-q4=6")
    ap.add_argument("--skip-speed", action="store_true")
    ap.add_argument("--speed-only", action="store_true",
                    help="measure speed only (saved for the next full run to reuse)")
    ap.add_argument("--fresh-speed", action="store_true", help="do not reuse a saved speed run")
    ap.add_argument("--fresh-recall", action="store_true", help="do not reuse saved recall runs")
    ap.add_argument("--partial-speed", action="store_true",
                    help="reuse a saved speed run even if it misses models (they show as not measured)")
    ap.add_argument("--skip-rerank", action="store_true")
    ap.add_argument("--rerank-questions", type=int, default=None,
                    help="re-rank an even sample of N questions (slow re-rankers)")
    a = ap.parse_args(argv)
    global FRESH_RECALL, PARTIAL_SPEED_OK
    FRESH_RECALL = a.fresh_recall
    PARTIAL_SPEED_OK = a.partial_speed
    if not PACKAGES_JSON.exists():
        raise SystemExit("no package probe yet: run `python -m bench.embedmodels.packages` first")
    packages = json.loads(PACKAGES_JSON.read_text())
    wanted = {m.strip() for m in a.models.split(",") if m.strip()}
    embedders, rerankers, skipped = select(packages, wanted)
    log(f"embedders: {embedders}; re-rankers: {rerankers}; skipped: {skipped}")
    if a.speed_only:
        speed_all(embedders, a.rounds, reuse=False)
        log(f"wrote {SPEED_JSON}")
        return
    limit = QUICK_CONVERSATIONS if a.quick else None
    depth = max(rerank.DEPTHS) if rerankers and not a.skip_rerank else 0
    subsets = {k: int(v) for k, v in (x.split("=") for x in a.subset.split(",") if x.strip())}
    recalls, data = recall_all(embedders, limit, depth, subsets)
    if data is None:
        print("BEAM data not found (../shared/data/beam or $MEMORYD_BEAM_DIR): nothing to measure")
        return
    reranks = {} if a.skip_rerank else rerank_all(rerankers, recalls[BASELINE], data,
                                                  a.rerank_questions)
    speeds = {} if a.skip_speed else speed_all(embedders, 1 if a.quick else a.rounds,
                                               reuse=not a.fresh_speed)
    result = report.build(packages=packages, skipped=skipped, recalls=recalls, reranks=reranks,
                          speeds=speeds, baseline=BASELINE, conversations=len(data.conversations),
                          command=" ".join(["python -m bench.embedmodels", *(argv or sys.argv[1:])]),
                          machine=machine_info(), seconds=round(time.perf_counter() - _started))
    name = "embedmodels_quick" if a.quick else "embedmodels"
    paths = write_results(name, result, report.markdown(result))
    log(f"wrote {', '.join(str(p) for p in paths)}")


if __name__ == "__main__":
    main()
