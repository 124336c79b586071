"""What typed values a text holds, where, and in which slot.

Pure Python + regex, no model. :func:`value_spans` finds the values of a text by kind, each
normalised so that two spellings of one value compare equal:

* ``hex``: colour codes, lower-cased ("#A1B2C3" -> "#a1b2c3");
* ``time``: clock times as HH:MM ("3:30 pm" -> "15:30", "7am" -> "07:00");
* ``date``: month and day as M-D ("2024-03-05", "March 5th", "5th of March" -> "3-5");
* ``weekday`` and ``month``: a weekday name ("mondays" -> "monday"), a month alone as its
  number ("April 2024" -> "4"; a month name alone only when capitalised: "may" is a verb);
* ``percent``, ``money`` (scaled: "$1.2k" -> "1200", "$5 million" -> "5e+06") and
  ``version`` ("v2.3.1" -> "2.3.1");
* ``identifier``: names that are code, hosts or keys rather than words, lower-cased
  ("us-east-1", "release/next", "status.acme.io", "snake_case", "camelCase", "Q3", "Sev-1");
* ``number``, with the unit that follows it ("1,000" -> "1000", "2 billion" -> "2e+09",
  "10 MB" -> "10 mb", "30 days" -> "30 d", "twelve" -> "12");
* word values: ``frequency`` ("nightly", "every night" -> "daily"), ``colour`` ("grey"),
  ``quantifier`` ("all", "most", "some", "a few" -> "few", "every user" -> "all"),
  ``daypart`` ("mornings" -> "morning", "tomorrow"), ``ordinal`` ("second", "last") and a
  ``unit`` named without a number ("in milliseconds" -> "ms").

Kinds are read in that order and each match is blanked out before the next kind is read, so
"$1,200" is money and not also a number. Only frequency phrases ("every week") are read on the
whole text.

A value's slot is the set of content-word stems among the four words on either side of it:
two values of one kind fill the same slot when their slots share a stem ("deploy at 3 pm" /
"deploy at 4 pm"). :func:`values_and_slots` gives the values of a clause by kind with their
slots.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from memoryd.cognition.value_words import (
    COLOURS,
    DAYPARTS,
    FREQUENCY,
    MONTHS,
    NUMBER_WORDS,
    ORDINALS,
    QUANTIFIERS,
    SCALE,
    UNIT_PATTERN,
    UNITS,
    WEEKDAYS,
    WORD_UNITS,
)
from memoryd.cognition.words import NEGATION_CUES, STOP_WORDS, TOKEN, stem

__all__ = ["VALUE_STEMS", "VALUE_WORDS", "Slots", "Span", "Values", "value_spans",
           "values_and_slots"]

Values = dict[str, set[str]]
"""Kind -> the normalised values of that kind in a clause."""
Slots = dict[tuple[str, str], set[str]]
"""(kind, value) -> the content stems around that value (its slot)."""

VALUE_WORDS = frozenset(MONTHS) | frozenset(WEEKDAYS) | frozenset(w + "s" for w in WEEKDAYS) \
    | frozenset(FREQUENCY) | COLOURS | frozenset(NUMBER_WORDS) | frozenset(DAYPARTS) \
    | frozenset(ORDINALS) | frozenset(WORD_UNITS)
"""Words that are values (months, weekdays, frequencies, colours, number words, parts of
the day, ordinals, units)."""
VALUE_STEMS = frozenset(stem(w) for w in VALUE_WORDS)
"""The stems of :data:`VALUE_WORDS`."""


@dataclass(frozen=True)
class Span:
    """One value found in a text: its kind, normalised value and character span."""

    kind: str
    value: str
    start: int
    end: int


_MONTH_NAMES = "|".join(sorted(MONTHS, key=len, reverse=True))
_HEX = re.compile(r"#[0-9A-Fa-f]{6}\b|#[0-9A-Fa-f]{3}\b")
_TIME = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s?([ap]\.?m\.?)(?![a-z])|\b(\d{1,2}):(\d{2})\b", re.I)
_DATE = re.compile(
    r"\b(\d{4})-(\d{2})-(\d{2})\b|\b(" + _MONTH_NAMES
    + r")\.?\s+(\d{1,2})(?:st|nd|rd|th)?\b(?:,?\s+(\d{4}))?|\b(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?("
    + _MONTH_NAMES + r")\b|\b(" + "|".join(WEEKDAYS) + r")s?\b|\b(" + _MONTH_NAMES
    + r")\b(?:\s+(\d{4}))?",
    re.I)
_PERCENT = re.compile(r"(\d+(?:\.\d+)?)\s?(?:%|percent\b)", re.I)
_MONEY = re.compile(r"[$€£]\s?(\d[\d,]*(?:\.\d+)?)\s?(k|m|million|thousand|billion|bn)?\b|\b(\d[\d,]*(?:\.\d+)?)\s?(k|m)?\s?(?:dollars|usd|euros?|eur|pounds|gbp)\b", re.I)
# "v2.3", "2.3.1", or "Python 3.12" (two parts after a capitalised word); "0.81" is a number.
_VERSION = re.compile(r"\b[vV](\d+(?:\.\d+)+)\b|\b(\d+\.\d+(?:\.\d+)*)\b")
_NAME_BEFORE = re.compile(r"\b[A-Z][\w+#.-]*\s+$")
_IDENTIFIER = re.compile(
    r"(?<![\w@#$.])(?:[A-Za-z][\w-]*(?:(?:://|[./:@])[\w-]+)+"  # hosts, paths, urls, e-mails
    r"|[A-Za-z]+(?:-[A-Za-z]+)*-?\d[\w-]*"  # letters with digits: us-east-1, Q3, k8s
    r"|[a-z]+[A-Z][A-Za-z0-9]*"  # camelCase
    r"|[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+)")  # snake_case, MAX_RETRIES
_NOT_IDENTIFIERS = frozenset({"e.g", "i.e", "etc", "vs", "a.m", "p.m"})
_NUMBER = re.compile(
    r"(?<![\w.#])(\d[\d,]*(?:\.\d+)?)(k\b)?(?:\s(thousand|million|billion)\b)?"
    r"(?:\s?-?\s?(" + UNIT_PATTERN + r")\b)?", re.I)
_FREQ_PHRASE = re.compile(r"\b(?:every|each|per|a|once a)\s+(hour|day|night|week|month|quarter|year)\b", re.I)
_FREQ_NOUN = {"hour": "hourly", "day": "daily", "night": "daily", "week": "weekly",
              "month": "monthly", "quarter": "quarterly", "year": "yearly"}
_A_FEW = re.compile(r"\ba few\b", re.I)
_WORD = re.compile(r"[A-Za-z]+")
# "every Tuesday", "each morning": a time, not a quantity.
_TIME_NOUNS = frozenset({"day", "night", "week", "month", "quarter", "year", "hour", "time",
                         "morning", "afternoon", "evening", "weekend", "sprint", "release",
                         *WEEKDAYS, "other"})

_Value = tuple[str, str]  # (kind, normalised value)


def _num(text: str) -> float:
    return float(text.replace(",", ""))


def _fmt(value: float) -> str:
    return f"{value:g}"


def _context(text: str, start: int, end: int) -> set[str]:
    """Content stems of the words around a value (4 on each side): its slot."""
    words = [t for t in TOKEN.findall(text[:start]) if t[:1].isalpha()][-4:]
    words += [t for t in TOKEN.findall(text[end:]) if t[:1].isalpha()][:4]
    # Month and weekday names stay: "March 22 at 3 PM" / "March 22 at 4:30 PM" share a slot.
    return {stem(w) for w in words
            if w.lower() not in STOP_WORDS and w.lower() not in NEGATION_CUES
            and (w.lower() not in VALUE_WORDS or w.lower() in MONTHS
                 or w.lower().rstrip("s") in WEEKDAYS)}


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
        return "date", f"{MONTHS[m.group(4).lower()]}-{int(m.group(5))}"
    if m.group(7):
        return "date", f"{MONTHS[m.group(8).lower()]}-{int(m.group(7))}"
    if m.group(9):
        return "weekday", m.group(9).lower()
    if m.group(10) and (m.group(10)[0].isupper() or m.group(11)):
        return "month", f"{MONTHS[m.group(10).lower()]}"
    return None


def _percent(m: re.Match[str]) -> _Value | None:
    return "percent", _fmt(_num(m.group(1)))


def _money(m: re.Match[str]) -> _Value | None:
    amount = _num(m.group(1) or m.group(3))
    scale = (m.group(2) or m.group(4) or "").lower()
    return "money", _fmt(amount * SCALE.get(scale, 1))


def _version(m: re.Match[str]) -> _Value | None:
    if m.group(1):
        return "version", m.group(1)
    named = _NAME_BEFORE.search(m.string[max(0, m.start() - 40):m.start()])
    return ("version", m.group(2)) if m.group(2).count(".") > 1 or named else None


def _identifier(m: re.Match[str]) -> _Value | None:
    value = m.group(0).lower().rstrip("/")
    return None if value in _NOT_IDENTIFIERS else ("identifier", value)


def _number(m: re.Match[str]) -> _Value | None:
    scale = 1000 if m.group(2) else SCALE.get((m.group(3) or "").lower(), 1)
    unit = UNITS.get((m.group(4) or "").lower())
    value = _fmt(_num(m.group(1)) * scale)
    return "number", f"{value} {unit}" if unit else value


def _frequency_phrase(m: re.Match[str]) -> _Value | None:
    return "frequency", _FREQ_NOUN[m.group(1).lower()]


def _word_value(low: str, following: str) -> _Value | None:
    if low in FREQUENCY:
        return "frequency", FREQUENCY[low]
    if low in COLOURS:
        return "colour", low
    if low in NUMBER_WORDS:
        return "number", _fmt(NUMBER_WORDS[low])
    if low in QUANTIFIERS and not (low in ("every", "each") and following in _TIME_NOUNS):
        return "quantifier", QUANTIFIERS[low]
    if low in DAYPARTS:
        return "daypart", DAYPARTS[low]
    if low in ORDINALS:
        return "ordinal", low
    if low in WORD_UNITS:
        return "unit", WORD_UNITS[low]
    return None


# Read in this order; each pattern's matches are blanked out before the next one is read.
_PATTERNS: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], _Value | None]], ...] = (
    (_HEX, _hex), (_TIME, _time), (_DATE, _date), (_PERCENT, _percent), (_MONEY, _money),
    (_VERSION, _version), (_IDENTIFIER, _identifier), (_NUMBER, _number),
)


def _blanked(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with spaces over each span, so that offsets into the text stay valid."""
    if not spans:
        return text
    parts, last = [], 0
    for start, end in spans:
        parts += [text[last:start], " " * (end - start)]
        last = end
    return "".join(parts) + text[last:]


