"""Does the int8-arithmetic copy that search queries run keep recall, and how fast is it?

    .venv/bin/python -m bench.recall.query_int8 [--rounds 5]

memoryd embeds a search query of up to ``QUERY_COPY_MAX_TOKENS`` tokens with an
int8-arithmetic copy of the packaged MiniLM (memoryd.embed.onnx_int8: the same int8 weights,
MatMulNBits with int8 activations) and every memory with the float path. Two cases against
all-float, per data set (BEAM, REALTALK, agent memories), with memoryd's shipped ranking and
BM25 constants:

- questions as search embeds them (the copy up to the token limit), memories float: what ships;
- everything by the copy: what embedding memories with it too would give.

Also the cosine of the copy's vectors to the float path's on every memory and question, and
the time to embed one question alone (``embed_query`` against the float path's
``embed_one``), by question length, alternated in one process. Results:
results/embed_query_int8.{json,md}.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

import numpy as np

from bench.common import CACHE_DIR, machine_info, md_table
from bench.recall import lodo, sets
from bench.recall.embedding import VectorCache, VectorTable
from bench.recall.int8_bulk import METRICS, embedder_for, log, publish, recall_rows

CASES = ("questions as search embeds them", "everything by the copy")


def cosines(base: VectorTable, copy: VectorTable, texts: list[str]) -> dict[str, float]:
    cos = np.array([float(base.vectors[t] @ copy.vectors[t]) for t in dict.fromkeys(texts)])
    return {"n": int(cos.size), "min": round(float(cos.min()), 5),
            "p1": round(float(np.percentile(cos, 1)), 5), "median": round(float(np.median(cos)), 5)}


LENGTHS = ((0, 16), (17, 40), (41, 256))


def query_speed(texts: list[str], rounds: int) -> dict[str, Any]:
    """Milliseconds to embed one question alone, by its token count: the float path
    (``embed_one``) against what search runs (``embed_query``), alternated."""
    from memoryd.embed.onnx import PRESETS, OnnxEmbedder

    spec = PRESETS["minilm-int8"]
    shipped = OnnxEmbedder.preset("minilm-int8")
    shipped.load()
    ways = {"float": shipped.embed_one, "search": shipped.embed_query}
    shipped.embed_one("warm up")
    tokens = {t: len(shipped._model.tokenizer.encode(t).ids) for t in texts}
    times: dict[str, dict[str, list[float]]] = {k: {} for k in ways}
    for r in range(rounds):
        for name in (list(ways) if r % 2 == 0 else list(reversed(ways))):
            for t in texts:
                t0 = time.perf_counter()
                ways[name](t)
                band = next(f"{lo}-{hi}" for lo, hi in LENGTHS if lo <= tokens[t] <= hi)
                times[name].setdefault(band, []).append((time.perf_counter() - t0) * 1000)
    out: dict[str, Any] = {"model": spec.model_id}
    for band in [f"{lo}-{hi}" for lo, hi in LENGTHS]:
        if band in times["float"]:
            f, q = (statistics.median(times[k][band]) for k in ("float", "search"))
            out[band] = {"n": len(times["float"][band]), "float_ms": round(f, 2),
                         "search_ms": round(q, 2), "ratio": round(q / f, 3)}
    return out


def render(r: dict[str, Any]) -> str:
    lines = ["# The int8 copy search queries run: recall and speed", "",
             f"Run {r['started']} on {r['machine']['cpus']} CPUs, load average "
             f"{r['load'][0]:.1f}-{r['load'][1]:.1f}. memoryd's shipped ranking and BM25 "
             "constants; "
             "differences are the case minus all-float (answerable questions); sign test on "
             "hit@5 (questions better / worse).", "",
             f"{r['questions_on_the_copy'][0]} of {r['questions_on_the_copy'][1]} questions have "
             f"at most {r['copy_max_tokens']} tokens: search embeds them on the copy, the rest "
             "on the float path.", ""]
    rows = []
    for case, per_set in r["cases"].items():
        for ds, res in per_set.items():
            base = r["float"][ds]
            diff = [round(res["shipped"][k] - base["shipped"][k], 4) for k in METRICS]
            vdiff = round(res["vector"]["hit@5"] - base["vector"]["hit@5"], 4)
            s = r["sign"][case][ds]
            rows.append([case, ds, *diff, vdiff, f"{s['wins']}/{s['losses']} (p {s['p']})"])
    lines += [md_table(["case", "data set", *[f"Δ {k}" for k in METRICS], "Δ vector hit@5",
                        "sign hit@5"], rows), ""]
    lines += [md_table(["texts", "n", "cosine to float: min", "p1", "median"],
                       [[k, v["n"], v["min"], v["p1"], v["median"]]
                        for k, v in r["cosine"].items()]),
              ""]
    lines += ["One question alone, by its token count: what search runs (`embed_query`) against "
              "the float path (`embed_one`), medians, alternated:", "",
              md_table(["tokens", "n", "float ms", "search ms", "ratio"],
                       [[band, v["n"], v["float_ms"], v["search_ms"], v["ratio"]]
                        for band, v in r["speed"].items() if band != "model"]), ""]
    lines += ["All-float recall (shipped ranking):", "",
              md_table(["data set", *METRICS],
                       [[ds, *[v["shipped"][k] for k in METRICS]] for ds, v in r["float"].items()]),
              ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.recall.query_int8", description=__doc__)
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args(argv)
    from memoryd.embed.onnx import PRESETS, QUERY_COPY_MAX_TOKENS
    from memoryd.embed.onnx_int8 import default_cache_dir, int8_copy

    convs = sets.load_sets(["beam", "realtalk", "agent"], log)
    if not {"beam", "realtalk"} <= set(convs):
        print("BEAM or REALTALK is absent; skipping")
        return 0
    copy_path = int8_copy(PRESETS["minilm-int8"].onnx_path(), default_cache_dir())
    if copy_path is None:
        print("no int8 copy could be written (is onnx installed?); skipping")
        return 0
    load0 = os.getloadavg()[0]
    base = sets.vector_table(log)
    sets.embed_sets(convs, base)
    copy = VectorTable(embedder_for(copy_path), VectorCache(CACHE_DIR / f"recall-{copy_path.stem}"),
                       log)
    sets.embed_sets(convs, copy)
    memories = [m.content for cs in convs.values() for c in cs for m in c.messages]
    questions = [t for t in copy.vectors if t not in set(memories)]
    tokenizer = base.embedder._model.tokenizer
    searched = [q for q in questions if len(tokenizer.encode(q).ids) <= QUERY_COPY_MAX_TOKENS]
    mixed = VectorTable(base.embedder, VectorCache(None), log)
    mixed.vectors = {**base.vectors, **{q: copy.vectors[q] for q in searched}}
    float_rows = recall_rows(convs, base)
    cases = {CASES[0]: recall_rows(convs, mixed), CASES[1]: recall_rows(convs, copy)}
    sign = {case: {ds: lodo.sign(float_rows[ds]["rows"], res["rows"], "hit@5")
                   for ds, res in per_set.items()} for case, per_set in cases.items()}
    result = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "machine": machine_info(), "copy": copy_path.name,
              "questions_on_the_copy": [len(searched), len(questions)],
              "copy_max_tokens": QUERY_COPY_MAX_TOKENS,
              "cosine": {"memories": cosines(base, copy, memories),
                         "questions": cosines(base, copy, questions)},
              "speed": query_speed(questions, args.rounds),
              "float": float_rows, "cases": cases, "sign": sign,
              "load": [load0, os.getloadavg()[0]]}
    return publish("embed_query_int8", result, [result["float"], *cases.values()], render)


if __name__ == "__main__":
    sys.exit(main())
