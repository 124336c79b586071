"""Time expressions in queries become time windows."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from memoryd.retrieval.when import time_window

NOW = datetime(2024, 6, 12, 15, 30, tzinfo=timezone.utc)  # a Wednesday


def day(text: str) -> tuple[str, str]:
    w = time_window(text, NOW)
    assert w is not None, text
    return w.start.date().isoformat(), w.end.date().isoformat()


@pytest.mark.parametrize(("query", "window"), [
    ("what did I say yesterday?", ("2024-06-11", "2024-06-12")),
    ("notes from today", ("2024-06-12", "2024-06-13")),
    ("what did we decide last week", ("2024-06-03", "2024-06-10")),
    ("plans for this week", ("2024-06-10", "2024-06-17")),
    ("the budget last month", ("2024-05-01", "2024-06-01")),
    ("goals set last year", ("2023-01-01", "2024-01-01")),
    ("what did the user say about the trip in May?", ("2024-05-01", "2024-06-01")),
    ("what happened in September 2023", ("2023-09-01", "2023-10-01")),
    ("the audit on April 30", ("2024-04-30", "2024-05-01")),
    ("the dinner on December 24", ("2023-12-24", "2023-12-25")),  # latest not after now
    ("the offer on September 14, 2024", ("2024-09-14", "2024-09-15")),
    ("two days ago", ("2024-06-09", "2024-06-12")),
    ("3 weeks ago", ("2024-05-19", "2024-05-26")),
])
def test_windows(query: str, window: tuple[str, str]) -> None:
    assert day(query) == window


@pytest.mark.parametrize("query", [
    "how do I deploy the app",
    "may I ask about the deadline",
    "what is the capital of France",
    "the meeting on February 30",
    "",
])
def test_no_window(query: str) -> None:
    assert time_window(query, NOW) is None


def test_window_contains_uses_utc() -> None:
    w = time_window("yesterday", NOW)
    assert w is not None and w.contains(datetime(2024, 6, 11, 23, 59, tzinfo=timezone.utc))
    assert not w.contains(datetime(2024, 6, 12, 0, 0, tzinfo=timezone.utc))
