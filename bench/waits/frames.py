"""The diff gate on a real xterm: how many pixels and tiles a few new lines change, and
how many frames reach the vision step with the gate on and off.

Calibration: an 80x24 xterm (484x316 px, the fixed 6x13 font) is fed lines through a
FIFO; after each batch the window is grabbed and diffed against the frame before it.

Gate on vs off: one xterm plays a scripted build (bursts of 1-6 lines at uneven times,
then a long quiet stretch) while two schedulers, one with the gate and one without,
each watch it for a condition that never holds; a local chat-completions server answers
NO at once. Both see the same screen at the same time, at the default screen ladder.
"""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path
from typing import Any

from bench.waits.env import Xvfb, http_server, scheduler
from memoryd.waits import FrameJudge, GateParams, VisionClient, VisionConfig, WaitPolicy
from memoryd.waits import WaitRequest, WatcherKit
from memoryd.waits.capture import ScreenGrabber, window_region
from memoryd.waits.diffgate import diff_frames, fixed_fraction_gate, gate_opens
from memoryd.waits.ocr import ocr_lines


def calibrate(xvfb: Xvfb, root: Path) -> dict[str, Any]:
    """Pixel share and tiles changed by 1, 2, 3 and 6 new lines, and capture/OCR cost."""
    fifo = root / "feed"
    os.mkfifo(fifo)
    wid = xvfb.xterm("Calibrate", f"echo ready; cat {fifo}; sleep 600")
    grabber = ScreenGrabber(xvfb.display)
    region = window_region(wid, xvfb.display)
    time.sleep(1.0)
    prev = grabber.grab(region)
    rows = [{"new_lines": 0, **_diff_row(prev, grabber.grab(region))}]
    with open(fifo, "w") as feed:
        for n in (1, 2, 3, 6):
            for i in range(n):
                feed.write(f"[{n}.{i}] compiling src/module_{i}.c -> build/module_{i}.o\n")
            feed.flush()
            time.sleep(0.6)
            cur = grabber.grab(region)
            rows.append({"new_lines": n, **_diff_row(prev, cur)})
            prev = cur
        grab_ms = _median_ms(lambda: grabber.grab(region), 20)
        ocr_ms = _median_ms(lambda: ocr_lines(prev), 3)
    grabber.close()
    return {"window_px": [region.width, region.height], "rows": rows,
            "grab_ms_median": grab_ms, "ocr_ms_median": ocr_ms,
            "gate": GateParams().__dict__}


def _diff_row(a: Any, b: Any) -> dict[str, Any]:
    d = diff_frames(a, b)
    return {"pixel_percent": round(100 * d.pixel_fraction, 3), "changed_tiles": d.changed_tiles,
            "total_tiles": d.total_tiles, "tile_gate_opens": gate_opens(d),
            "fixed_1pct_gate_opens": fixed_fraction_gate(d, 0.01)}


def _median_ms(fn: Any, n: int) -> float:
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000)
    return round(sorted(samples)[len(samples) // 2], 2)


def build_script(seed: int, bursts: int, quiet_s: float) -> tuple[str, list[tuple[float, int]]]:
    """A shell script printing bursts of lines at uneven times; (script, [(at, lines)])."""
    rng = random.Random(seed)
    parts, plan, at = ["echo build starting"], [], 0.0
    for b in range(bursts):
        gap, lines = rng.uniform(1.5, 8.0), rng.randint(1, 6)
        at += gap
        plan.append((round(at, 2), lines))
        parts.append(f"sleep {gap:.2f}")
        parts += [f"echo '[{b}.{i}] compiling unit_{b}_{i}.c'" for i in range(lines)]
    parts += [f"sleep {quiet_s}", "sleep 600"]
    return "; ".join(parts), plan


def gate_on_off(xvfb: Xvfb, root: Path, seed: int, bursts: int, quiet_s: float) -> dict[str, Any]:
    """Frames captured vs frames sent to the vision step, gate on and off, same screen."""
    calls: list[int] = []

    def respond(method: str, body: bytes) -> tuple[int, Any]:
        n = sum(1 for p in json.loads(body)["messages"][1]["content"] if p["type"] == "image_url")
        calls.append(n)
        text = "\n".join(f"{i}: NO - not yet" for i in range(1, n + 1))
        return 200, {"choices": [{"message": {"role": "assistant", "content": text}}]}

    url, stop = http_server(respond)
    script, plan = build_script(seed, bursts, quiet_s)
    xvfb.xterm("Build", script)
    out: dict[str, Any] = {"bursts": plan}
    scheds, jobs = {}, {}
    for variant, use_gate in (("gate_on", True), ("gate_off", False)):
        policy = WaitPolicy(allowed_roots=(root,), display=xvfb.display, vision=True)
        judge = FrameJudge(VisionClient(VisionConfig(base_url=url, model="minicpm-v")))
        scheds[variant] = scheduler(root, policy=policy, judge=judge,
                                    kit=WatcherKit(policy, use_gate=use_gate))
        jobs[variant] = scheds[variant].submit(WaitRequest(
            "window:Build", {"condition": "the build has failed"}, 3600)).id
    duration = plan[-1][0] + quiet_s
    time.sleep(duration)
    for variant, sched in scheds.items():
        live = sched._live[jobs[variant]].watcher
        stats = sched.judge.stats
        out[variant] = {"captured": live.captured, "passed_gate": live.passed,
                        "vision_frames": stats.vision_frames, "vision_calls": stats.vision_calls}
        sched.cancel(jobs[variant])
        sched.close()
    stop()
    out["seconds"] = round(duration, 1)
    return out
