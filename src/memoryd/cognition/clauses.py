"""What one clause says, read for the contradiction detector.

Pure Python + regex, no model. :func:`split_clauses` cuts a text into clauses (at sentence
ends, semicolons, line breaks and "but", "whereas", "although", "though") after removing the
``[Updated YYYY-MM-DD]`` marks that UPDATE merges leave. :func:`read_clause` reads one clause
into a :class:`Clause`:

* the stem of each content word (stop words and negation cues have none; numbers keep their
  digits);
* the names in it (capitalised words that are no stop word, value word or short acronym; a
  sentence-initial capital only when the other text capitalises it mid-sentence or it looks
  like a product name) and each name's slot, the nearest content word on either side;
* the scope of each negation cue ("not", "never", "no longer", "n't", ...): the content words
  among the next few words up to punctuation, "but" or "and". Hedges ("not sure", "don't
  know") are no negation, and a second cue in the scope cancels the first ("never ...
  without" asserts);
* its typed values and their slots (:func:`memoryd.cognition.slots.values_and_slots`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memoryd.cognition.slots import VALUE_WORDS, Slots, Values, values_and_slots
from memoryd.cognition.words import NEGATION_CUES, STOP_WORDS, TOKEN, stem

__all__ = ["Clause", "is_name", "read_clause", "split_clauses"]

_UPDATE_TAG = re.compile(r"\[Updated \d{4}-\d{2}-\d{2}\]")
_CLAUSE_SPLIT = re.compile(r"(?<=[.!?;])\s+|\n+|;\s*|\s+(?:but|whereas|although|though)\s+", re.I)
# "not sure", "don't know", "can't wait": hedges and idioms, not negated content.
_HEDGE_AFTER_CUE = frozenset(
    "sure certain know understand clear idea exactly quite wait only problem worries matter "
    "doubt".split())


@dataclass
class Clause:
    """One clause as the detector compares it."""

    text: str
    tokens: list[str]
    stems: list[str | None]  # per token; None for stop words, punctuation and numbers
    names: set[str]
    values: Values
    slots: Slots
    negated: set[str]  # stems inside a negation cue's scope
    has_negation: bool
    predicates: list[str]  # first content word after each negation cue ("not [like]")
    name_slots: dict[str, set[str]]  # content words around each name

    @property
    def content(self) -> set[str]:
        """The content stems of the clause."""
        return {s for s in self.stems if s}


def split_clauses(text: str) -> list[str]:
    """The clauses of ``text``, without ``[Updated ...]`` marks.

    >>> split_clauses("We use Stripe. [Updated 2024-05-01] Payouts are weekly but slow")
    ['We use Stripe.', 'Payouts are weekly', 'slow']
    """
    text = _UPDATE_TAG.sub(" ", text)
    return [c.strip() for c in _CLAUSE_SPLIT.split(text) if c and re.search(r"[A-Za-z0-9]", c)]


def is_name(token: str, index: int, first_word_index: int, other_text: str) -> bool:
    """Whether ``token`` (at ``index``; the first word is at ``first_word_index``) is a name:
    a capitalised word that is no stop word, value word or short acronym (see the module)."""
    if not token[:1].isupper() or token.lower() in STOP_WORDS or token.lower() in VALUE_WORDS:
        return False
    if token.isupper() and len(token) <= 3:  # units and acronyms: KB, API, UTC, CDN
        return False
    if index != first_word_index:
        return True
    # A sentence-initial capital is a name only if the other text capitalises it mid-sentence
    # or it looks like a product name (inner capitals or digits).
    return bool(re.search(r"(?<![.!?]\s)(?<!^)\b" + re.escape(token) + r"\b", other_text)) or (
        any(c.isupper() for c in token[1:]) or any(c.isdigit() for c in token)
    )


def _neighbours(tokens: list[str], i: int) -> set[str]:
    """The nearest content word on each side of token ``i`` (a name's slot: "located in
    [Frankfurt]" -> {locat})."""
    def content(t: str) -> bool:
        low = t.lower()
        return t[:1].isalpha() and low not in STOP_WORDS and low not in NEGATION_CUES \
            and low not in VALUE_WORDS

    before = next((t for t in reversed(tokens[:i]) if content(t)), None)
    after = next((t for t in tokens[i + 1:] if content(t)), None)
    return {stem(t) for t in (before, after) if t}


def _stems_and_names(
    tokens: list[str], other_text: str
) -> tuple[list[str | None], set[str], dict[str, set[str]]]:
    """The stem of each token, the names among them, and each name's slot."""
    stems: list[str | None] = []
    names: set[str] = set()
    name_slots: dict[str, set[str]] = {}
    first_word = next((i for i, t in enumerate(tokens) if t[:1].isalpha()), -1)
    for i, tok in enumerate(tokens):
        low = tok.lower().replace("’", "'")
        if tok[:1].isdigit() or tok[:1] in "$€£":
            stems.append(low.lstrip("$€£").replace(",", "").rstrip("%"))
            continue
        if not tok[:1].isalpha() or low in STOP_WORDS or low in NEGATION_CUES:
            stems.append(None)
            continue
        if is_name(tok, i, first_word, other_text):
            name = re.sub(r"['’]s$", "", tok.lower())
            names.add(name)
            name_slots.setdefault(name, set()).update(_neighbours(tokens, i))
        stems.append(stem(tok))
    return stems, names, name_slots


def _cue_scope(
    tokens: list[str], lowered: list[str], stems: list[str | None], i: int, window: int
) -> tuple[list[str], str | None] | int:
    """The stems a negation cue at ``i`` covers and its predicate (the first content word),
    or the index of a second cue that cancels it ("never ... without": a double negative
    asserts, and neither cue negates)."""
    scope: list[str] = []
    predicate: str | None = None
    seen = 0
    for j in range(i + 1, len(tokens)):
        if tokens[j] in ",.;:!?" or lowered[j] in ("but", "and"):
            break
        if lowered[j] in NEGATION_CUES or lowered[j].endswith("n't"):
            return j
        if tokens[j][:1].isalnum():
            seen += 1
            if stems[j]:
                scope.append(stems[j])  # type: ignore[arg-type]
                if predicate is None and tokens[j][:1].isalpha():
                    predicate = lowered[j]
        if seen >= window:
            break
    return scope, predicate


def _negation(
    tokens: list[str], stems: list[str | None], window: int
) -> tuple[set[str], bool, list[str]]:
    """(stems in some negation cue's scope, whether any cue negates, the cues' predicates)."""
    negated: set[str] = set()
    predicates: list[str] = []
    has_negation = False
    cancelled: set[int] = set()
    lowered = [t.lower().replace("’", "'") for t in tokens]
    for i, low in enumerate(lowered):
        if i in cancelled:
            continue
        cue = low in NEGATION_CUES or low.endswith("n't") or (
            low == "longer" and i > 0 and lowered[i - 1] == "no")
        if not cue:
            continue
        following = [t for t in lowered[i + 1:i + 3] if t[:1].isalpha()]
        if any(t in _HEDGE_AFTER_CUE for t in following):
            continue
        covered = _cue_scope(tokens, lowered, stems, i, window)
        if isinstance(covered, int):
            cancelled.add(covered)
            continue
        scope, predicate = covered
        has_negation = True
        negated.update(scope)
        if predicate:
            predicates.append(predicate)
    return negated, has_negation, predicates


def read_clause(text: str, other_text: str, negation_window: int) -> Clause:
    """Read one clause; ``other_text`` (the text it is compared with) tells whether a
    sentence-initial capital is a name, and ``negation_window`` is how many words after a
    negation cue it covers.

    >>> clause = read_clause("The user does not drink coffee at Starbucks", "", 6)
    >>> clause.name_slots, sorted(clause.negated), clause.predicates
    ({'starbucks': {'coffe'}}, ['coffe', 'drink', 'starbuck'], ['drink'])
    """
    tokens = TOKEN.findall(text)
    stems, names, name_slots = _stems_and_names(tokens, other_text)
    negated, has_negation, predicates = _negation(tokens, stems, negation_window)
    values, slots = values_and_slots(text)
    return Clause(text, tokens, stems, names, values, slots, negated, has_negation, predicates,
                  name_slots)
