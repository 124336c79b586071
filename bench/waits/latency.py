"""Detection latency: how long after the text appears does its wait resolve?

All waits run at once in ONE scheduler at the default polling ladders (file, tmux pane,
pty), each with its own target; the text appears after a delay spread over 1..max s, so
some waits have gone "long static" (slowest text polling, 1 s) before it shows. Each
printed line carries the wall-clock time it was written (``READY <epoch>``), so the
latency is ``resolved_at - that time``, measured by the same clock.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.waits.env import Tmux, scheduler
from memoryd.waits import WaitRequest, WaitStatus

CRITERIA = r"/READY [0-9]+\.[0-9]+/"

WRITER = """
import sys, time
t0, plan = float(sys.argv[1]), eval(sys.argv[2])
for at, path in sorted(plan):
    time.sleep(max(0.0, t0 + at - time.time()))
    with open(path, "a") as f:
        f.write(f"READY {time.time():.6f}\\n")
"""


def delays(n: int, longest: float) -> list[float]:
    """n delays spread evenly over [1, longest] seconds."""
    return [round(1 + i * (longest - 1) / max(1, n - 1), 2) for i in range(n)]


def run(root: Path, n: int, longest: float, with_tmux: bool) -> dict[str, Any]:
    """Latency samples (ms) per target kind."""
    tmux = Tmux(root) if with_tmux else None
    sched = scheduler(root, tmux=tmux)
    plan = delays(n, longest)
    jobs: dict[str, list[str]] = {"file": [], "tmux": [], "pty": []}
    files = []
    for i, d in enumerate(plan):
        path = root / f"f{i}.log"
        path.write_text("starting\n")
        files.append((d, str(path)))
        jobs["file"].append(sched.submit(WaitRequest(f"file:{path}", CRITERIA, longest + 60)).id)
        cmd = f"sleep {d}; echo READY $(date +%s.%N); sleep 120"
        jobs["pty"].append(sched.submit(WaitRequest(f"pty:sh -c '{cmd}'", CRITERIA, longest + 60)).id)
        if tmux is not None:
            pane = tmux.new_window(i)
            jobs["tmux"].append(sched.submit(WaitRequest(f"tmux:{pane}", CRITERIA, longest + 60)).id)
            tmux.type(pane, f"sleep {d}; echo READY $(date +%s.%N)")
    t0 = time.time()
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(t0), repr(files)])
    out: dict[str, Any] = {"delays_s": plan}
    for kind, ids in jobs.items():
        samples, failed = [], 0
        for job_id in ids:
            job = sched.status(job_id, block_s=longest + 30)
            if job.status is WaitStatus.RESOLVED:
                written = float((job.result or "").split()[-1])
                samples.append((job.resolved_at - written) * 1000.0)
            else:
                failed += 1
        out[kind] = {"samples_ms": [round(s, 1) for s in samples], "unresolved": failed}
    writer.wait()
    for job in sched.list(status="watching"):
        sched.cancel(job.id)
    sched.close()
    if tmux is not None:
        tmux.close()
    return out
