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


def _timed(fn: Any) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def run(root: Path, embedder: LocalEmbedder, messages: int) -> dict[str, Any]:
    """Update latency with summaries every 5 vs never (calls interleaved, so the machine's
    load falls on both alike), task_get and on-demand summary latency."""
    variants = {"summary every 5 messages": 5, "no summary": 1000}
    mems = {label: memoryd.open(f"sqlite:///{root / f'{every}.db'}", embedder=embedder,
                                task_summary_every=every) for label, every in variants.items()}
    tasks = {label: mem.tasks.register("Backfill the events table",
                                       [f"batch {i}" for i in range(20)])
             for label, mem in mems.items()}
    samples: dict[str, list[float]] = {label: [] for label in variants}
    for i in range(messages):
        text = f"{PHRASES[i % len(PHRASES)]} (#{i})"
        for label, mem in mems.items():
            samples[label].append(_timed(lambda: mem.tasks.update(tasks[label].id, message=text)))
    out: dict[str, Any] = {"messages": messages}
    for label in variants:
        out[label] = {"task_update": summarize(samples[label])}
    label = "summary every 5 messages"
    mem, task_id = mems[label], tasks[label].id
    out[label]["task_get"] = summarize([_timed(lambda: mem.tasks.get(task_id))
                                        for _ in range(50)])
    refreshes = []
    for _ in range(30):
        mem.tasks.update(task_id, message="one more message")
        refreshes.append(_timed(lambda: mem.tasks.get(task_id, refresh=True)))
    out[label]["task_get_refresh"] = summarize(refreshes)
    summary = mem.tasks.get(task_id).summary
    out["summary_example"] = summary.content if summary else ""
    for mem in mems.values():
        mem.close()
    with_s, without = (out[v]["task_update"]["mean_ms"] for v in variants)
    out["ratio_update_mean_summary_over_none"] = round(with_s / max(1e-9, without), 2)
    return out
