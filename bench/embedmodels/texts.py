"""The text sets the bench embeds, and an on-disk cache of each model's vectors for them.

Sets: BEAM messages (one memory per message) and BEAM questions (read in place by
``bench.recall.data``), and short synthetic agent memories plus questions from
``bench.latency.corpus`` for throughput and latency. A model's vectors for a set are made by
``worker.py embed`` in the model's scratch venv, in chunks of at most ``CHUNK`` texts (longest
first, so batches pad little), each chunk cached as ``.npy`` under
``bench/.cache/embedmodels/vectors/<model>/`` and keyed by a hash of its texts.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from bench.common import CACHE_DIR
from bench.recall import data as beam

WORK = CACHE_DIR / "embedmodels"
CHUNK = 1024

Log = Callable[[str], None]


@dataclass
class BeamSet:
    """BEAM conversations plus the distinct message and question texts to embed."""

    conversations: list[beam.Conversation]
    docs: list[str]  # distinct non-empty message contents
    questions: list[str]  # distinct question texts (questions with evidence)


def load_beam(limit: int | None = None) -> BeamSet | None:
    """The BEAM 100K track (first ``limit`` conversations), or None when the data is absent."""
    dirs = beam.conversation_dirs()
    if not dirs:
        return None
    convs = [beam.load_conversation(d) for d in dirs[:limit]]
    docs = list(dict.fromkeys(m.content for c in convs for m in c.messages if m.content.strip()))
    questions = list(dict.fromkeys(
        q.question for c in convs for q in c.questions if q.evidence and q.question.strip()
    ))
    return BeamSet(convs, docs, questions)


def short_memories(n: int = 1024, n_queries: int = 210) -> tuple[list[str], list[str]]:
    """Short synthetic agent memories (8-40 words) and questions about them."""
    from bench.latency.corpus import generate_corpus, generate_queries

    corpus = generate_corpus(n, seed=42)
    queries = [q for q, _ in generate_queries(corpus, n_queries, "question", seed=7)]
    return list(corpus.texts), queries


def _digest(texts: Sequence[str]) -> str:
    h = hashlib.sha1()
    for t in texts:
        h.update(t.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()[:16]


def write_texts(texts: Sequence[str]) -> Path:
    """A JSON file with ``texts`` for the worker (named by their hash; written once)."""
    path = WORK / "texts" / f"{_digest(texts)}.json"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(list(texts)), encoding="utf-8")
    return path


Embed = Callable[[Path, str, Path], dict]  # (texts file, role, out .npy) -> worker result


def vectors_for(model: str, texts: Sequence[str], role: str, embed: Embed, log: Log) -> dict[str, np.ndarray]:
    """``{text: unit vector}`` for every text, from the cache or by running the worker."""
    ordered = sorted(dict.fromkeys(texts), key=len, reverse=True)
    out: dict[str, np.ndarray] = {}
    vec_dir = WORK / "vectors" / model
    vec_dir.mkdir(parents=True, exist_ok=True)
    for start in range(0, len(ordered), CHUNK):
        chunk = ordered[start : start + CHUNK]
        path = vec_dir / f"{role}-{_digest(chunk)}.npy"
        if not path.exists():
            log(f"  {model}: embedding {role} texts {start}-{start + len(chunk)} of {len(ordered)}")
            result = embed(write_texts(chunk), role, path)
            if not result.get("ok"):
                raise RuntimeError(f"{model} failed to embed: {result.get('error')}")
        vecs = np.load(path)
        if len(vecs) != len(chunk):
            raise RuntimeError(f"{path} holds {len(vecs)} vectors for {len(chunk)} texts")
        out.update(zip(chunk, vecs))
    return out
