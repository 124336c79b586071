"""BEAM messages with the conversation each came from, and their vectors (cached).

Every message of the 20 BEAM conversations is one memory; its conversation number is the
reference topic. Vectors come from memoryd's ``LocalEmbedder`` (all-MiniLM-L6-v2) through the
recall bench's length-sorted ``VectorTable``, cached in ``bench/.cache/domains/`` so that only
the first run embeds (about 6 minutes idle for 5,094 messages, longer under load).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.common import CACHE_DIR
from bench.recall.data import conversation_dirs, load_conversation
from bench.recall.embedding import VectorCache, VectorTable

Log = Callable[[str], None]
MIXED_MAX_WORDS = 60  # both halves of a mixed text must fit the model's 256-token window


@dataclass
class Corpus:
    """Messages (texts), their conversation labels, roles, unit vectors and topic titles."""

    texts: list[str]
    labels: np.ndarray  # conversation number per message
    roles: list[str]
    vectors: np.ndarray  # (n, 384) float32, unit length
    topics: dict[int, str]


def load_corpus(log: Log = print) -> Corpus | None:
    """All BEAM messages with vectors, or None when the data is absent."""
    dirs = conversation_dirs()
    if not dirs:
        return None
    texts: list[str] = []
    labels: list[int] = []
    roles: list[str] = []
    topics: dict[int, str] = {}
    for conv_dir in dirs:
        conv = load_conversation(conv_dir)
        topics[conv.number] = _title(conv_dir / "topic.json")
        for msg in conv.messages:
            if msg.content.strip():
                texts.append(msg.content)
                labels.append(conv.number)
                roles.append(msg.role)
    table = vector_table(log)
    table.ensure(texts, "BEAM messages")
    return Corpus(texts, np.array(labels), roles, table.matrix(texts), topics)


def vector_table(log: Log = print) -> VectorTable:
    """A text-to-vector table backed by the on-disk cache in ``bench/.cache/domains``."""
    from memoryd.embed import LocalEmbedder

    return VectorTable(LocalEmbedder(), VectorCache(CACHE_DIR / "domains"), log)


@dataclass
class Pairs:
    """Texts joining two short user messages, the domains of each half, and their vectors.

    ``mixed``: the halves' own best domains differ (a memory on two topics);
    ``same``: both halves have the same best domain (a control of the same length).
    """

    mixed: list[str]
    mixed_domains: np.ndarray  # (n, 2): best domain of each half alone
    mixed_vectors: np.ndarray
    same: list[str]
    same_domain: np.ndarray  # (n,)
    same_vectors: np.ndarray


def pair_texts(corpus: Corpus, best: np.ndarray, n: int, seed: int, log: Log = print) -> Pairs:
    """``n`` mixed and ``n`` same-domain pairs of short user messages (seeded).

    ``best[i]`` is message i's own best domain. Halves are user messages of 8-60 words,
    so both fit in the model's 256-token window and the vector sees both.
    """
    rng = random.Random(seed)
    by_domain: dict[int, list[int]] = {}
    for i, (text, role) in enumerate(zip(corpus.texts, corpus.roles)):
        if role == "user" and 8 <= len(text.split()) <= MIXED_MAX_WORDS and best[i] >= 0:
            by_domain.setdefault(int(best[i]), []).append(i)
    usable = sorted(d for d, rows in by_domain.items() if len(rows) >= 2)
    mixed, mixed_domains, same, same_domain = [], [], [], []
    for _ in range(n):
        a, b = rng.sample(usable, 2)
        mixed.append(_join(corpus, rng.choice(by_domain[a]), rng.choice(by_domain[b])))
        mixed_domains.append((a, b))
        c = rng.choice(usable)
        same.append(_join(corpus, *rng.sample(by_domain[c], 2)))
        same_domain.append(c)
    table = vector_table(log)
    table.ensure(mixed + same, "paired texts")
    return Pairs(
        mixed,
        np.array(mixed_domains),
        table.matrix(mixed),
        same,
        np.array(same_domain),
        table.matrix(same),
    )


def _join(corpus: Corpus, i: int, j: int) -> str:
    return f"{corpus.texts[i]}\n\n{corpus.texts[j]}"


def _title(path: Path) -> str:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    return str(raw.get("title", "") if isinstance(raw, dict) else raw)[:80]
