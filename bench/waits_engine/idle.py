"""CPU of idle waits run by the engine (store-backed, with the 1 s store sync) against the
bare scheduler of the watcher layer (jobs in a JSON file), in the same run.

20 file waits that never resolve, watched for a fixed window. The cost is this process's
CPU time (every thread) over the window, as a percentage of one core. A third
configuration adds the system-activity sources (processes, swap, disk; every 10 s) whose
episodes the engine writes as memories.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import memoryd
from bench.waits.env import scheduler
from memoryd.embed import LocalEmbedder
from memoryd.waits import JsonFileJobStore, WaitRequest

WAITS = 20
CRITERIA = "NEVER_PRINTED_TEXT"


def _cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _files(root: Path) -> list[str]:
    out = []
    for i in range(WAITS):
        path = root / f"idle{i}.log"
        path.write_text("")
        out.append(f"file:{path}")
    return out


def _window(seconds: float, checks: Any) -> dict[str, Any]:
    time.sleep(3.0)  # past start-up: first checks, first saves
    cpu0, wall0, checks0 = _cpu_seconds(), time.monotonic(), checks()
    time.sleep(seconds)
    cpu, wall = _cpu_seconds() - cpu0, time.monotonic() - wall0
    return {"seconds": round(wall, 2), "cpu_s": round(cpu, 3),
            "cpu_percent_of_one_core": round(100 * cpu / wall, 3),
            "checks_per_s": round((checks() - checks0) / wall, 1)}


def bare(root: Path, seconds: float) -> dict[str, Any]:
    """The watcher layer alone: one scheduler, jobs in a JSON file."""
    sched = scheduler(root, jobs=JsonFileJobStore(root / "jobs.json"))
    ids = [sched.submit(WaitRequest(t, CRITERIA, 3600)).id for t in _files(root)]
    out = _window(seconds, lambda: sum(sched.status(i).checks for i in ids))
    sched.close()
    return out


def engine(root: Path, seconds: float, embedder: LocalEmbedder, *,
           activity: bool = False) -> dict[str, Any]:
    """The engine's runner: jobs in the SQLite store, the store sync every second."""
    extra = {"activity_processes": True, "activity_swap": True, "activity_disk": True} \
        if activity else {}
    mem = memoryd.open(f"sqlite:///{root / 'm.db'}", embedder=embedder,
                       wait_allowed_roots=[str(root)], wait_runner=f"bench-{root.name}", **extra)
    assert mem.waits.start()
    ids = [mem.waits.watch(t, CRITERIA, 3600).id for t in _files(root)]
    out = _window(seconds, lambda: sum(mem.waits.status(i).checks for i in ids))
    out["system_memories"] = len([m for m in mem.list(limit=1000)
                                  if (m.category or "").startswith("system.")])
    mem.close()
    return out


def run_all(root: Path, seconds: float, embedder: LocalEmbedder) -> dict[str, Any]:
    """The three configurations, one after the other."""
    configs = [("watcher layer alone (JSON file)", lambda d: bare(d, seconds)),
               ("engine runner (SQLite store, 1 s sync)", lambda d: engine(d, seconds, embedder)),
               ("engine runner + activity sources as memories",
                lambda d: engine(d, seconds, embedder, activity=True))]
    out = {}
    for n, (label, fn) in enumerate(configs):
        sub = root / f"idle{n}"
        sub.mkdir()
        print(f"  idle: {label} for {seconds:g} s", flush=True)
        out[label] = fn(sub)
    return out
