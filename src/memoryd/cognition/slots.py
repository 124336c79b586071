"""What typed values a clause holds, and in which slot.

Pure Python + regex, no model. :func:`values_and_slots` reads the values of a clause by
kind, each normalised so that two spellings of one value compare equal:

* ``hex``: colour codes, lower-cased ("#A1B2C3" -> "#a1b2c3");
* ``time``: clock times as HH:MM ("3:30 pm" -> "15:30", "7am" -> "07:00");
* ``date``: month and day as M-D ("2024-03-05", "March 5th", "5th of March" -> "3-5");
* ``weekday`` and ``month``: a weekday name ("mondays" -> "monday"), a month alone as its
  number ("April 2024" -> "4");
* ``percent``, ``money`` (scaled: "$1.2k" -> "1200", "$5 million" -> "5e+06"),
  ``version`` ("v2.3.1" -> "2.3.1") and ``number`` ("1,000" -> "1000", "twelve" -> "12");
* ``frequency`` ("nightly", "every night" -> "daily") and ``colour`` ("grey").

Kinds are read in that order and each match is blanked out before the next kind is read, so
"$1,200" is money and not also a number. Only frequency phrases ("every week") are read on the
whole clause.

A value's slot is the set of content-word stems among the four words on either side of it:
two values of one kind fill the same slot when their slots share a stem ("deploy at 3 pm" /
"deploy at 4 pm").
"""

from __future__ import annotations

import re
from collections.abc import Callable

from memoryd.cognition.words import NEGATION_CUES, STOP_WORDS, TOKEN, stem

__all__ = ["VALUE_STEMS", "VALUE_WORDS", "Slots", "Values", "values_and_slots"]

Values = dict[str, set[str]]
"""Kind -> the normalised values of that kind in a clause."""
Slots = dict[tuple[str, str], set[str]]
"""(kind, value) -> the content stems around that value (its slot)."""

_MONTHS = {
    "jan": 1, "january": 1, "feb": 2, "february": 2, "mar": 3, "march": 3, "apr": 4,
    "april": 4, "may": 5, "jun": 6, "june": 6, "jul": 7, "july": 7, "aug": 8, "august": 8,
    "sep": 9, "sept": 9, "september": 9, "oct": 10, "october": 10, "nov": 11,
    "november": 11, "dec": 12, "december": 12,
}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_FREQUENCY = {
    "hourly": "hourly", "daily": "daily", "nightly": "daily", "weekly": "weekly",
    "biweekly": "biweekly", "fortnightly": "biweekly", "monthly": "monthly",
    "quarterly": "quarterly", "yearly": "yearly", "annually": "yearly", "annual": "yearly",
}
_COLOURS = frozenset(
    "red orange yellow green blue purple violet pink black white grey gray brown teal cyan "
    "magenta navy beige".split())
_NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "twenty": 20,
    "thirty": 30, "forty": 40, "fifty": 50, "hundred": 100, "twice": 2,
}
VALUE_WORDS = frozenset(_MONTHS) | frozenset(_WEEKDAYS) | frozenset(w + "s" for w in _WEEKDAYS) \
    | frozenset(_FREQUENCY) | _COLOURS | frozenset(_NUMBER_WORDS)
"""Words that are values (months, weekdays, frequencies, colours, number words)."""
VALUE_STEMS = frozenset(stem(w) for w in VALUE_WORDS)
"""The stems of :data:`VALUE_WORDS`."""

