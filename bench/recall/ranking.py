"""Ranking bench on BEAM: keyword BM25 variants, vector contexts, RRF, relevance fusion,
calibration, the cognitive layer and query time expressions.

    .venv/bin/python -m bench.recall.ranking            # full run, writes results/recall.{json,md}
    .venv/bin/python -m bench.recall.ranking --refit    # also print fitted relevance constants
    .venv/bin/python -m bench.recall.ranking --quick    # 4 conversations, results/recall_quick.*
    .venv/bin/python -m bench.recall.ranking --engine sqlite   # Engine.search on SQLite only

Every message of a conversation is one memory; every query is ranked against its
conversation. Term statistics come from memoryd's own tokenizer (memoryd.retrieval.tokens),
BM25 and the relevance model from memoryd.retrieval.{bm25,relevance}; vectors are
MiniLM's, cached in bench/.cache/recall. The shipped keyword baseline is a real FTS5 table
with the store's tokenizer and bm25() weights. Fitted parts are scored by 2-fold
cross-validation by conversation (odd / even numbers): each half is ranked by the model
fitted on the other half.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Sequence

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.recall import data as beam  # noqa: E402
from bench.recall import experiments as X  # noqa: E402
from bench.recall import instructions, neighbours  # noqa: E402
from bench.recall.candidates import TermIndex, build_queries  # noqa: E402
from bench.recall.corpus import CACHE_DIR, CONTEXTS, Corpus, load, user_turns_only  # noqa: E402
from bench.recall.negatives import UNRELATED_QUERIES  # noqa: E402
from bench.recall.report import render  # noqa: E402
from memoryd.retrieval.tokens import STEMMERS, Tokenizer  # noqa: E402

QUICK = (1, 2, 11, 12)
_started = time.perf_counter()


def log(message: str) -> None:
    print(f"[{time.perf_counter() - _started:7.1f}s] {message}", flush=True)


DATED = "porter+date"  # keyword text with the memory's date in words ("March 15 2024")


def dated_texts(c: Corpus) -> list[str]:
    """Each message with its date appended in words, so that "on April 30" can match it."""
    return [f"{t}\n{d:%B} {d.day} {d.year}" if d else t for t, d in zip(c.texts, c.created)]


def partner(number: int) -> int:
    """The conversation whose questions are 'foreign' here: ten apart, of another category."""
    return (number + 9) % 20 + 1


def asks_for(c: Corpus, by_number: dict[int, Corpus]) -> list[tuple[str, str, object]]:
    """(kind, text, question) for one conversation: its own questions, foreign, unrelated."""
    out: list[tuple[str, str, object]] = []
    for q in c.questions:
        kind = "answerable" if q.evidence else "abstention"
        out.append((kind, q.question, q))
    other = by_number.get(partner(c.number))
    if other is not None:
        firsts = {}
        for q in other.questions:
            firsts.setdefault(q.ability, q)
        out.extend(("foreign", q.question, None) for q in firsts.values())
    out.extend(("unrelated", text, None) for text in UNRELATED_QUERIES)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.recall.ranking", description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help=f"conversations {QUICK} only")
    ap.add_argument("--conversations", help="comma-separated conversation numbers (default: all)")
    ap.add_argument("--refit", action="store_true", help="print the relevance constants fitted on all data")
    ap.add_argument("--contexts", default="plain",
                    help=f"vector texts to embed, of {','.join(CONTEXTS)} (default plain; each other one is a model pass over every message)")
    ap.add_argument("--engine", default="sqlite,postgresql,sqlite-ingest",
                    help="backends to run the shipped Engine.search on: sqlite, postgresql, "
                         "sqlite-ingest (SQLite written through smart ingest); '' to skip")
    ap.add_argument("--cache-dir", type=Path, default=CACHE_DIR)
    ap.add_argument("--out-dir", type=Path, default=REPO_ROOT / "bench" / "results")
    args = ap.parse_args(argv)
    root = beam.beam_dir()
    dirs = beam.conversation_dirs(root)
    if not dirs:
        print(f"BEAM data not found at {root}; set MEMORYD_BEAM_DIR to run this benchmark. Skipping.")
        return 0
    wanted = ({int(x) for x in args.conversations.split(",")} if args.conversations
              else set(QUICK) if args.quick else None)
    if wanted is not None:
        dirs = [d for d in dirs if int(d.name) in wanted]
    log(f"loading {len(dirs)} conversations")
    contexts = tuple(x for x in args.contexts.split(",") if x)
    corpora, table = load(dirs, list(UNRELATED_QUERIES), log, args.cache_dir, contexts)
    by_number = {c.number: c for c in corpora}
    tokenizers = {s: Tokenizer(s) for s in STEMMERS} | {DATED: Tokenizer("porter")}
    queries = []
    indexes: dict[int, dict[str, TermIndex]] = {}
    for c in corpora:
        indexes[c.number] = {s: TermIndex.build(c.texts, t) for s, t in tokenizers.items() if s != DATED}
        indexes[c.number][DATED] = TermIndex.build(dated_texts(c), tokenizers[DATED])
        queries.extend(build_queries(c, c.texts, indexes[c.number], tokenizers, table,
                                     asks_for(c, by_number)))
    user_queries, user_indexes, user_corpora = [], {}, {}
    for c in corpora:
        u = user_corpora[c.number] = user_turns_only(c)
        user_indexes[c.number] = {"porter": TermIndex.build(u.texts, tokenizers["porter"])}
        user_queries.extend(build_queries(u, u.texts, user_indexes[c.number], {"porter": tokenizers["porter"]},
                                          table, [a for a in asks_for(u, {}) if a[0] != "foreign"]))
    log(f"{len(queries)} queries ({', '.join(f'{k} {sum(q.kind == k for q in queries)}' for k in X.KINDS)})")
    res = X.run_all(queries, indexes, by_number, log)
    rankers = res.pop("_rankers")
    log("conditional standing instructions")
    res["instructions"] = instructions.section(res, queries, indexes, by_number, table, user_queries,
                                               user_indexes, user_corpora)
    log("the next turn as a feature")
    res["neighbours"] = neighbours.section(queries, indexes, by_number,
                                           (user_queries, user_indexes, user_corpora))
    log("transfer check: user turns only")
    res["transfer"] = X.transfer_section(res, user_queries, user_indexes)
    backends = [b for b in args.engine.split(",") if b]
    if backends:
        from bench.recall.engine_eval import engine_section

        res["engine"] = engine_section(queries, by_number, table, res, rankers, backends,
                                       args.cache_dir / "engine", log)
    res["meta"] = {
        "run": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "conversations": [c.number for c in corpora],
        "messages": sum(len(c.ids) for c in corpora),
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "python": platform.python_version(),
        "runtime_s": round(time.perf_counter() - _started, 1),
        "embedded": table.embedded,
        "from_cache": table.from_cache,
    }
    if args.refit:
        print(X.constants_text(res))
    stem = "recall_quick" if wanted is not None else "recall"
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / f"{stem}.json").write_text(json.dumps(res, indent=1, default=str) + "\n", encoding="utf-8")
    (args.out_dir / f"{stem}.md").write_text(render(res), encoding="utf-8")
    log(f"wrote {args.out_dir / stem}.{{json,md}}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
