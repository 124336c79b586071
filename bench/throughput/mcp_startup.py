"""MCP stdio time-to-ready: how long `memoryd mcp` takes to answer initialize, tools/list and
the first tool call.

    .venv/bin/python -m bench.throughput.mcp_startup            # 15 runs
    .venv/bin/python -m bench.throughput.mcp_startup --runs 5

Each run starts the real console script (`memoryd mcp`, as `claude mcp add memoryd --
memoryd mcp` would), writes `initialize`, `notifications/initialized` and `tools/list` to its
stdin at once, and times (from just before the process is spawned) the arrival of the
initialize reply, the tools/list reply and the reply to a first ``search`` call on stdout. The
store is a SQLite file holding one memory; it is opened on the first call, and the embedding
model loads in the background after tools/list, so the first search is answered from the
keyword side while the model loads (and says so). Budgets: initialize 1 s (DESIGN.md §6),
first call 1.5 s. Also recorded: the child's CPU time up to the tools/list reply, the size of
tools/list in cl100k tokens, and how busy the machine was with other work before each run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import (
    machine_info,
    md_table,
    raise_priority,
    summarize,
    wait_quiet,
    write_results,
)

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"},
    },
}
LINES = [
    INIT,
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
     "params": {"name": "search", "arguments": {"query": "when does the release train leave"}}},
]


def one_run(env: dict[str, str]) -> dict[str, float]:
    memoryd_bin = Path(sys.executable).parent / "memoryd"
    payload = "".join(json.dumps(m) + "\n" for m in LINES)
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [str(memoryd_bin), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(payload)
    proc.stdin.flush()
    times: dict[int, float] = {}
    while len(times) < 3:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("memoryd mcp closed stdout early")
        reply = json.loads(line)
        if reply.get("id") in (1, 2, 3):
            times[reply["id"]] = (time.perf_counter() - t0) * 1000
            if reply["id"] == 2:
                tools = len(reply["result"]["tools"])
                cpu = _child_cpu(proc.pid)
                listing = json.dumps(reply["result"])
            if reply["id"] == 3:
                answered = "release train" in json.dumps(reply.get("result", {}))
    proc.stdin.close()
    proc.wait(timeout=60)
    proc.stdout.close()
    from memoryd.graph.tokens import get_counter

    return {"initialize_ms": times[1], "tools_list_ms": times[2], "first_call_ms": times[3],
            "first_call_found": answered, "cpu_ms": cpu, "tools": tools,
            "tools_list_tokens": get_counter("cl100k").count(listing)}


def _child_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.throughput.mcp_startup")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--quiet-wait", type=float, default=30.0)
    args = parser.parse_args(argv)
    niceness = raise_priority(-10)
    home = Path(tempfile.mkdtemp(prefix="memoryd-mcp-bench-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    env.update(MEMORYD_HOME=str(home), MEMORYD_CONFIG=str(home / "none.toml"))
    memoryd_bin = Path(sys.executable).parent / "memoryd"
    subprocess.run([str(memoryd_bin), "add", "The release train leaves every second Wednesday"],
                   env=env, check=True, capture_output=True)
    one_run(env)  # page cache warm, like any second start of the day
    runs: list[dict[str, float]] = []
    for i in range(args.runs):
        load = wait_quiet(args.quiet_wait)
        run = one_run(env)
        run["other_load_before"] = load
        runs.append(run)
        print(
            f"run {i + 1}: initialize {run['initialize_ms']:.0f} ms, tools/list "
            f"{run['tools_list_ms']:.0f} ms, first search {run['first_call_ms']:.0f} ms, "
            f"cpu {run['cpu_ms']:.0f} ms, other load {load}"
        )
    init = summarize([r["initialize_ms"] for r in runs])
    ready = summarize([r["tools_list_ms"] for r in runs])
    cpu = summarize([r["cpu_ms"] for r in runs])
    first = summarize([r["first_call_ms"] for r in runs])
    data = {
        "benchmark": "mcp_startup",
        "command": "memoryd mcp",
        "runs": args.runs,
        "initialize": init,
        "tools_list": ready,
        "child_cpu_to_ready": cpu,
        "first_call": first,
        "first_call_found_every_time": all(r["first_call_found"] for r in runs),
        "tools_list_tokens": runs[0]["tools_list_tokens"],
        "first_call_budget_ms": 1500,
        "budget_ms": 1000,
        "median_other_load": statistics.median(r["other_load_before"] for r in runs),
        "tools": runs[0]["tools"],
        "niceness": niceness,
        "machine": machine_info(),
        "all_runs": runs,
    }
    rows = [
        ["initialize reply", init["p50_ms"], init["min_ms"], init["max_ms"]],
        ["tools/list reply (ready)", ready["p50_ms"], ready["min_ms"], ready["max_ms"]],
        ["first search reply", first["p50_ms"], first["min_ms"], first["max_ms"]],
        ["child CPU until ready", cpu["p50_ms"], cpu["min_ms"], cpu["max_ms"]],
    ]
    markdown = f"""# MCP stdio time-to-ready and first call

`memoryd mcp` started {args.runs} times (after one untimed start); each time `initialize`,
`notifications/initialized`, `tools/list` and a `search` call are written at once and the
replies timed from just before the process is spawned. Budgets: initialize within 1000 ms
(DESIGN.md §6), the first call within 1500 ms. The store is opened on the first call; the
embedding model loads in the background after tools/list, so the first search answers from the
keyword side and says so (it found the stored memory in every run:
{data["first_call_found_every_time"]}). tools/list (the default `memory` profile,
{data["tools"]} tools) is {data["tools_list_tokens"]} cl100k tokens, output schemas included.

{md_table(["milestone", "median ms", "min ms", "max ms"], rows)}

{ready["n"]} runs; median other load on the machine before a run:
{data["median_other_load"]} cores of {data["machine"]["cpus"]}. Where the time goes: Python
start-up and imports (the `mcp` SDK alone is ~0.45 s of CPU: pydantic models for two
protocol versions, starlette, the client package its `__init__` pulls in), then memoryd's
settings, engine and the {data["tools"]} tool schemas.
"""
    jpath, mpath = write_results("mcp_startup", data, markdown)
    print(f"wrote {jpath} and {mpath}")


if __name__ == "__main__":
    main()
