"""Task memory costs: recording a message (with the running summary refreshed every 5
messages, the default, against never), answering task_get on a long task, and one
extractive distillation; medians of real calls on an SQLite store."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import memoryd
from bench.common import summarize
from memoryd.embed import LocalEmbedder

PHRASES = ["Decided to keep the old schema for now", "Build blocked: the runner is out of disk",
           "Cleaned the runner, the build passes", "Reading the migration guide",
           "Chose to batch the backfill by 10k rows", "Backfill of batch 3 failed: timeout"]


def _updates(mem: memoryd.Engine, task_id: str, n: int) -> list[float]:
    samples = []
    for i in range(n):
        t0 = time.perf_counter()
        mem.update_task(task_id, message=f"{PHRASES[i % len(PHRASES)]} (#{i})")
        samples.append((time.perf_counter() - t0) * 1000)
    return samples


def run(root: Path, embedder: LocalEmbedder, messages: int) -> dict[str, Any]:
    """Update latency with summaries every 5 vs never, task_get and refresh latency."""
    out: dict[str, Any] = {"messages": messages}
    for label, every in (("summary every 5 messages", 5), ("no summary", 1000)):
        mem = memoryd.open(f"sqlite:///{root / f'{every}.db'}", embedder=embedder,
                           task_summary_every=every)
        task = mem.register_task("Backfill the events table", [f"batch {i}" for i in range(20)])
        out[label] = {"task_update": summarize(_updates(mem, task.id, messages))}
        if every == 5:
            gets, refreshes = [], []
            for _ in range(50):
                t0 = time.perf_counter()
                mem.get_task(task.id)
                gets.append((time.perf_counter() - t0) * 1000)
            for _ in range(30):
                mem.update_task(task.id, message="one more message")
                t0 = time.perf_counter()
                mem.get_task(task.id, refresh=True)
                refreshes.append((time.perf_counter() - t0) * 1000)
            out[label]["task_get"] = summarize(gets)
            out[label]["task_get_refresh"] = summarize(refreshes)
            summary = mem.get_task(task.id).summary
            out["summary_example"] = summary.content if summary else ""
        mem.close()
    with_s = out["summary every 5 messages"]["task_update"]["p50_ms"]
    without = out["no summary"]["task_update"]["p50_ms"]
    out["ratio_update_p50_summary_over_none"] = round(with_s / max(1e-9, without), 2)
    return out
