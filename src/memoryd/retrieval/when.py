"""Time expressions in a query ("last week", "in May", "two days ago") as a time window.

The search path can turn the window into a filter or, as memoryd does by default, into a
tie-breaking boost for memories created inside it (see cognition.ranking: a boost may
only reorder hits of close relevance, so a wrong parse never costs recall).

English only, no network, no model: a few regular expressions over the folded query,
about 20 µs a query. Relative expressions are resolved against ``now``; a month or a
day without a year means the latest such date not after ``now``.

    >>> from datetime import datetime, timezone
    >>> now = datetime(2024, 6, 12, 15, 0, tzinfo=timezone.utc)
    >>> w = time_window("what did we decide last week?", now)
    >>> (w.start.date().isoformat(), w.end.date().isoformat())
    ('2024-06-03', '2024-06-10')
    >>> time_window("the trip in May", now).start.date().isoformat()
    '2024-05-01'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from memoryd.models import as_utc

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december")
_MONTH = {m: i + 1 for i, m in enumerate(MONTHS)} | {m[:3]: i + 1 for i, m in enumerate(MONTHS)}
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
            "seven": 7, "eight": 8, "nine": 9, "ten": 10, "couple of": 2, "few": 3}
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
_MONTH_RE = "|".join(sorted(_MONTH, key=len, reverse=True))
_COUNT_RE = r"\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a couple of|a few"

_AGO = re.compile(rf"\b({_COUNT_RE})\s+(day|week|month|year)s?\s+ago\b")
_LAST = re.compile(r"\b(last|past|previous|this)\s+(day|week|month|year)\b")
_DATE = re.compile(rf"\b({_MONTH_RE})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s+(\d{{4}}))?\b")
_MONTH_YEAR = re.compile(rf"\b(?:in|during|since|of|from)\s+({_MONTH_RE})\.?(?:\s+(\d{{4}}))?\b")
_WORDS = re.compile(r"\b(yesterday|today|tonight|this morning)\b")


@dataclass(frozen=True)
class TimeWindow:
    """A half-open UTC interval ``[start, end)`` and the words it was read from."""

    start: datetime
    end: datetime
    text: str

    def contains(self, when: datetime) -> bool:
        return self.start <= as_utc(when) < self.end


def time_window(query: str, now: datetime) -> TimeWindow | None:
    """The first time expression of ``query`` as a window, or None if there is none."""
    text = " ".join(query.casefold().split())
    now = as_utc(now)
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    for parse in (_parse_words, _parse_ago, _parse_last, _parse_date, _parse_month):
        window = parse(text, now, today)
        if window is not None:
            return window
    return None


def _parse_words(text: str, now: datetime, today: datetime) -> TimeWindow | None:
    m = _WORDS.search(text)
    if not m:
        return None
    start = today - timedelta(days=1) if m.group(1) == "yesterday" else today
    return TimeWindow(start, start + timedelta(days=1), m.group(0))


def _parse_ago(text: str, now: datetime, today: datetime) -> TimeWindow | None:
    m = _AGO.search(text)
    if not m:
        return None
    count = m.group(1).replace("a couple of", "couple of").replace("a few", "few")
    n = int(count) if count.isdigit() else _NUMBERS[count]
    days = n * _UNIT_DAYS[m.group(2)]
    slack = max(1, days // 7)  # "three weeks ago" is about, not exactly, 21 days
    center = today - timedelta(days=days)
    return TimeWindow(center - timedelta(days=slack), center + timedelta(days=slack + 1), m.group(0))


def _parse_last(text: str, now: datetime, today: datetime) -> TimeWindow | None:
    m = _LAST.search(text)
    if not m:
        return None
    which, unit = m.groups()
    if unit == "day":
        start = today - timedelta(days=0 if which == "this" else 1)
        return TimeWindow(start, start + timedelta(days=1), m.group(0))
    if unit == "week":
        monday = today - timedelta(days=today.weekday())
        start = monday if which == "this" else monday - timedelta(days=7)
        return TimeWindow(start, start + timedelta(days=7), m.group(0))
    if unit == "month":
        first = today.replace(day=1)
        start = first if which == "this" else (first - timedelta(days=1)).replace(day=1)
        return TimeWindow(start, _next_month(start), m.group(0))
    first = today.replace(month=1, day=1)
    start = first if which == "this" else first.replace(year=first.year - 1)
    return TimeWindow(start, start.replace(year=start.year + 1), m.group(0))


def _parse_date(text: str, now: datetime, today: datetime) -> TimeWindow | None:
    for m in _DATE.finditer(text):
        month, day, year = _MONTH[m.group(1)], int(m.group(2)), m.group(3)
        try:
            start = today.replace(year=int(year) if year else today.year, month=month, day=day)
        except ValueError:
            continue
        if not year and start > today:
            start = start.replace(year=start.year - 1)
        return TimeWindow(start, start + timedelta(days=1), m.group(0))
    return None


def _parse_month(text: str, now: datetime, today: datetime) -> TimeWindow | None:
    m = _MONTH_YEAR.search(text)
    if not m or (m.group(1) == "may" and not m.group(2) and not text[m.start():].startswith("in may")):
        return None
    month, year = _MONTH[m.group(1)], m.group(2)
    start = today.replace(year=int(year) if year else today.year, month=month, day=1)
    if not year and start > today:
        start = start.replace(year=start.year - 1)
    return TimeWindow(start, _next_month(start), m.group(0))


def _next_month(start: datetime) -> datetime:
    return start.replace(year=start.year + 1, month=1) if start.month == 12 else start.replace(
        month=start.month + 1)
