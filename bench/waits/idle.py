"""CPU cost of idle waits: 20 waits that never resolve, watched for a fixed time.

The cost is this process's CPU time (every thread: the scheduler loop, the judge, the
wake worker) plus the CPU of the children it started and reaped, over the window,
as a percentage of one core. Waits whose text never comes are the worst idle case:
nothing resolves, everything keeps polling.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

from bench.waits.env import Tmux, Xvfb, http_server, scheduler
from memoryd.waits import (
    LADDERS,
    FrameJudge,
    PollingLadder,
    WaitPolicy,
    WaitRequest,
    WatcherKit,
)
from memoryd.waits.activity import ActivityMonitor, ActivitySettings

FIXED_FAST = PollingLadder(changed=0.25, static=0.25, partial=0.25, long_static=0.25,
                           long_static_after=1e9)


def _cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _mixed_targets(root: Path, tmux: Tmux | None, xvfb: Xvfb | None, url: str,
                   sleepers: list[subprocess.Popen[bytes]]) -> list[str]:
    targets = []
    for i in range(6):
        (root / f"idle{i}.log").write_text("")
        targets.append(f"file:{root / f'idle{i}.log'}")
    for i in range(6):
        targets.append(f"tmux:{tmux.new_window(i)}" if tmux else f"file:{root / f'idle{i}.log'}")
    targets += ["pty:sh -c 'sleep 600'"] * 3
    for _ in range(2):
        sleepers.append(subprocess.Popen(["sleep", "600"]))
        targets.append(f"pid:{sleepers[-1].pid}")
    targets += [f"{url}/health"] * 2
    if xvfb is not None:
        xvfb.xterm("IdleTerm", "echo idle; sleep 600")
        targets.append("window:IdleTerm")
    else:
        targets.append(f"file:{root / 'idle0.log'}")
    return targets


def _criteria(target: str) -> Any:
    if target.startswith(("pid:", "command:")):
        return "exit"
    if target.startswith("http"):
        return {"status": 200, "contains": "never-there"}
    return "NEVER_PRINTED_TEXT"


def measure(root: Path, mix: str, seconds: float, *, ladders: dict | None = None,
            activity: bool = False, with_tmux: bool = True, with_x: bool = True) -> dict[str, Any]:
    """CPU % of one core used by 20 idle waits (and optional activity sources)."""
    tmux = Tmux(root) if with_tmux and mix == "mixed" else None
    xvfb = Xvfb() if with_x and mix == "mixed" else None
    url, stop_http = http_server(lambda method, body: (200, {"status": "starting"}))
    sleepers: list[subprocess.Popen[bytes]] = []
    policy = WaitPolicy(allowed_roots=(root,), allow_spawn=True,
                        display=xvfb.display if xvfb else None,
                        tmux_socket=tmux.socket if tmux else None,
                        ladders=ladders or dict(LADDERS))
    sched = scheduler(root, tmux, policy=policy,
                      kit=WatcherKit(policy, tmux=tmux.client if tmux else None),
                      judge=FrameJudge() if xvfb else None)
    if mix == "mixed":
        targets = _mixed_targets(root, tmux, xvfb, url, sleepers)
    else:
        targets = []
        for i in range(20):
            (root / f"only{i}.log").write_text("")
            targets.append(f"file:{root / f'only{i}.log'}")
    ids = [sched.submit(WaitRequest(t, _criteria(t), 3600)).id for t in targets]
    monitor = None
    if activity:
        monitor = ActivityMonitor(ActivitySettings(processes=True, swap=True, disk=True),
                                  sink=lambda event: None)
        monitor.attach(sched)
    time.sleep(3.0)  # past start-up: first checks, pipes, first frame
    cpu0, wall0 = _cpu_seconds(), time.monotonic()
    checks0 = sum(sched.status(i).checks for i in ids)
    time.sleep(seconds)
    cpu, wall = _cpu_seconds() - cpu0, time.monotonic() - wall0
    checks = sum(sched.status(i).checks for i in ids) - checks0
    kinds: dict[str, int] = {}
    for t in targets:
        kind = t.split(":", 1)[0] if not t.startswith("http") else "http"
        kinds[kind] = kinds.get(kind, 0) + 1
    for i in ids:
        sched.cancel(i)
    sched.close()
    stop_http()
    for s in sleepers:
        s.kill()
        s.wait()
    for thing in (tmux, xvfb):
        if thing is not None:
            thing.close()
    return {"mix": mix, "waits": len(ids), "kinds": kinds, "seconds": round(wall, 2),
            "cpu_s": round(cpu, 3), "cpu_percent_of_one_core": round(100 * cpu / wall, 3),
            "checks": checks, "checks_per_s": round(checks / wall, 1),
            "activity_polls": monitor.polls if monitor else 0}


def run_all(root: Path, seconds: float, with_tmux: bool, with_x: bool) -> dict[str, Any]:
    """The idle configurations measured in one run."""
    out = {}
    configs = [("file", "20 file waits", {}),
               ("mixed", "20 mixed waits (adaptive polling, the default)", {}),
               ("mixed", "20 mixed waits, fixed 0.25 s polling",
                {"ladders": {k: FIXED_FAST for k in LADDERS}}),
               ("mixed", "20 mixed waits + activity sources (processes, swap, disk; 10 s)",
                {"activity": True})]
    for n, (mix, label, extra) in enumerate(configs):
        sub = root / f"idle{n}"
        sub.mkdir()
        print(f"  idle: {label} for {seconds:g} s", flush=True)
        out[label] = measure(sub, mix, seconds, with_tmux=with_tmux, with_x=with_x, **extra)
    return out


