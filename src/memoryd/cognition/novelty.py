"""What a new text adds to, drops from or changes in an old one: the ingest gate's reading.

Pure Python + regex, no model. :func:`read` turns a text into *units*, in order: each typed
value of :func:`memoryd.cognition.slots.value_spans` is one unit (``number:5432``,
``identifier:release/next``), each name one (``name:stripe``) and each other content word its
stem, spelled one way ("DB" and "database", "favourite" and "favorite" are one unit). Stop
words, fillers ("noted", "again", "the user said") and change markers ("now", "moved",
"increased", ...) are no units; negation cues and negative words ("against", "without",
"blocked") are kept apart as the text's *polarity*. A leading speaker label ("User: ...",
"Emi: ...") is read as the speaker.

:func:`compare` aligns the two unit sequences (``difflib``) and reports what the new text adds
(``added``), what it leaves out of the old (``dropped``), which plain words it puts where the
old had others (``swapped``), which value *families* it replaces (a time by another time, a
name by another name, a number by another number) and whether it reverses an ordered pair
("tabs over spaces" / "spaces over tabs"). The gate asks three questions of it:

* :func:`restates`: the new text adds nothing (no value, name or word the old lacks, the same
  speaker and polarity): a REINFORCE;
* :func:`elaborates`: the new text keeps everything of the old and adds detail: an UPDATE;
* :func:`changes_one_value`: the same statement with one value replaced ("... on port 5432" /
  "... listens on port 5433"): the old one's frame is kept (nothing but that slot dropped,
  nothing inserted before it, the subject unchanged) and one family changed: a SUPERSEDE.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, replace
from difflib import SequenceMatcher
from functools import lru_cache

from memoryd.cognition.clauses import is_name, split_clauses
from memoryd.cognition.equivalents import canonical
from memoryd.cognition.gate_words import (
    ENDINGS,
    FILLERS,
    LABELS,
    MARKERS,
    NEUTRAL,
    QUALIFIER,
    REVERSALS,
)
from memoryd.cognition.slots import value_spans
from memoryd.cognition.words import NEGATION_CUES, NEGATIVE_WORDS, STOP_WORDS, TOKEN

__all__ = ["Comparison", "Reading", "compare", "read"]

SPEAKER = re.compile(r"^\s*([A-Za-z][\w'’.-]*(?: [A-Za-z][\w'’.-]*){0,2}):\s+(?=\S)")
_ORDERED = re.compile(r"\b([\w-]+)\s+(?:over|rather than|instead of|than|vs\.?|versus)\s+"
                      r"(?:the\s+|a\s+|an\s+)?([\w-]+)", re.I)
_UPDATE_TAG = re.compile(r"\[Updated \d{4}-\d{2}-\d{2}\]")
FAMILIES = {"time": "when", "date": "when", "weekday": "when", "month": "when",
            "daypart": "when", "frequency": "when", "number": "amount", "percent": "amount",
            "money": "amount"}
"""Value kinds that describe one slot together: a date may become a weekday."""

# Words that open a reason or a time after a changed value ("... to 9 nodes after the
# launch", "... since the audit"): what follows them qualifies the change, not the subject.
_CONNECTIVE = re.compile(r"\b(after|since|because|due|following|thanks|once|when|while|now|"
                         r"this|these|from|starting|effective|until|so|given|as of|again|"
                         r"instead|for now|to support|to allow)\b", re.I)

Unit = tuple[str, str]  # (kind, key): kind "word", "name" or a value kind


@dataclass(frozen=True)
class Reading:
    """A text as the gate compares it."""

    speaker: str | None
    units: tuple[Unit, ...]
    spans: tuple[tuple[int, int], ...]  # where each unit stands in ``body``
    qualified: tuple[bool, ...]  # whether each unit is in a reason or time clause
    body: str  # the text without its speaker label
    polarity: int  # clauses that say "no" (an odd number of negation cues and negative words)
    clauses: int
    asks: bool  # holds a question
    marked: bool  # says that something changed ("now", "moved to", "increased", ...)
    ends: bool  # says that an earlier state ended ("stopped", "left", "instead", ...)
    spellings: tuple[tuple[int, str], ...] = ()  # (unit index, lower-case word) of plain words


def family(kind: str) -> str:
    """The value family of a unit kind (a kind is its own family unless grouped)."""
    return FAMILIES.get(kind, kind)


def _speaker(text: str) -> tuple[str | None, str]:
    m = SPEAKER.match(text)
    if not m:
        return None, text
    label = m.group(1).lower()
    if label in LABELS:
        return None, text[m.end():]
    return label, text[m.end():]


def _word_units(text: str) -> tuple[list[tuple[tuple[int, int], tuple[str, ...]]], int,
                                     bool, bool]:
    """(span, unit) of the names and content words of ``text`` (values blanked out), how
    many of its clauses say "no" (two cues in one clause cancel: "can't ... without"),
    whether it carries a change marker and whether it says that a state ended."""
    units: list[tuple[tuple[int, int], tuple[str, ...]]] = []  # (kind, key[, name])
    polarity = cues = 0
    marked = ends = False
    tokens = [(m.start(), m.group(0)) for m in TOKEN.finditer(text)]
    starts = True  # the next word begins a sentence (its capital says nothing)
    for i, (pos, tok) in enumerate(tokens):
        initial, starts = starts, tok in ".!?" or (starts and not tok[:1].isalpha())
        if i and "\n" in text[tokens[i - 1][0]:pos]:
            initial = True
        low = tok.lower().replace("’", "'")
        if tok in ".;!?" or low == "but":
            polarity, cues = polarity + cues % 2, 0
        if not tok[:1].isalpha():
            continue
        if low in NEGATION_CUES or low.endswith("n't") or low in NEGATIVE_WORDS:
            cues += 1
            continue
        ends = ends or low in ENDINGS
        if low in MARKERS:
            marked = True
            continue
        if low in STOP_WORDS or low in FILLERS or low in NEUTRAL:
            continue
        marked = marked or low in REVERSALS
        span, name = (pos, pos + len(tok)), re.sub(r"['’]s$", "", low)
        if is_name(tok, 1, 0 if initial else -1, ""):
            units.append((span, ("name", name)))
        else:
            # A first word, or a word written in lower case, may be a name of the other text.
            units.append((span, ("word", canonical(low), name)))
    return units, polarity + cues % 2, marked, ends


@lru_cache(maxsize=1024)
def read(text: str) -> Reading:
    """Read ``text`` (cached: a stored memory is read again for every write near it). A
    capitalised word that begins a sentence is a name only when it looks like a product name
    ("iPhone", "S3").

    >>> r = read("User: The staging DB doesn't run on port 5432 now")
    >>> r.speaker, [key for _, key in r.units], r.polarity
    ('user', ['stag', 'databas', 'run', 'port', '5432'], 1)
    """
    speaker, body = _speaker(_UPDATE_TAG.sub(" ", text))
    spans = value_spans(body)
    blanked = list(body)
    for s in spans:
        blanked[s.start:s.end] = " " * (s.end - s.start)
    words, polarity, marked, ends = _word_units("".join(blanked))
    values: list[tuple[tuple[int, int], tuple[str, ...]]] = [
        ((s.start, s.end), (s.kind, s.value)) for s in spans]
    ordered = sorted(words + values, key=lambda su: su[0])
    clauses = [m.span() for m in QUALIFIER.finditer(body)]
    qualified = tuple(any(a <= sp[0] < b for a, b in clauses) for sp, _ in ordered)
    spellings = tuple((i, u[2]) for i, (_, u) in enumerate(ordered) if len(u) == 3)
    return Reading(speaker, tuple((u[0], u[1]) for _, u in ordered),
                   tuple(sp for sp, _ in ordered),
                   qualified, body, polarity, len(split_clauses(body)), "?" in body, marked,
                   ends, spellings)


def _with_names(r: Reading, names: set[str]) -> Reading:
    """``r`` with its plain words that the other text writes as names read as names
    ("Stripe handles payments" / "payments go through Stripe", "cloudflare" / "Cloudflare")."""
    found = {i: name for i, name in r.spellings if name in names}
    if not found:
        return r
    units = tuple(("name", found[i]) if i in found else u for i, u in enumerate(r.units))
    return replace(r, units=units)


@dataclass(frozen=True)
class Comparison:
    """How a new text differs from an old one (see the module docstring)."""

    old: Reading
    new: Reading
    added: tuple[Unit, ...]  # units of the new text the old lacks
    dropped: tuple[Unit, ...]  # units of the old text the new lacks
    swapped: int  # plain words of the new text standing where the old had others
    changed: frozenset[str]  # value families whose values the new text replaces
    reversed: bool  # an ordered pair of the old text turned round
    frame: Frame | None = field(default=None)  # set when exactly one family changed

    @property
    def same_speaker(self) -> bool:
        return self.old.speaker is None or self.new.speaker is None \
            or self.old.speaker == self.new.speaker

    @property
    def same_polarity(self) -> bool:
        return self.old.polarity == self.new.polarity


@dataclass(frozen=True)
class Frame:
    """The plain edits around the one changed slot: ``start`` is where the slot begins in the
    old text; old words replaced by others (``swapped``), left out (``dropped``) or new words
    put before the slot's end (``inserted``; words after it are a trailing addition, "...
    after code splitting"), and values added or dropped outside the slot (``values_moved``)."""

    start: int
    swapped: int
    dropped: int
    inserted: int
    values_moved: int
    head_changed: bool  # an edit outside the slot touches the old text's first unit
    swaps: tuple[tuple[str, str], ...] = ()  # (old word, new word) of each swap


