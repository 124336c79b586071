"""What recording access costs the searches it runs beside: the latency tail, per version.

    .venv/bin/python -m bench.latency.access_tail [--previous-ref REF] [--rounds 4]

A search queues its hits; a background thread of the same process writes them in batches
(memoryd.engine.memory.access_writer), holding the interpreter while it computes. This bench
starts one worker process per version (this checkout; with ``--previous-ref``, also that git
ref, exported), each with the same store open, and has each run three patterns of hybrid
searches, with access recorded (the default) and without (``record_access=False``):

* ``burst``: the peer bench's 150 agent queries (short, question, long) back to back, as
  the peer bench runs them;
* ``stream``: those queries four times over, back to back (600 searches, several seconds:
  longer than a writer may wait for a pause, so batches are written while searches run);
* ``paced``: 60 of them with a 100 ms pause after each, as an agent's searches come.

Each worker runs a whole pattern in its own process, then waits until what it queued is
written, before the next worker starts: the versions never run side by side. The order of
versions and variants flips every round. It also times one batch as each version's writer
writes it (``write_retrievals`` of 25 searches' hits), with retrievals that only count
(repeats in their session) and with retrievals that strengthen. The store: ``--url``, or
the peer bench's 5,000 memories written once under bench/.cache/work/access_tail. Results:
results/<name>.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import CACHE_DIR, machine_info, md_table, percentile, write_results
from bench.peer.memories import agent_memories, queries

REPO_ROOT = Path(__file__).resolve().parents[2]
STORE = CACHE_DIR / "work" / "access_tail" / "store-5000.db"
VARIANTS = ("recorded", "not recorded")
PATTERNS = {"burst": (1, 0.0, None), "stream": (4, 0.0, None), "paced": (1, 0.1, 60)}
WORKER = """
import json, statistics, sys, time
from datetime import datetime, timedelta, timezone
import memoryd
from memoryd.engine.memory.access_writer import Retrieval, write_retrievals
url, texts = sys.argv[1], json.load(open(sys.argv[2]))
with memoryd.open(url) as mem:
    mem.warm()
    for t in texts[:10]:
        mem.search(t, 10, record_access=False)
    print("ready", flush=True)
    for line in sys.stdin:
        what = json.loads(line)
        if what["do"] == "batch":  # one writer batch of 25 searches' hits, 20 times
            now = datetime.now(timezone.utc)
            ids = [tuple(h.memory.id for h in mem.search(t, 10, record_access=False))
                   for t in texts[:25]]
            ms = {"counts only": [], "strengthens": []}
            for n in range(40):
                kind = "strengthens" if n % 2 else "counts only"
                # 31 minutes on, every retrieval is a new anonymous session: it strengthens
                at = now + timedelta(minutes=31 * n) if n % 2 else now
                batch = [Retrieval(i, None, at) for i in ids]
                t0 = time.perf_counter()
                write_retrievals(mem.store, batch)
                ms[kind].append((time.perf_counter() - t0) * 1000)
            print(json.dumps({k: statistics.median(v) for k, v in ms.items()}), flush=True)
            continue
        ms = []
        for text in texts[: what["count"]] * what["repeat"]:
            t0 = time.perf_counter()
            mem.search(text, 10, record_access=what["record"])
            ms.append((time.perf_counter() - t0) * 1000)
            if what["pause"]:
                time.sleep(what["pause"])
        mem.settle()  # written before the other version runs
        print(json.dumps(ms), flush=True)
"""


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


class Worker:
    """One version's worker process, with the store open and the model loaded."""

    def __init__(self, src: Path, url: str, texts_file: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(src)}
        self.proc = subprocess.Popen([sys.executable, "-c", WORKER, url, texts_file], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        if self._ask(None) != "ready":
            raise RuntimeError(f"the worker for {src} did not start")

    def _ask(self, what: dict[str, Any] | None) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        if what is not None:
            self.proc.stdin.write(json.dumps(what) + "\n")
            self.proc.stdin.flush()
        line = self.proc.stdout.readline().strip()
        return line if what is None else json.loads(line)

    def run(self, pattern: str, record: bool) -> list[float]:
        """Milliseconds of each search of ``pattern``."""
        repeat, pause, count = PATTERNS[pattern]
        return self._ask({"do": "search", "repeat": repeat, "pause": pause,
                          "count": count, "record": record})

    def batch_ms(self) -> dict[str, float]:
        """Median ms of one writer batch (25 searches' hits) whose retrievals only count,
        and of one whose retrievals strengthen."""
        return self._ask({"do": "batch"})

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=120)


