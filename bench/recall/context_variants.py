"""Conversation context for memories written in order within a session (measured here).

A memory that is one turn of a chat ("Yes, Tuesday works") often means little alone. The
variants let its keyword side and its vector side see its neighbours in the same session,
and make its date searchable:

- ``keyword +neighbours``: the keyword text is the memory plus its previous and next turn;
- ``vector mix 0.3`` / ``0.6``: the vector is the memory's plus that weight times each
  neighbour's (renormalised; no second model pass);
- ``keyword +date``: the write date in words ("Tuesday 14 March 2026") is added to the
  keyword text;
- ``all``: the neighbours on both sides and the date.

Memories of no session with others (every agent memory here) are unchanged by all of them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from bench.recall.data import Conversation, Message
from bench.recall.embedding import VectorTable
from bench.recall.pools import TOKENIZER, Store, TermIndex

VARIANTS = ("plain", "keyword +neighbours", "vector mix 0.3", "vector mix 0.6", "keyword +date",
            "all")


def neighbours(messages: list[Message]) -> list[tuple[int | None, int | None]]:
    """(previous, next) position of the same session for each message."""
    out = []
    for i, m in enumerate(messages):
        prev = i - 1 if i > 0 and messages[i - 1].session == m.session else None
        nxt = i + 1 if i + 1 < len(messages) and messages[i + 1].session == m.session else None
        out.append((prev, nxt))
    return out


def date_words(m: Message) -> str:
    when = m.created_at
    return f"{when:%A} {when.day} {when:%B} {when.year}" if when else ""


def keyword_texts(conv: Conversation, with_neighbours: bool, with_date: bool) -> list[str]:
    msgs = conv.messages
    out = []
    for m, (prev, nxt) in zip(msgs, neighbours(msgs)):
        parts = [m.content]
        if with_neighbours:
            parts += [msgs[j].content for j in (prev, nxt) if j is not None]
        if with_date:
            parts.append(date_words(m))
        out.append("\n".join(p for p in parts if p))
    return out


def mixed_vectors(conv: Conversation, plain: np.ndarray, weight: float) -> np.ndarray:
    out = plain.astype(np.float64).copy()
    for i, (prev, nxt) in enumerate(neighbours(conv.messages)):
        for j in (prev, nxt):
            if j is not None:
                out[i] += weight * plain[j]
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out.astype(np.float32)


def variant_store(dataset: str, conv: Conversation, table: VectorTable, variant: str) -> Store:
    """The store of ``conv`` as ``variant`` indexes it."""
    plain = table.matrix([m.content for m in conv.messages])
    with_nb = variant in ("keyword +neighbours", "all")
    with_date = variant in ("keyword +date", "all")
    weight = {"vector mix 0.3": 0.3, "vector mix 0.6": 0.6, "all": 0.3}.get(variant, 0.0)
    words = keyword_texts(conv, with_nb, with_date)
    vectors = mixed_vectors(conv, plain, weight) if weight else plain
    return Store(dataset, conv.number, [m.content for m in conv.messages],
                 TermIndex.build(words, TOKENIZER), vectors, [m.session for m in conv.messages])


StoreBuilder = Callable[[str, Conversation, VectorTable], Store]