def _is_value(unit: Unit) -> bool:
    return unit[0] not in ("word",)


def _multiset_minus(a: tuple[Unit, ...], b: tuple[Unit, ...]) -> tuple[Unit, ...]:
    rest = Counter(b)
    out = []
    for u in a:
        if rest[u]:
            rest[u] -= 1
        else:
            out.append(u)
    return tuple(out)


def _reversed_pair(old: str, new: str) -> bool:
    pairs = {(canonical(a.lower()), canonical(b.lower())) for a, b in _ORDERED.findall(old)}
    return any((canonical(b.lower()), canonical(a.lower())) in pairs
               for a, b in _ORDERED.findall(new) if a.lower() != b.lower())


def compare(old: str, new: str) -> Comparison:
    """How ``new`` differs from ``old`` (units, swaps, changed values, the frame).

    >>> c = compare("The staging DB runs on port 5432.",
    ...             "The staging database listens on port 5433.")
    >>> c.added, c.dropped, sorted(c.changed)
    ((('word', 'listen'), ('number', '5433')), (('word', 'run'), ('number', '5432')), ['amount'])
    >>> c.frame.start, c.frame.swaps, c.frame.inserted, c.frame.head_changed
    (4, (('run', 'listen'),), 0, False)
    """
    a, b = read(old), read(new)
    a = _with_names(a, {k for kind, k in b.units if kind == "name"})
    b = _with_names(b, {k for kind, k in a.units if kind == "name"})
    ops = SequenceMatcher(None, a.units, b.units, autojunk=False).get_opcodes()
    swapped = 0
    changed: set[str] = set()
    slot_ops = []
    old_set, new_set = set(a.units), set(b.units)
    for tag, i1, i2, j1, j2 in ops:
        if tag != "replace":
            continue
        old_part, new_part = a.units[i1:i2], b.units[j1:j2]
        swapped += min(sum(not _is_value(u) for u in old_part),
                       sum(not _is_value(u) for u in new_part))
        # A value is replaced when it is gone from the new text ("..., not Maria" keeps it).
        families = {family(u[0]) for u in old_part if _is_value(u) and u not in new_set} \
            & {family(u[0]) for u in new_part if _is_value(u) and u not in old_set}
        if families:
            changed |= families
            slot_ops.append((i1, i2, j1, j2))
    frame = _frame(a, b, ops, slot_ops[0]) if len(changed) == 1 and len(slot_ops) == 1 else None
    return Comparison(a, b, _multiset_minus(b.units, a.units), _multiset_minus(a.units, b.units),
                      swapped, frozenset(changed), _reversed_pair(old, new), frame)


