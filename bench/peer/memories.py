"""The agent memories and queries both systems get: bench/latency's synthetic generator.

Memories are facts, preferences, decisions, events, observations, tasks and people (8-40
words, names, numbers, tech terms, Zipf-weighted project codenames; see
bench/latency/corpus.py), with 0-3 tags. Exact repeats are dropped, since the peer refuses
a memory whose content it already holds. Queries are built from memories of the set: short
keyword queries, questions and long requests, in equal parts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.latency.corpus import generate_corpus, generate_queries

SEED = 42
QUERY_KINDS = ("short", "question", "long")


def agent_memories(n: int, seed: int = SEED) -> list[dict[str, Any]]:
    """``n`` distinct memories: ``{"content", "type", "tags"}``, the same for a given seed."""
    corpus = generate_corpus(n + n // 10 + 10, seed=seed)
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for text, kind, tags in zip(corpus.texts, corpus.node_types, corpus.tags):
        if text in seen:
            continue
        seen.add(text)
        out.append({"content": text, "type": kind, "tags": list(tags)})
        if len(out) == n:
            return out
    raise ValueError(f"the generator gave fewer than {n} distinct memories")


def queries(n: int, seed: int = SEED) -> list[str]:
    """``n`` queries over the first 5,000 generated memories (short, question, long in turn)."""
    corpus = generate_corpus(5000, seed=seed)
    per_kind = -(-n // len(QUERY_KINDS))
    sets = [generate_queries(corpus, per_kind, kind) for kind in QUERY_KINDS]
    mixed = [q for triple in zip(*sets) for q, _ in triple]
    return mixed[:n]


def write_job(path: Path, **job: Any) -> Path:
    """A worker's job as a JSON file (workers read it; nothing else is passed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(job))
    return path
