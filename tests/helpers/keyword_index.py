"""Checking a store's keyword index against a recount of its memories with the pure modules."""

from __future__ import annotations

from collections import Counter

import pytest

from memoryd.models import Memory
from memoryd.retrieval.bm25 import CorpusStats
from memoryd.retrieval.tokens import term_counts
from memoryd.store.base import Store
from memoryd.store.terms import keyword_text


def counts_of(m: Memory) -> Counter[str]:
    return term_counts(keyword_text(m.content, m.summary, m.tags))


def expected_stats(memories: list[Memory], terms: list[str]) -> CorpusStats:
    lengths = [sum(counts_of(m).values()) for m in memories]
    df = {t: sum(1 for m in memories if t in counts_of(m)) for t in terms}
    return CorpusStats(len(memories), sum(lengths) / len(lengths) if lengths else 0.0,
                       {t: n for t, n in df.items() if n})


def assert_index_matches(store: Store) -> None:
    """The store's statistics and term counts equal a recount of its memories."""
    live = list(store.iter_memories())
    every = sorted({t for m in live for t in counts_of(m)} | {"absent"})
    stats = store.corpus_stats(every)
    assert stats.documents == len(live)
    expected = expected_stats(live, every)
    assert stats.average_length == pytest.approx(expected.average_length)
    assert dict(stats.document_frequency) == dict(expected.document_frequency)
    got = {c.memory_id: (c.length, dict(c.term_frequency))
           for c in store.term_counts([m.id for m in live], every)}
    assert got == {m.id: (sum(counts_of(m).values()), dict(counts_of(m))) for m in live}
