"""Smart waits and task memory inside memoryd: what the engine adds to the watcher layer.

    python -m bench.waits_engine           # full run (~6 min)
    python -m bench.waits_engine --quick   # smoke run (~1.5 min)

1. Idle CPU (bench/waits_engine/idle.py): 20 file waits that never resolve, over 60 s, as
   % of one core: the watcher layer alone (jobs in a JSON file), the engine's runner (jobs
   in the SQLite store, a store sync every second), and the runner with the system
   activity sources writing memories. Budget: <= 2% of one core.
2. Detection latency end to end (bench/waits_engine/latency.py): 20 file waits started
   and long-polled over REST on a real server and 20 on the bare scheduler, at the same
   time, each line written to one file of each at once. Budget: p50 <= 1 s.
3. Task memory (bench/waits_engine/tasks.py): task_update with the running summary every
   5 messages against never (calls interleaved); task_get on a task of a few hundred
   messages; an on-demand extractive summary.

Results: bench/results/waits_engine.json and .md (--quick: waits_engine_quick.*).
"""

from __future__ import annotations

import argparse
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import (
    machine_info,
    md_table,
    other_load,
    percentile,
    source_fingerprint,
    write_results,
)
from bench.waits_engine import idle, latency, tasks

SRC = Path(__file__).resolve().parents[2] / "src" / "memoryd"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options."""
    p = argparse.ArgumentParser(prog="python -m bench.waits_engine",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="short smoke run")
    p.add_argument("--skip", default="", help="comma list of parts to skip: idle,latency,tasks")
    return p.parse_args(argv)


def _lat(samples: list[float], n: int) -> dict[str, Any]:
    return {"samples_ms": [round(s, 1) for s in samples], "unresolved": n - len(samples),
            "p50_ms": round(percentile(samples, 50), 1),
            "p95_ms": round(percentile(samples, 95), 1)}


def headline(data: dict[str, Any]) -> list[str]:
    """The budget lines, computed from the numbers."""
    lines = []
    if "idle" in data:
        labels = list(data["idle"])
        runner = data["idle"][labels[1]]["cpu_percent_of_one_core"]
        lines.append(f"- 20 idle file waits run by the engine use {runner:.2f}% of one core "
                     f"(budget 2%: {'met' if runner <= 2 else 'MISSED'}); engine / watcher "
                     f"layer alone: x{data['ratio']['engine_over_bare_cpu']:.2f}.")
    if "latency" in data:
        rest, bare = data["latency"]["over REST (engine runner)"], data["latency"]["bare scheduler"]
        lines.append(f"- File detection latency over REST p50 {rest['p50_ms']:.0f} ms, p95 "
                     f"{rest['p95_ms']:.0f} ms (budget p50 <= 1000 ms: "
                     f"{'met' if rest['p50_ms'] <= 1000 else 'MISSED'}); bare scheduler p50 "
                     f"{bare['p50_ms']:.0f} ms.")
    if "tasks" in data:
        t = data["tasks"]
        every, never = t["summary every 5 messages"], t["no summary"]
        lines.append(f"- task_update mean {every['task_update']['mean_ms']:.1f} ms (p50 "
                     f"{every['task_update']['p50_ms']:.1f} ms) with the running summary every "
                     f"5 messages, {never['task_update']['mean_ms']:.1f} ms (p50 "
                     f"{never['task_update']['p50_ms']:.1f} ms) without: x"
                     f"{t['ratio_update_mean_summary_over_none']} on the mean; task_get p50 "
                     f"{every['task_get']['p50_ms']:.1f} ms; an on-demand summary p50 "
                     f"{every['task_get_refresh']['p50_ms']:.1f} ms.")
    return lines


def render(data: dict[str, Any]) -> str:
    """The markdown summary."""
    out = [f"# Smart waits and task memory in the engine\n\nRun {data['started']} with "
           f"`python -m bench.waits_engine{' --quick' if data['quick'] else ''}` on "
           f"{data['machine']['cpus']} CPUs ({data['machine']['cpu_model']}); other processes "
           f"kept {data['other_load']} cores busy at the start. Source "
           f"{data['source']['sha256']}.", "## Headline\n\n" + "\n".join(headline(data))]
    if "idle" in data:
        rows = [[label, r["seconds"], r["cpu_s"], r["cpu_percent_of_one_core"],
                 r["checks_per_s"], r.get("system_memories", "-")]
                for label, r in data["idle"].items()]
        out.append("## CPU of 20 idle file waits\n\nThis process's CPU (all threads) over the "
                   "window, % of one core. Budget 2%. System memories: how many `system.*` "
                   "memories the activity sources wrote on this shared machine during the run "
                   "(the first one loads the embedding model, inside the window).\n")
        out.append(md_table(["configuration", "s", "CPU s", "% of one core", "checks/s",
                             "system memories"], rows))
    if "latency" in data:
        rows = [[label, len(r["samples_ms"]), r["unresolved"], r["p50_ms"], r["p95_ms"]]
                for label, r in data["latency"].items()]
        out.append(f"## Detection latency, {data['latency_plan']}\n")
        out.append(md_table(["path", "waits", "unresolved", "p50 ms", "p95 ms"], rows))
    if "tasks" in data:
        t = data["tasks"]
        rows = [[label, name, s["n"], s["mean_ms"], s["p50_ms"], s["p95_ms"]]
                for label in ("summary every 5 messages", "no summary")
                for name, s in t[label].items()]
        out.append(f"## Task memory ({t['messages']} messages per task, SQLite)\n\nThe two "
                   "variants' task_update calls alternate, so the machine's load falls on both "
                   "alike.\n")
        out.append(md_table(["variant", "call", "n", "mean ms", "p50 ms", "p95 ms"], rows))
        out.append(f"\nAn extractive summary of that task:\n\n> {t['summary_example']}")
    return "\n\n".join(out)


def main(argv: list[str] | None = None) -> None:
    """Run the bench and write the results."""
    from memoryd.embed import LocalEmbedder

    args = parse_args(argv)
    skip = set(filter(None, args.skip.split(",")))
    idle_s, n, longest, messages = (10.0, 6, 8.0, 60) if args.quick else (60.0, 20, 20.0, 300)
    data: dict[str, Any] = {"started": datetime.now(UTC).isoformat(timespec="seconds"),
                            "quick": args.quick, "machine": machine_info(),
                            "source": source_fingerprint(SRC), "other_load": other_load()}
    embedder = LocalEmbedder()  # loads only if something is embedded (activity memories)
    with tempfile.TemporaryDirectory(prefix="waits-engine-bench-") as tmp:
        root = Path(tmp)
        if "idle" not in skip:
            (root / "idle").mkdir()
            data["idle"] = idle.run_all(root / "idle", idle_s, embedder)
            labels = list(data["idle"])
            data["ratio"] = {"engine_over_bare_cpu": round(
                data["idle"][labels[1]]["cpu_s"] / max(1e-9, data["idle"][labels[0]]["cpu_s"]),
                2)}
        if "latency" not in skip:
            print(f"latency: {n} file waits on each path, text at 1..{longest:g} s", flush=True)
            (root / "lat").mkdir()
            data["latency_plan"] = (f"{n} file waits on each path at the same time, text "
                                    f"1-{longest:g} s after the start")
            found = latency.run(root / "lat", n, longest, embedder)
            data["latency"] = {label: _lat(samples, n) for label, samples in found.items()}
        if "tasks" not in skip:
            print(f"tasks: {messages} messages per task", flush=True)
            (root / "tasks").mkdir()
            data["tasks"] = tasks.run(root / "tasks", embedder, messages)
    data["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
    name = "waits_engine_quick" if args.quick else "waits_engine"
    jpath, mpath = write_results(name, data, render(data))
    print(f"wrote {jpath} and {mpath}")
