"""Time from process spawn to the first hybrid search answered, per embedder.

    .venv/bin/python -m bench.embedmodels.first_search [--rounds 5] [--memories 2000]

A store of short synthetic memories is built once per embedder (``bench/.cache``); then, for
each round and embedder in turn (interleaved), a fresh ``python`` process imports memoryd,
opens the store, and runs one ``Engine.search`` in hybrid mode (so the query is embedded and the
model loads on that call). Reported: spawn to search answered, and inside the process the
time to import memoryd, to open the store, and the first search (model load + query). This is
what the first MCP ``search`` call of a freshly started ``memoryd mcp`` pays when it arrives
before the background warm-up. Writes ``bench/results/embedmodels_first_search.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.common import CACHE_DIR, machine_info, md_table, write_results

EMBEDDERS = {"local": {"MEMORYD_EMBEDDER": "local"},
             "onnx": {"MEMORYD_EMBEDDER": "onnx", "MEMORYD_EMBED_MODEL": "minilm-int8"}}
BUDGET_S = 1.5

CHILD = r"""
import time, json, sys
t0 = time.time()
import memoryd
t1 = time.time()
mem = memoryd.open(sys.argv[1])
t2 = time.time()
hits = mem.search("which database did we pick for the billing service?", limit=5, record_access=False)
t3 = time.time()
print(json.dumps({"t_start": t0, "import_s": t1 - t0, "open_s": t2 - t1, "search_s": t3 - t2,
                  "done": t3, "hits": len(hits)}))
"""


def build_store(name: str, env: dict[str, str], n: int) -> Path:
    """A SQLite store of ``n`` synthetic memories embedded by ``name`` (built once)."""
    from bench.latency.corpus import generate_corpus

    path = CACHE_DIR / "embedmodels" / f"first_search_{name}_{n}.db"
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    texts = generate_corpus(n, seed=42).texts
    script = ("import json, sys, memoryd\n"
              "mem = memoryd.open(sys.argv[1])\n"
              "mem.add_many([{'content': t} for t in json.load(sys.stdin)])\n"
              "mem.close()\n")
    subprocess.run([sys.executable, "-c", script, f"sqlite:///{path}"], input=json.dumps(texts),
                   text=True, check=True, env={**os.environ, **env})
    return path


def one_run(path: Path, env: dict[str, str]) -> dict[str, float]:
    spawned = time.time()
    proc = subprocess.run([sys.executable, "-c", CHILD, f"sqlite:///{path}"], capture_output=True,
                          text=True, env={**os.environ, **env}, check=True)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["spawn_to_answer_s"] = out["done"] - spawned
    out["spawn_to_python_s"] = out["t_start"] - spawned
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--memories", type=int, default=2000)
    a = ap.parse_args(argv)
    stores = {name: build_store(name, env, a.memories) for name, env in EMBEDDERS.items()}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in EMBEDDERS}
    for r in range(a.rounds):
        for name, env in EMBEDDERS.items():
            runs[name].append(one_run(stores[name], env))
            print(f"round {r + 1} {name}: {runs[name][-1]['spawn_to_answer_s']:.2f}s", flush=True)
    keys = ("spawn_to_answer_s", "spawn_to_python_s", "import_s", "open_s", "search_s")
    med = {n: {k: round(statistics.median(x[k] for x in rs), 3) for k in keys} for n, rs in runs.items()}
    ratio = round(med["onnx"]["spawn_to_answer_s"] / med["local"]["spawn_to_answer_s"], 3)
    result = {"benchmark": "embedmodels_first_search", "memories": a.memories, "rounds": a.rounds,
              "medians": med, "onnx_over_local": ratio, "budget_s": BUDGET_S, "runs": runs,
              "machine": machine_info(), "load_average": os.getloadavg()}
    rows = [[n, m["spawn_to_answer_s"], m["spawn_to_answer_s"] <= BUDGET_S, m["import_s"], m["open_s"],
             m["search_s"]] for n, m in med.items()]
    md = "\n".join([
        "# First search after process spawn: torch MiniLM vs ONNX int8 MiniLM", "",
        f"`python -m bench.embedmodels.first_search --rounds {a.rounds} --memories {a.memories}`; "
        f"medians of {a.rounds} interleaved fresh processes; load average at the end "
        f"{', '.join(f'{x:.1f}' for x in os.getloadavg())} (shared 2-core machine).", "",
        md_table(["embedder", "spawn to answer s", f"<= {BUDGET_S} s", "import memoryd s",
                  "open store s", "first search s (model load + query)"], rows), "",
        f"ONNX / torch, spawn to answer: x{ratio}.",
    ])
    write_results("embedmodels_first_search", result, md)
    print(md)


if __name__ == "__main__":
    main()
