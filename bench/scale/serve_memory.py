"""Resident memory of a real `memoryd serve` on a large SQLite store, with the model loaded.

    python -m bench.scale.serve_memory [--store bench/.cache/scale/sqlite-100000.db] [--runs 5]
        [--previous-ref main | --previous DIR/src] [--searches 100] [--settle 1]

Each run spawns ``memoryd serve`` (this version and a previous one exported from git, the
order flipped every run), waits until ``/readyz`` says ready (the vector index and the
embedding model are loaded), reads the process's resident memory from /proc (VmRSS, and its
anonymous and file-backed parts), sends ``--searches`` hybrid searches over REST (different
queries, one client) and reads it again; then the peak (VmHWM). Medians.
Results: results/serve_memory.{json,md}.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from bench.common import machine_info, md_table, write_results
from bench.scale.cold_start import _env, _free_port, prepare_versions, version_arguments

WORDS = ["deploy", "release", "database", "migration", "team", "owner", "meeting", "budget",
         "incident", "latency", "backup", "schedule", "customer", "design", "review", "policy",
         "travel", "doctor", "birthday", "garden"]
FIELDS = {"VmRSS": "rss", "RssAnon": "anon", "RssFile": "file", "VmHWM": "peak"}


def _memory(pid: int) -> dict[str, float]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in FIELDS:
            out[FIELDS[name]] = round(int(value.split()[0]) / 1024, 1)
    return out


def run_once(store: Path, key: str, src: Path, searches: int, settle: float = 1.0
             ) -> dict[str, Any]:
    """One server: its memory once ready and after ``searches`` searches."""
    import subprocess

    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([str(Path(sys.executable).parent / "memoryd"), "serve", "--port",
                             str(port)], env=_env(store, src), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        time.sleep(settle)  # what finishes after ready (the keyword copy's load, ...)
        ready = _memory(proc.pid)
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=url, headers=headers, timeout=120) as client:
            for i in range(searches):
                query = f"{WORDS[i % len(WORDS)]} {WORDS[(i * 7 + 3) % len(WORDS)]} {i}"
                client.post("/api/v1/search", json={"query": query}).raise_for_status()
        searched = _memory(proc.pid)
    finally:
        proc.terminate()
        proc.wait(60)
    return {"ready": {k: v for k, v in ready.items() if k != "peak"},
            "searched": {k: v for k, v in searched.items() if k != "peak"},
            "peak": searched["peak"]}


def render(r: dict[str, Any]) -> str:
    """The markdown summary."""
    m = r["median"]
    rows = []
    for moment in ("ready", "searched"):
        for field in ("rss", "anon", "file"):
            prev, this = m["previous"][moment][field], m["this"][moment][field]
            rows.append([f"{moment}: {field}", prev, this, f"{this / prev:.2f}"])
    rows.append(["peak (VmHWM)", m["previous"]["peak"], m["this"]["peak"],
                 f"{m['this']['peak'] / m['previous']['peak']:.2f}"])
    return "\n".join([
        f"# Resident memory of `memoryd serve` at {r['memories']:,} memories (SQLite, model "
        "loaded)", "",
        f"Run {r['started']} (`{r['command']}`) on {r['machine']['cpus']} CPUs shared with "
        f"other work; {r['runs_each']} fresh servers per version, the order flipped every run, "
        f"medians, MB. `ready`: once `/readyz` says ready (plus {r.get('settle', 1.0):g} s); "
        "`searched`: after "
        f"{r['searches']} hybrid searches over REST. `anon` is the process's own memory, "
        "`file` the pages of files it maps (libraries, model, a mapped index) that are "
        f"resident. Previous: `{r['previous']}`.", "",
        md_table(["MB", "previous", "this", "ratio"], rows), ""])


def main(argv: list[str] | None = None) -> None:
    """Measure both versions; write results/serve_memory.{json,md}."""
    p = version_arguments("python -m bench.scale.serve_memory", __doc__, "serve_memory")
    p.add_argument("--searches", type=int, default=100)
    p.add_argument("--settle", type=float, default=1.0,
                   help="seconds after ready before the first reading (the in-memory keyword "
                        "copy loads after ready: ~1 s at 100k, ~30 s at 1M)")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    memories, key, sources = prepare_versions(args, "bench-serve-memory")
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    runs: dict[str, list[dict[str, Any]]] = {v: [] for v in sources}
    for i in range(args.runs):
        for version in (list(sources) if i % 2 == 0 else list(reversed(sources))):
            runs[version].append(run_once(args.store, key, sources[version], args.searches,
                                          args.settle))
            print(f"run {i + 1} {version}: {runs[version][-1]}", flush=True)
    median = {v: {"ready": {f: statistics.median(r["ready"][f] for r in rs)
                            for f in rs[0]["ready"]},
                  "searched": {f: statistics.median(r["searched"][f] for r in rs)
                               for f in rs[0]["searched"]},
                  "peak": statistics.median(r["peak"] for r in rs)} for v, rs in runs.items()}
    result = {"benchmark": "serve_memory", "started": started, "memories": memories,
              "command": "python -m bench.scale.serve_memory " + " ".join(sys.argv[1:] if argv is None else argv),
              "previous": str(args.previous or args.previous_ref), "runs_each": args.runs,
              "searches": args.searches, "settle": args.settle, "machine": machine_info(),
              "median": median,
              "runs": runs}
    jpath, mpath = write_results(args.name, result, render(result))
    print(f"wrote {jpath} and {mpath}")


if __name__ == "__main__":
    main()