_HEX = re.compile(r"#[0-9A-Fa-f]{6}\b|#[0-9A-Fa-f]{3}\b")
_TIME = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s?([ap]\.?m\.?)(?![a-z])|\b(\d{1,2}):(\d{2})\b", re.I)
_DATE = re.compile(
    r"\b(\d{4})-(\d{2})-(\d{2})\b|\b(" + "|".join(sorted(_MONTHS, key=len, reverse=True))
    + r")\.?\s+(\d{1,2})(?:st|nd|rd|th)?\b(?:,?\s+(\d{4}))?|\b(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?("
    + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\b|\b("
    + "|".join(_WEEKDAYS) + r")s?\b|\b(" + "|".join(sorted(_MONTHS, key=len, reverse=True))
    + r")\b(?:\s+(\d{4}))?",
    re.I)
_PERCENT = re.compile(r"(\d+(?:\.\d+)?)\s?(?:%|percent\b)", re.I)
_MONEY = re.compile(r"[$€£]\s?(\d[\d,]*(?:\.\d+)?)\s?(k|m|million|thousand)?\b|\b(\d[\d,]*(?:\.\d+)?)\s?(k|m)?\s?(?:dollars|usd|euros?|eur|pounds|gbp)\b", re.I)
_VERSION = re.compile(r"\b[vV]?(\d+\.\d+(?:\.\d+)*)\b")
_NUMBER = re.compile(r"(?<![\w.#])(\d[\d,]*(?:\.\d+)?)(k\b)?", re.I)
_FREQ_PHRASE = re.compile(r"\b(?:every|each|per|a|once a)\s+(hour|day|night|week|month|quarter|year)\b", re.I)
_FREQ_NOUN = {"hour": "hourly", "day": "daily", "night": "daily", "week": "weekly",
              "month": "monthly", "quarter": "quarterly", "year": "yearly"}
_WORD = re.compile(r"[A-Za-z]+")
_SCALE = {"k": 1e3, "thousand": 1e3, "m": 1e6, "million": 1e6}

_Value = tuple[str, str]  # (kind, normalised value)


def _num(text: str) -> float:
    return float(text.replace(",", ""))


def _fmt(value: float) -> str:
    return f"{value:g}"


def _context(clause: str, start: int, end: int) -> set[str]:
    """Content stems of the words around a value (4 on each side): its slot."""
    words = [t for t in TOKEN.findall(clause[:start]) if t[:1].isalpha()][-4:]
    words += [t for t in TOKEN.findall(clause[end:]) if t[:1].isalpha()][:4]
    # Month and weekday names stay: "March 22 at 3 PM" / "March 22 at 4:30 PM" share a slot.
    return {stem(w) for w in words
            if w.lower() not in STOP_WORDS and w.lower() not in NEGATION_CUES
            and (w.lower() not in VALUE_WORDS or w.lower() in _MONTHS
                 or w.lower().rstrip("s") in _WEEKDAYS)}


def _hex(m: re.Match[str]) -> _Value | None:
    return "hex", m.group(0).lower()


def _time(m: re.Match[str]) -> _Value | None:
    if m.group(3):
        hour = int(m.group(1)) % 12 + (12 if m.group(3).lower().startswith("p") else 0)
        return "time", f"{hour:02d}:{int(m.group(2) or 0):02d}"
    return "time", f"{int(m.group(4)):02d}:{m.group(5)}"


def _date(m: re.Match[str]) -> _Value | None:
    if m.group(1):
        return "date", f"{int(m.group(2))}-{int(m.group(3))}"
    if m.group(4):
        return "date", f"{_MONTHS[m.group(4).lower()]}-{int(m.group(5))}"
    if m.group(7):
        return "date", f"{_MONTHS[m.group(8).lower()]}-{int(m.group(7))}"
    if m.group(9):
        return "weekday", m.group(9).lower()
    if m.group(10):
        return "month", f"{_MONTHS[m.group(10).lower()]}"
    return None


def _percent(m: re.Match[str]) -> _Value | None:
    return "percent", _fmt(_num(m.group(1)))


def _money(m: re.Match[str]) -> _Value | None:
    amount = _num(m.group(1) or m.group(3))
    scale = (m.group(2) or m.group(4) or "").lower()
    return "money", _fmt(amount * _SCALE.get(scale, 1))


def _version(m: re.Match[str]) -> _Value | None:
    return "version", m.group(1)


def _number(m: re.Match[str]) -> _Value | None:
    return "number", _fmt(_num(m.group(1)) * (1000 if m.group(2) else 1))


def _frequency_phrase(m: re.Match[str]) -> _Value | None:
    return "frequency", _FREQ_NOUN[m.group(1).lower()]


def _value_word(m: re.Match[str]) -> _Value | None:
    low = m.group(0).lower()
    if low in _FREQUENCY:
        return "frequency", _FREQUENCY[low]
    if low in _COLOURS:
        return "colour", low
    if low in _NUMBER_WORDS:
        return "number", _fmt(_NUMBER_WORDS[low])
    return None


# Read in this order; each pattern's matches are blanked out before the next one is read.
_PATTERNS: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], _Value | None]], ...] = (
    (_HEX, _hex), (_TIME, _time), (_DATE, _date), (_PERCENT, _percent), (_MONEY, _money),
    (_VERSION, _version), (_NUMBER, _number),
)


def _blank(m: re.Match[str]) -> str:
    """Spaces of the match's length, so that offsets into the clause stay valid."""
    return " " * len(m.group(0))


def values_and_slots(clause: str) -> tuple[Values, Slots]:
    """Typed values in a clause, normalised (times to HH:MM, dates to M-D, money to numbers),
    and the slot (surrounding content words) of each.

    >>> values, slots = values_and_slots("The standup moved to 9:30 am on Mondays")
    >>> values
    {'time': {'09:30'}, 'weekday': {'monday'}}
    >>> sorted(slots[("time", "09:30")])
    ['monday', 'mov', 'standup']
    """
    values: Values = {}
    slots: Slots = {}

    def add(found: _Value | None, m: re.Match[str]) -> None:
        if found is not None:
            values.setdefault(found[0], set()).add(found[1])
            slots.setdefault(found, set()).update(_context(clause, m.start(), m.end()))

    rest = clause
    for pattern, read in _PATTERNS:
        for m in pattern.finditer(rest):
            add(read(m), m)
        rest = pattern.sub(_blank, rest)
    for m in _FREQ_PHRASE.finditer(clause):
        add(_frequency_phrase(m), m)
    for m in _WORD.finditer(rest):
        add(_value_word(m), m)
    return values, slots
