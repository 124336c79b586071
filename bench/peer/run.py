"""memoryd beside mcp-memory-service: search, batch ingest, memory, cold start; same run.

    python -m bench.peer [--sizes 5000,20000] [--rounds 3] [--queries 150]

Installs mcp-memory-service 12.4.0 from the package registry into its own venv under
bench/.cache/peer (once; :mod:`bench.peer.install`) and gives it memoryd's MiniLM weights
offline. For each size, every round runs each system in turn (the order flips every round),
each in fresh processes of its own, offline (``unshare -n`` where it works, and in any case no
proxy, hubs offline, downloads refused):

1. a worker loads the model, batch-ingests the memories into a new store (memoryd:
   ``add_many`` of the whole list, which writes 256 per transaction; the peer: ``store_batch``
   of 256 at a time), then times every query (the query embedding included);
2. a second, fresh worker opens that store and answers one query: cold start to first result,
   timed from process start to its answer.

Results: bench/results/peer.{json,md}, medians over rounds and ratios memoryd/peer.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bench.common import machine_info, write_results
from bench.peer import install, memories, report

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]
WORK = install.PEER_DIR / "work"


MEMORYD_SRC = {"path": REPO_ROOT / "src"}  # --memoryd-ref points it at an exported version


def command(system: str) -> tuple[list[str], dict[str, str]]:
    """How to start a worker of ``system``: argv prefix and environment."""
    if system == "peer":
        return [str(install.peer_python()), str(HERE / "peer_side.py")], install.offline_env()
    env = install.offline_env(install.PEER_DIR / "memoryd-home")
    env.update(PYTHONPATH=str(MEMORYD_SRC["path"]),
               MEMORYD_CONFIG=str(WORK / "no-such-config.toml"),
               MEMORYD_HOME=str(install.PEER_DIR / "memoryd-home" / "memoryd"))
    return [sys.executable, str(HERE / "memoryd_side.py")], env


def work(system: str, job_file: Path, prefix: list[str]) -> dict[str, Any]:
    """Run one worker to its answer; ``wall_s`` is process start to the answer."""
    argv, env = command(system)
    t0 = time.perf_counter()
    proc = subprocess.Popen([*prefix, *argv, str(job_file)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    wall = time.perf_counter() - t0
    _, err = proc.communicate(timeout=3600)
    if proc.returncode != 0 or not line.strip():
        raise RuntimeError(f"{system} worker failed ({proc.returncode}): {err[-3000:]}")
    return {**json.loads(line), "wall_s": wall}


def one_round(size: int, r: int, files: dict[str, Path], args: argparse.Namespace,
              prefix: list[str]) -> dict[str, dict[str, float]]:
    """Both systems, in turn, on fresh stores: ingest + searches, then a cold start."""
    order = report.SYSTEMS if r % 2 == 0 else tuple(reversed(report.SYSTEMS))
    runs: dict[str, dict[str, Any]] = {}
    for system in order:
        db = WORK / f"{size}-{r}-{system}.db"
        job = memories.write_job(WORK / f"{system}-run.json", kind="run", db=str(db),
                                 memories=str(files["memories"]), queries=str(files["queries"]),
                                 batch=args.batch, warmup=args.warmup)
        runs[system] = work(system, job, prefix)
    colds: dict[str, dict[str, Any]] = {}
    query = json.loads(files["queries"].read_text())[r]
    for system in order:
        job = memories.write_job(WORK / f"{system}-cold.json", kind="cold", query=query,
                                 db=str(WORK / f"{size}-{r}-{system}.db"))
        colds[system] = work(system, job, prefix)
    return {s: report.round_figures(runs[s], colds[s]) for s in report.SYSTEMS}


def same_vectors(texts: list[str], prefix: list[str]) -> dict[str, float]:
    """Both systems embed the same texts; row-wise cosines of what they return."""
    import numpy as np

    texts_file = WORK / "vector-texts.json"
    texts_file.write_text(json.dumps(texts))
    out = {}
    for system in report.SYSTEMS:
        target = WORK / f"vectors-{system}.npy"
        job = memories.write_job(WORK / f"{system}-vectors.json", kind="vectors",
                                 texts=str(texts_file), out=str(target),
                                 db=str(WORK / f"vectors-{system}.db"))
        work(system, job, prefix)
        out[system] = np.load(target)
    c = (out["memoryd"] * out["peer"]).sum(axis=1)
    return {"n": len(texts), "min": round(float(c.min()), 5), "median": round(float(np.median(c)), 5)}


def method_notes(args: argparse.Namespace, prefix: list[str]) -> list[str]:
    return [
        "Memories: bench/latency's synthetic agent memories (seed 42, exact repeats dropped), with "
        "their node types (the peer's ontology keeps those it knows, others become "
        "'observation') and 0-3 tags. Queries: short, question and long in turn, built from "
        f"memories of the set; {args.queries} per round after {args.warmup} untimed.",
        "memoryd: `memoryd.open(sqlite path)`, `warm()`, `add_many(all)`, `search(q, 10)` "
        "(hybrid, the default, recording access as it does by default) and `search(q, 10, "
        "mode='vector')`; memoryd embeds a query of up to 40 tokens on its int8-arithmetic copy "
        "of the same weights (memoryd.embed.onnx_int8, cosine >= 0.999 to the float vectors; "
        "made once, before the rounds, by the vector check) and memories on the float path. Peer: `SqliteVecMemoryStorage(path)`, `initialize()`, "
        f"`store_batch` of {args.batch} at a time, `retrieve(q, n_results=10)` (semantic: its "
        "default, what its memory_search tool runs) and `retrieve_hybrid(q, n_results=10)`.",
        "Peak RSS is the worker's ru_maxrss (model, ingest and searches); growth is VmRSS after "
        "the ingest minus VmRSS with the model loaded. Cold start: a fresh process opens the "
        "store written in the round and answers one query, timed from process start. memoryd "
        "answers by keywords while its model loads; its first answer by meaning is the other "
        "cold row (the peer loads its model before it answers: both rows are the same for it).",
        "Offline: " + ("each worker runs under `unshare -n` (no network interface up); "
                       if prefix else "") + "no proxy variables, HF_HUB_OFFLINE=1, "
        "MCP_MEMORY_ONNX_ALLOW_DOWNLOAD=0, and the peer's HOME is bench/.cache/peer/home, "
        "holding memoryd's int8 model.onnx and a tokenizer.json with memoryd's token ids where "
        "the peer's loader looks (~/.cache/mcp_memory/onnx_models/all-MiniLM-L6-v2/onnx/).",
    ]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.peer", description=__doc__)
    p.add_argument("--sizes", default="5000")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--queries", type=int, default=150)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--name", default="peer")
    p.add_argument("--memoryd-ref", help="run memoryd as of this git ref (default: this tree)")
    argv = sys.argv[1:] if argv is None else argv
    args = p.parse_args(argv)
    if args.memoryd_ref:
        from bench.latency.ingest_versions import export_ref

        MEMORYD_SRC["path"] = export_ref(args.memoryd_ref)
    version = install.install()
    install.place_model()
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    prefix = install.no_network_prefix()
    queries = memories.queries(args.queries + args.warmup)
    files = {"queries": WORK / "queries.json"}
    files["queries"].write_text(json.dumps(queries))
    sizes = [int(s) for s in args.sizes.split(",")]
    vectors = same_vectors([m["content"] for m in memories.agent_memories(200)] + queries[:50],
                           prefix)
    loads: list[float] = []
    result_sizes: dict[str, Any] = {}
    for size in sizes:
        files["memories"] = WORK / f"memories-{size}.json"
        files["memories"].write_text(json.dumps(memories.agent_memories(size)))
        rounds = []
        for r in range(args.rounds):
            loads.append(os.getloadavg()[0])
            rounds.append(one_round(size, r, files, args, prefix))
            print(f"{size:,} memories, round {r + 1}: " + json.dumps(
                {s: {k: round(v, 1) for k, v in f.items()} for s, f in rounds[-1].items()}),
                flush=True)
        result_sizes[str(size)] = report.summarize(rounds)
    loads.append(os.getloadavg()[0])
    peer_python = subprocess.run([str(install.peer_python()), "-c", "import sys; print(sys.version.split()[0])"],
                                 capture_output=True, text=True).stdout.strip()
    result = {"started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "command": "python -m bench.peer " + " ".join(argv), "machine": machine_info(),
              "load_average_1m": [round(x, 2) for x in loads], "rounds": args.rounds,
              "memoryd_src": str(MEMORYD_SRC["path"]),
              "peer": {"package": install.PEER_PACKAGE, "version": version,
                       "python": f"Python {peer_python}",
                       "offline": "unshare -n" if prefix else "environment only"},
              "vectors": vectors, "sizes": result_sizes, "method": method_notes(args, prefix)}
    write_results(args.name, result, report.render(result))
    print(report.render(result))
    shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    main()