def summary(ms: list[float]) -> dict[str, float]:
    return {q: round(percentile(ms, pct), 2) for q, pct in
            (("p50", 50), ("p90", 90), ("p95", 95), ("p99", 99))} | {"n": len(ms)}


def render(r: dict[str, Any]) -> str:
    rows = [[pattern, version, variant, *(cell[q] for q in ("p50", "p90", "p95", "p99"))]
            for pattern, by_version in r["latency"].items()
            for version, by_variant in by_version.items()
            for variant, cell in by_variant.items()]
    ratios = [[pattern, version, ratio] for pattern, by_version in r["p95_ratio"].items()
              for version, ratio in by_version.items()]
    lines = [
        "# Access recording and the search tail", "",
        f"Code: {r['what']}. Run {r['started']} on {r['machine']['cpus']} CPUs, load average "
        f"{r['load'][0]:.1f}-{r['load'][1]:.1f}. Store `{r['url']}`, {r['rounds']} rounds, the "
        "order of versions and variants flipping every round; percentiles over all rounds, ms. "
        "burst: 150 queries back to back; stream: 600 back to back; paced: 60 with a 100 ms "
        "pause after each.", "",
        md_table(["pattern", "version", "hybrid search", "p50", "p90", "p95", "p99"], rows), "",
        md_table(["pattern", "version", "p95 recorded / not recorded"], ratios), ""]
    if "this_over_previous" in r:
        lines += [md_table(["pattern", "p95 recorded, this / previous"],
                           [[p, v] for p, v in r["this_over_previous"].items()]), ""]
    lines += ["One writer batch (25 searches' hits, median of 20), ms:", "",
              md_table(["version", "retrievals only count", "retrievals strengthen"],
                       [[v, b["counts only"], b["strengthens"]]
                        for v, b in r["batch_ms"].items()]), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.latency.access_tail", description=__doc__)
    p.add_argument("--url", default=None)
    p.add_argument("--previous-ref", default=None, help="a git ref to compare with")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--patterns", default=",".join(PATTERNS))
    p.add_argument("--name", default="access_tail")
    p.add_argument("--what", default="this checkout", help="which code ran (for the report)")
    args = p.parse_args(argv)
    from bench.latency.ingest_versions import export_ref

    url = store_url(args.url)
    patterns = args.patterns.split(",")
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(queries(150), f)
    sources = {"this": REPO_ROOT / "src"}
    if args.previous_ref:
        sources["previous"] = export_ref(args.previous_ref)
    load0 = os.getloadavg()[0]
    workers = {v: Worker(src, url, f.name) for v, src in sources.items()}
    times: dict[str, dict[str, dict[str, list[float]]]] = {
        p_: {v: {k: [] for k in VARIANTS} for v in workers} for p_ in patterns}
    try:
        for r in range(args.rounds):
            for pattern in patterns:
                runs = [(v, k) for v in workers for k in VARIANTS]
                for version, variant in (runs if r % 2 == 0 else runs[::-1]):
                    times[pattern][version][variant] += workers[version].run(
                        pattern, variant == "recorded")
        batch = {v: {k: round(ms, 2) for k, ms in w.batch_ms().items()}
                 for v, w in workers.items()}
    finally:
        for w in workers.values():
            w.close()
        os.unlink(f.name)
    latency = {p_: {v: {k: summary(ms) for k, ms in by.items()} for v, by in tv.items()}
               for p_, tv in times.items()}
    result: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": machine_info(), "url": url, "rounds": args.rounds, "what": args.what,
        "previous_ref": args.previous_ref, "latency": latency, "batch_ms": batch,
        "load": [load0, os.getloadavg()[0]],
        "p95_ratio": {p_: {v: round(lat[v]["recorded"]["p95"] / lat[v]["not recorded"]["p95"], 3)
                           for v in lat} for p_, lat in latency.items()}}
    if args.previous_ref:
        result["this_over_previous"] = {
            p_: round(lat["this"]["recorded"]["p95"] / lat["previous"]["recorded"]["p95"], 3)
            for p_, lat in latency.items()}
    _, md = write_results(args.name, result, render(result))
    print(md.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
