"""Would int8 arithmetic for bulk embedding keep recall? Memories int8, queries float.

    pip install onnx   # the quantiser needs it; memoryd itself does not
    .venv/bin/python -m bench.recall.int8_bulk [--rounds 5]

The packaged MiniLM stores int8 weights but computes in float32 (ONNX Runtime widens them as
the session loads). A dynamically quantised copy computes the projections in int8 (weights
per output channel, each activation tensor quantised as it is computed; VNNI where the CPU
has it). Two copies are made from the packaged file under bench/.cache/int8: every
projection in int8, and the same but the feed-forward output projection (the input after
GELU, the widest-ranging activations) kept in float.

For each copy: the cosine of its vectors to the float path's on every BEAM, REALTALK and
agent memory; recall with memories embedded by the copy and questions by the float path (what
bulk writes on the copy would give, queries staying as they are) against all-float, per data
set, with memoryd's shipped ranking and BM25 constants (sign test on hit@5); and its bulk
embedding rate against the float path's on synthetic agent memories, alternated in one
process. Vectors are cached per copy under bench/.cache. Results: results/embed_int8.{json,md}.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from bench.common import CACHE_DIR, machine_info, md_table, write_results
from bench.recall import lodo, sets
from bench.recall.across import data_sets
from bench.recall.embedding import VectorCache, VectorTable

INT8_DIR = CACHE_DIR / "int8"
VARIANTS = {"int8 all projections": (), "int8, FFN output in float": ("gelu",)}
METRICS = ("hit@1", "hit@5", "hit@10", "mrr")
_started = time.perf_counter()


def log(message: str) -> None:
    print(f"[{time.perf_counter() - _started:7.1f}s] {message}", flush=True)


def make_copy(name: str, float_inputs: tuple[str, ...]) -> Path:
    """The packaged model quantised dynamically (per channel), MatMuls whose activation input
    name starts with one of ``float_inputs`` left in float. Made once."""
    import onnx
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from memoryd.embed.onnx import PRESETS

    target = INT8_DIR / (name.replace(" ", "-").replace(",", "") + ".onnx")
    if target.is_file():
        return target
    INT8_DIR.mkdir(parents=True, exist_ok=True)
    folded = INT8_DIR / "folded.onnx"
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    opts.optimized_model_filepath = str(folded)  # constant folding: float initialisers
    ort.InferenceSession(str(PRESETS["minilm-int8"].onnx_path()), opts,
                         providers=["CPUExecutionProvider"])
    keep = [n.name for n in onnx.load(str(folded)).graph.node
            if n.op_type == "MatMul" and n.input[0].startswith(float_inputs or ("\0",))]
    quantize_dynamic(folded, target, weight_type=QuantType.QInt8, per_channel=True,
                     nodes_to_exclude=keep)
    return target


def embedder_for(path: Path):
    from memoryd.embed.onnx import PRESETS, OnnxEmbedder

    spec = PRESETS["minilm-int8"]
    e = OnnxEmbedder(path, spec.tokenizer_path, model_id=spec.model_id, dims=spec.dims,
                     max_tokens=spec.max_tokens)
    e.load()
    return e


def recall_rows(convs: dict[str, list], table: VectorTable) -> dict[str, Any]:
    """Vector and shipped-ranking metrics per data set, with per-question rows."""
    from memoryd.retrieval.bm25 import DEFAULT_B, DEFAULT_K1
    from memoryd.retrieval.relevance import DEFAULT_MODEL

    out = {}
    for ds in data_sets(convs, table):
        res = lodo.scored(ds, lodo.rankings(ds, DEFAULT_K1, DEFAULT_B, DEFAULT_MODEL))
        out[ds.name] = {r: {k: res[r]["table"]["overall"][k] for k in METRICS}
                        for r in ("vector", "shipped")}
        out[ds.name]["rows"] = res["shipped"]["rows"]
    return out


def compare(convs: dict[str, list], base: VectorTable, name: str, path: Path) -> dict[str, Any]:
    """One copy: cosines to the float vectors and recall differences per data set."""
    table = VectorTable(embedder_for(path), VectorCache(CACHE_DIR / f"recall-{path.stem}"), log)
    texts = [m.content for cs in convs.values() for c in cs for m in c.messages]
    table.ensure(texts, f"{name}: memories")
    cos = np.array([float(base.vectors[t] @ table.vectors[t]) for t in texts])
    mixed = VectorTable(base.embedder, VectorCache(None), log)
    mixed.vectors = {**base.vectors, **table.vectors}  # memories int8, questions float
    return {"cosine": {"min": round(float(cos.min()), 4), "p1": round(float(np.percentile(cos, 1)), 4),
                       "median": round(float(np.median(cos)), 5)},
            "recall": recall_rows(convs, mixed)}


def speed(paths: dict[str, Path], rounds: int) -> dict[str, Any]:
    """Bulk embedding rate (texts/s) of the float path and each copy, alternated."""
    from bench.latency.corpus import ingest_texts
    from memoryd.embed.onnx import OnnxEmbedder

    n = 1000
    texts = ingest_texts(n * rounds).texts
    embedders = {"float": OnnxEmbedder.preset("minilm-int8"),
                 **{k: embedder_for(p) for k, p in paths.items()}}
    rates: dict[str, list[float]] = {k: [] for k in embedders}
    for r in range(rounds):
        chunk = texts[r * n:(r + 1) * n]
        for name in (list(embedders) if r % 2 == 0 else list(reversed(embedders))):
            t0 = time.perf_counter()
            embedders[name].embed(chunk)
            rates[name].append(n / (time.perf_counter() - t0))
        log(f"speed round {r + 1}: " + ", ".join(f"{k} {v[-1]:.0f}/s" for k, v in rates.items()))
    base = statistics.median(rates["float"])
    return {k: {"per_s_median": round(statistics.median(v), 1), "rounds": [round(x, 1) for x in v],
                "over_float": round(statistics.median(v) / base, 2)} for k, v in rates.items()}


def render(r: dict[str, Any]) -> str:
    lines = ["# int8 arithmetic for bulk embedding: memories int8, queries float", "",
             f"Run {r['started']} on {r['machine']['cpus']} CPUs, load average "
             f"{r['load'][0]:.1f}-{r['load'][1]:.1f}. memoryd's shipped ranking and BM25 constants; "
             "differences are the copy minus all-float (answerable questions); sign test on "
             "hit@5 (questions better / worse).", ""]
    rows = []
    for name, v in r["variants"].items():
        for ds, res in v["recall"].items():
            base = r["float"][ds]
            diff = [round(res["shipped"][k] - base["shipped"][k], 4) for k in METRICS]
            vdiff = round(res["vector"]["hit@5"] - base["vector"]["hit@5"], 4)
            s = v["sign"][ds]
            rows.append([name, ds, *diff, vdiff, f"{s['wins']}/{s['losses']} (p {s['p']})"])
    lines += [md_table(["copy", "data set", *[f"Δ {k}" for k in METRICS], "Δ vector hit@5",
                        "sign hit@5"], rows), ""]
    lines += [md_table(["copy", "cosine to float: min", "p1", "median", "bulk texts/s",
                        "x float"],
                       [[n, v["cosine"]["min"], v["cosine"]["p1"], v["cosine"]["median"],
                         r["speed"][n]["per_s_median"], r["speed"][n]["over_float"]]
                        for n, v in r["variants"].items()]), "",
              f"Float path: {r['speed']['float']['per_s_median']} texts/s (median of "
              f"{len(r['speed']['float']['rounds'])} alternated rounds).", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.recall.int8_bulk", description=__doc__)
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args(argv)
    try:
        import onnx  # noqa: F401
    except ImportError:
        print("the quantiser needs the onnx package (pip install onnx); skipping")
        return 0
    convs = sets.load_sets(["beam", "realtalk", "agent"], log)
    if not {"beam", "realtalk"} <= set(convs):
        print("BEAM or REALTALK is absent; skipping")
        return 0
    load0 = os.getloadavg()[0]
    base = sets.vector_table(log)
    sets.embed_sets(convs, base)
    float_rows = recall_rows(convs, base)
    paths = {name: make_copy(name, inputs) for name, inputs in VARIANTS.items()}
    variants = {}
    for name, path in paths.items():
        v = compare(convs, base, name, path)
        v["sign"] = {ds: lodo.sign(float_rows[ds]["rows"], res["rows"], "hit@5")
                     for ds, res in v["recall"].items()}
        variants[name] = v
    result = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "machine": machine_info(), "speed": speed(paths, args.rounds),
              "float": float_rows, "variants": variants, "load": [load0, os.getloadavg()[0]]}
    recall = [result["float"], *[v["recall"] for v in variants.values()]]
    return publish("embed_int8", result, recall, render)


def publish(name: str, result: dict[str, Any], recall: list[dict[str, Any]],
            render_result: Callable[[dict[str, Any]], str]) -> int:
    """Drop the per-question rows of the ``recall`` tables, write results/<name>.{json,md}
    and print the summary."""
    for rows in recall:
        for res in rows.values():
            res.pop("rows")
    write_results(name, result, render_result(result))
    print(render_result(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
