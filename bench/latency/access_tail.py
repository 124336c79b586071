"""What recording access costs the searches it runs beside: the latency tail, in one process.

    .venv/bin/python -m bench.latency.access_tail [--rounds 4] [--url sqlite:///...]

A search queues its hits; a background thread of the same process writes them in batches
(memoryd.engine.memory.access_writer), holding the interpreter while it computes. This bench
runs the peer bench's 150 agent queries (short, question, long) back to back, hybrid, with
access recorded (the default) and without (``record_access=False``), the order flipping
every round, in one process on one store: the difference is what the writer costs the
searches. It also times one batch as the writer writes it (``write_retrievals`` of 25
searches' hits). The store: ``--url``, or the peer bench's 5,000 memories written once
under bench/.cache/work/access_tail. Results: results/access_tail.{json,md}.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import datetime, timezone
from typing import Any

from bench.common import CACHE_DIR, machine_info, md_table, percentile, write_results
from bench.peer.memories import agent_memories, queries

VARIANTS = ("recorded", "not recorded")
STORE = CACHE_DIR / "work" / "access_tail" / "store-5000.db"


def store_url(given: str | None) -> str:
    """``given``, or the 5,000-memory store (written on first use)."""
    if given:
        return given
    import memoryd

    STORE.parent.mkdir(parents=True, exist_ok=True)
    url = f"sqlite:///{STORE}"
    with memoryd.open(url) as mem:
        if mem.store.count() < 5000:  # new, or a first write cut short: start again
            mem.close()
            for path in STORE.parent.glob(STORE.name + "*"):  # the file and its side files
                path.unlink()
    with memoryd.open(url) as mem:
        if mem.store.count() == 0:
            mem.add_many([{"content": m["content"], "node_type": m["type"], "tags": m["tags"]}
                          for m in agent_memories(5000)])
    return url


def searches(mem: Any, texts: list[str], record: bool) -> list[float]:
    """Milliseconds of each hybrid search, back to back."""
    out = []
    for text in texts:
        t0 = time.perf_counter()
        mem.search(text, 10, record_access=record)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def flush_ms(mem: Any, texts: list[str], repeats: int = 20) -> float:
    """Median ms of one writer batch: 25 searches' hits, as the writer writes them."""
    from memoryd.engine.memory.access_writer import Retrieval, write_retrievals

    now = datetime.now(timezone.utc)
    batch = [Retrieval(tuple(h.memory.id for h in mem.search(t, 10, record_access=False)),
                       None, now) for t in texts[:25]]
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        write_retrievals(mem.store, batch)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def render(r: dict[str, Any]) -> str:
    rows = [[v, r["latency"][v]["p50"], r["latency"][v]["p90"], r["latency"][v]["p95"]]
            for v in VARIANTS]
    return "\n".join([
        "# Access recording and the search tail, one process", "",
        f"Code: {r['what']}. "
        f"Run {r['started']} on {r['machine']['cpus']} CPUs, load average {r['load'][0]:.1f}-"
        f"{r['load'][1]:.1f}. Store `{r['url']}`, {r['queries']} queries back to back per "
        f"variant and round, {r['rounds']} rounds, the order flipping every round; "
        "percentiles over all rounds, ms.", "",
        md_table(["hybrid search", "p50", "p90", "p95"], rows), "",
        f"p95 recorded / not recorded: {r['p95_ratio']}. One writer batch (25 searches' "
        f"hits): {r['flush_ms']} ms.", ""])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.latency.access_tail", description=__doc__)
    p.add_argument("--url", default=None)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--name", default="access_tail")
    p.add_argument("--what", default="this checkout", help="which code ran (for the report)")
    args = p.parse_args(argv)
    import memoryd

    url = store_url(args.url)
    texts = queries(150)
    load0 = os.getloadavg()[0]
    times: dict[str, list[float]] = {v: [] for v in VARIANTS}
    with memoryd.open(url) as mem:
        mem.warm()
        searches(mem, texts[:10], False)
        for r in range(args.rounds):
            for v in (VARIANTS if r % 2 == 0 else VARIANTS[::-1]):
                times[v] += searches(mem, texts, v == "recorded")
        flush = flush_ms(mem, texts)
    latency = {v: {q: round(percentile(t, pct), 2) for q, pct in
                   (("p50", 50), ("p90", 90), ("p95", 95))} for v, t in times.items()}
    result = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "machine": machine_info(), "url": url, "rounds": args.rounds,
              "queries": len(texts), "latency": latency, "what": args.what,
              "p95_ratio": round(latency["recorded"]["p95"] / latency["not recorded"]["p95"], 3),
              "flush_ms": round(flush, 2), "load": [load0, os.getloadavg()[0]]}
    _, md = write_results(args.name, result, render(result))
    print(md.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