def _frame(a: Reading, b: Reading, ops: list[tuple[str, int, int, int, int]],
           slot: tuple[int, int, int, int]) -> Frame:
    """The edits outside the one changed value (and the plain words inside its slot).
    Words of a reason or time clause ("after adding two new projects") are no edit."""
    swapped = dropped = inserted = values_moved = 0
    head_changed = False
    swaps: list[tuple[str, str]] = []
    last_value = max(j for j in range(slot[2], slot[3]) if _is_value(b.units[j]))
    trailing: list[int] = []  # new words after the changed value
    for tag, o1, o2, n1, n2 in ops:
        if tag == "equal":
            continue
        old_idx = [i for i in range(o1, o2) if not a.qualified[i]]
        new_idx = [j for j in range(n1, n2) if not b.qualified[j]]
        if (o1, o2, n1, n2) != slot:
            head_changed = head_changed or (o1 == 0 and bool(old_idx))
            values_moved += sum(_is_value(a.units[i]) for i in old_idx) \
                + sum(_is_value(b.units[j]) for j in new_idx)
        old_plain = [i for i in old_idx if not _is_value(a.units[i])]
        new_plain = [j for j in new_idx if not _is_value(b.units[j])]
        after = [j for j in new_plain if j > last_value]
        before = len(new_plain) - len(after)
        swaps += [(a.units[i][1], b.units[j][1]) for i, j in zip(old_plain, new_plain[:before])]
        swapped += min(len(old_plain), before)
        dropped += max(0, len(old_plain) - before)
        inserted += max(0, before - len(old_plain))
        trailing += after
    if trailing and not _qualifies_change(b, last_value, trailing):
        inserted += len(trailing)
    return Frame(slot[0], swapped, dropped, inserted, values_moved, head_changed, tuple(swaps))


def _qualifies_change(b: Reading, last_value: int, trailing: list[int]) -> bool:
    """Whether the words after the changed value give a reason or a time ("... after the
    redesign"), or are a single word, rather than narrow the subject ("... for analytics")."""
    gap = b.body[b.spans[last_value][1]:b.spans[trailing[0]][1]]
    return len(trailing) <= 1 or bool(_CONNECTIVE.search(gap))
