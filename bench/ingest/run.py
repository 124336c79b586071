"""Smart ingest against add_many: does writing through the gate cost recall?

    .venv/bin/python -m bench.ingest                  # BEAM and REALTALK; results/ingest.{json,md}
    .venv/bin/python -m bench.ingest --sets realtalk  # one data set
    .venv/bin/python -m bench.ingest --quick          # the first two chats of each set
    .venv/bin/python -m bench.ingest --render-only --compare OLD.json  # add an earlier run

``--compare OLD.json`` shows an earlier run's smart-ingest rows (for example one made with
an earlier gate: ``PYTHONPATH=<old checkout>/src:. python -m bench.ingest --name old``) beside
this one's; ``--render-only`` rewrites the markdown from ``results/NAME.json``.

Every chat (BEAM: 20 conversations, REALTALK: 6 chats; :mod:`bench.ingest.data`) is written
twice into fresh SQLite stores: once with ``Engine.add_many`` (one memory per message) and
once through smart ingest, ``Engine.ingest_many`` in batches of 50 in conversation order
(how an agent writes over MCP). Every question with evidence is asked of both stores with
``Engine.search(question, 10, record_access=False)`` (the clock one day after the chat's last
message), and hit@1/5/10, recall@10 and MRR are scored over the evidence messages.

A memory stands for the messages it holds: its own, and those smart ingest folded into it.
Two readings: ``strict`` counts a message as held only when its text is in the memory
(UPDATE and MERGE append it; a REINFORCED message's text is not stored), ``lenient`` also
counts reinforced messages (the gate's claim is that they added nothing). A superseded
memory is not searched: its message is lost to default search.

Vectors come from the recall bench's cache (``bench/.cache/recall``; the first run embeds
~10k texts, 20-40 min on this machine); texts the gate writes anew (an UPDATE's merged text)
are embedded by the real model.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

from bench.ingest.data import DATA_SETS, Chat, load
from bench.ingest.report import markdown
from bench.ingest.vectors import vector_table
from bench.recall.embedding import PrecomputedEmbedder, VectorTable
from bench.recall.metrics import question_metrics

REPO_ROOT = Path(__file__).resolve().parents[2]
RESULTS = REPO_ROOT / "bench" / "results"
WORKDIR = REPO_ROOT / "bench" / ".cache" / "ingest"
MODES = ("add_many", "ingest")
BATCH = 50
LIMIT = 10
MAX_CONTENT_BYTES = 1 << 20  # one BEAM message is 341 KiB; memoryd's default limit is 64 KiB
METRICS = ("hit@1", "hit@5", "hit@10", "recall@10", "mrr")


def _url(name: str) -> str:
    WORKDIR.mkdir(parents=True, exist_ok=True)
    path = WORKDIR / f"{name}.db"
    for suffix in ("", "-wal", "-shm", ".hnsw.usearch", ".hnsw.json"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    return f"sqlite:///{path.resolve()}"


def write(mem: Any, chat: Chat, mode: str) -> dict[str, Any]:
    """Write the chat; for smart ingest, each decision and where each message went."""
    out: dict[str, Any] = {"decisions": Counter(), "folded": {}, "merged": {}, "reasons": []}
    if mode == "add_many":
        mem.add_many(chat.items, allow_secrets=True)  # coding chats hold example secrets
        return out
    for start in range(0, len(chat.items), BATCH):
        batch = chat.items[start:start + BATCH]
        for item, result in zip(batch, mem.ingest_many(batch, allow_secrets=True)):
            out["decisions"][result.decision] += 1
            if result.memory_id != item["id"]:
                out["folded"][item["id"]] = (result.memory_id, result.decision)
            for merged in result.merged_ids:
                out["merged"][merged] = result.memory_id
            if result.decision != "create":
                out["reasons"].append({"id": item["id"], "decision": result.decision,
                                       "reason": result.reason,
                                       "target": result.superseded_id or result.memory_id})
    return out


def holders(chat: Chat, written: dict[str, Any], strict: bool) -> dict[str, list[str]]:
    """Memory id -> the message ids it stands for."""
    def final(mid: str) -> str:
        seen = set()
        while mid in written["merged"] and mid not in seen:
            seen.add(mid)
            mid = written["merged"][mid]
        return mid

    held: dict[str, list[str]] = {}
    for item in chat.items:
        mid = item["id"]
        if mid in written["folded"]:
            target, decision = written["folded"][mid]
            if strict and decision == "reinforce":
                continue
            mid = target
        held.setdefault(final(mid), []).append(item["id"])
    return held


def score(ranked: list[str], evidence: tuple[str, ...]) -> dict[str, float]:
    """hit@1/5/10, recall@10 and reciprocal rank of one question."""
    m = question_metrics(ranked, list(evidence))
    gold = set(evidence)
    rank = next((i for i, r in enumerate(ranked, 1) if r in gold), None)
    return {"hit@1": m["hit@1"], "hit@5": m["hit@5"], "hit@10": m["hit@10"],
            "recall@10": m["recall@10"], "mrr": 1.0 / rank if rank else 0.0}


def run_chat(chat: Chat, mode: str, table: VectorTable) -> dict[str, Any]:
    """Write one chat one way and ask its questions."""
    import memoryd

    now = chat.last_write + timedelta(days=1)
    mem = memoryd.open(_url(f"{chat.data_set}-{chat.number}-{mode}"),
                       embedder=PrecomputedEmbedder(table), clock=lambda: now,
                       max_content_bytes=MAX_CONTENT_BYTES)
    try:
        started = time.perf_counter()
        written = write(mem, chat, mode)
        build_s = time.perf_counter() - started
        # Superseded memories (and those a merge folded away) are not searched.
        visible = mem.store.count() - written["decisions"].get("supersede", 0) \
            - len(written["merged"])
        readings = {"strict": holders(chat, written, True),
                    "lenient": holders(chat, written, False)}
        rows: dict[str, list[dict[str, Any]]] = {r: [] for r in readings}
        for q in chat.questions:
            ids = [h.memory.id for h in mem.search(q.text, LIMIT, record_access=False)]
            for reading, held in readings.items():
                ranked = list(dict.fromkeys(m for mid in ids for m in held.get(mid, [])))
                rows[reading].append({"ability": q.ability, **score(ranked, q.evidence)})
    finally:
        mem.close()
    own = sum(1 for item in chat.items if item["id"] not in written["folded"])
    superseded = written["decisions"].get("supersede", 0)
    return {"rows": rows, "build_s": build_s, "decisions": dict(written["decisions"]),
            "memories": visible, "messages": len(chat.items), "own": own,
            "superseded": superseded, "reasons": written["reasons"]}


def _mean(rows: list[dict[str, Any]]) -> dict[str, float]:
    return {m: round(statistics.fmean(r[m] for r in rows), 4) if rows else 0.0 for m in METRICS}


def summarise(data_set: str, runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Per data set: metrics of each way of writing, the decisions, what stayed searchable."""
    out: dict[str, Any] = {"chats": len(runs["add_many"]),
                           "questions": sum(len(r["rows"]["strict"]) for r in runs["add_many"])}
    for mode in MODES:
        for reading in ("strict", "lenient"):
            rows = [row for r in runs[mode] for row in r["rows"][reading]]
            out[f"{mode}/{reading}"] = _mean(rows)
            abilities = sorted({row["ability"] for row in rows})
            out[f"{mode}/{reading}/abilities"] = {
                a: {"n": sum(row["ability"] == a for row in rows),
                    **_mean([row for row in rows if row["ability"] == a])} for a in abilities}
    ingest = runs["ingest"]
    decisions: Counter[str] = Counter()
    for r in ingest:
        decisions.update(r["decisions"])
    messages = sum(r["messages"] for r in ingest)
    out["decisions"] = dict(sorted(decisions.items()))
    out["messages"] = messages
    out["own_share"] = round(sum(r["own"] for r in ingest) / messages, 4)
    out["superseded_share"] = round(sum(r["superseded"] for r in ingest) / messages, 4)
    out["memories"] = {mode: sum(r["memories"] for r in runs[mode]) for mode in MODES}
    out["build_s"] = {mode: round(sum(r["build_s"] for r in runs[mode]), 1) for mode in MODES}
    out["delta_hit@5"] = {reading: round(out[f"ingest/{reading}"]["hit@5"]
                                         - out[f"add_many/{reading}"]["hit@5"], 4)
                          for reading in ("strict", "lenient")}
    out["examples"] = [x for r in ingest for x in r["reasons"]][:40]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.ingest",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default=",".join(DATA_SETS), help="comma-separated data sets")
    ap.add_argument("--quick", action="store_true", help="the first two chats of each set")
    ap.add_argument("--name", default="ingest", help="results file name (bench/results/NAME.*)")
    ap.add_argument("--compare", type=Path, help="an earlier run's JSON to show beside this one")
    ap.add_argument("--render-only", action="store_true", help="rewrite the markdown from the JSON")
    args = ap.parse_args(argv)
    if args.render_only:
        report = json.loads((RESULTS / f"{args.name}.json").read_text())
        _add_comparison(report, args.compare)
        (RESULTS / f"{args.name}.json").write_text(json.dumps(report, indent=2) + "\n")
        (RESULTS / f"{args.name}.md").write_text(markdown(report))
        return 0
    started = time.time()
    chats = {s: load(s) for s in args.sets.split(",") if s}
    chats = {s: (c[:2] if args.quick else c) for s, c in chats.items() if c}
    if not chats:
        print("no data: BEAM and REALTALK are absent (see bench/ingest/data.py); nothing to do")
        return 0
    table = vector_table([c for cs in chats.values() for c in cs], print)
    report: dict[str, Any] = {"sets": {}, "quick": args.quick}
    for data_set, convs in chats.items():
        runs: dict[str, list[dict[str, Any]]] = {m: [] for m in MODES}
        for chat in convs:
            for mode in MODES:
                runs[mode].append(run_chat(chat, mode, table))
            print(f"{data_set} {chat.number}: ingest {runs['ingest'][-1]['decisions']}", flush=True)
        report["sets"][data_set] = summarise(data_set, runs)
    report["run_s"] = round(time.time() - started)
    _add_comparison(report, args.compare)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(report, indent=2) + "\n")
    (RESULTS / f"{args.name}.md").write_text(markdown(report))
    print(markdown(report))
    return 0


def _add_comparison(report: dict[str, Any], path: Path | None) -> None:
    """Copy an earlier run's smart-ingest results of the same sets into ``report``."""
    if path is None:
        return
    earlier = json.loads(path.read_text())
    for name, s in report["sets"].items():
        old = earlier.get("sets", {}).get(name)
        if old:
            keys = ("ingest/strict", "ingest/lenient", "add_many/strict", "decisions",
                    "own_share", "superseded_share")
            s["earlier"] = {k: old[k] for k in keys}