def value_spans(text: str) -> list[Span]:
    """Every typed value in ``text`` (kinds in the module's order), in order of position.

    >>> [(s.kind, s.value) for s in value_spans("Bump us-east-1 to 16 GB every Tuesday")]
    [('identifier', 'us-east-1'), ('number', '16 gb'), ('weekday', 'tuesday')]
    """
    spans: list[Span] = []
    rest = text
    for pattern, read in _PATTERNS:
        blanks = []
        for m in pattern.finditer(rest):
            found = read(m)
            if found is not None:
                spans.append(Span(found[0], found[1], m.start(), m.end()))
                blanks.append((m.start(), m.end()))
        rest = _blanked(rest, blanks)
    for m in _FREQ_PHRASE.finditer(text):
        spans.append(Span("frequency", _FREQ_NOUN[m.group(1).lower()], m.start(), m.end()))
    found_few = [(m.start(), m.end()) for m in _A_FEW.finditer(rest)]
    spans += [Span("quantifier", "few", a, b) for a, b in found_few]
    rest = _blanked(rest, found_few)
    for m in _WORD.finditer(rest):
        after = _WORD.search(text, m.end())
        found = _word_value(m.group(0).lower(), after.group(0).lower().rstrip("s") if after else "")
        if found is not None:
            spans.append(Span(found[0], found[1], m.start(), m.end()))
    return sorted(spans, key=lambda s: (s.start, s.end))


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
    for span in value_spans(clause):
        values.setdefault(span.kind, set()).add(span.value)
        slots.setdefault((span.kind, span.value), set()).update(
            _context(clause, span.start, span.end))
    return values, slots
