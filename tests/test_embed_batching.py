"""Grouping tokenised texts by length into batches padded only to their own longest text."""

from __future__ import annotations

import numpy as np
import pytest

from memoryd.embed.batching import pad, plan


def test_every_text_lands_in_exactly_one_batch_longest_first() -> None:
    lengths = [5, 40, 12, 40, 7, 3, 25, 12]
    batches = plan(lengths, max_rows=3, max_tokens=10_000)
    rows = np.concatenate(batches)
    assert sorted(rows.tolist()) == list(range(len(lengths)))
    flat = [lengths[i] for i in rows]
    assert flat == sorted(lengths, reverse=True)  # sorted by token count, not by input order
    assert [len(b) for b in batches] == [3, 3, 2]


def test_a_batch_closes_at_its_token_budget() -> None:
    lengths = [100, 90, 90, 20, 20, 20, 20, 20, 20]
    batches = plan(lengths, max_rows=64, max_tokens=200)
    for b in batches:
        assert len(b) * max(lengths[i] for i in b) <= 200
    assert [len(b) for b in batches] == [2, 2, 5]  # 100+90 | 90+20 (padded to 90) | five 20s


def test_a_text_longer_than_the_budget_gets_a_batch_of_its_own() -> None:
    batches = plan([300, 10, 10], max_rows=64, max_tokens=256)
    assert [b.tolist() for b in batches] == [[0], [1, 2]]


def test_padding_goes_to_the_longest_text_of_the_batch_only() -> None:
    ids = [[101, 7, 8, 102], [101, 9, 102], [101, 1, 2, 3, 4, 5, 102]]
    batch = pad(ids, np.array([0, 1]))
    assert batch.ids.tolist() == [[101, 7, 8, 102], [101, 9, 102, 0]]
    assert batch.mask.tolist() == [[1, 1, 1, 1], [1, 1, 1, 0]]
    assert batch.ids.dtype == np.int64 and batch.rows.tolist() == [0, 1]


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError):
        plan([3], max_rows=0, max_tokens=10)
    assert plan([], max_rows=4, max_tokens=10) == []
