"""Does a new statement contradict (correct) an old one about the same thing?

No LLM and not a bare word list: the two texts are compared slot by slot.

* negation flip    one side negates ("not", "never", "no longer", "n't") what the other asserts;
* changed number   both carry numbers/quantities/versions and they differ;
* changed date     both carry dates, weekdays, months or times and they differ;
* changed name     both carry proper nouns in otherwise shared wording and they differ;
* antonym          a verb or adjective flips to its opposite (likes/hates, enabled/disabled);
* change marker    the new text says it replaces something ("now", "instead", "moved to",
                   "switched to", "no longer", "actually", "correction", ...) while the old
                   text has content the new one drops.

Every rule also requires the two texts to share context (content-word overlap), so two
unrelated sentences with different numbers are not a contradiction.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*|\d+(?:[.,:]\d+)*")
_NUMBER = re.compile(r"(?<![\w.])[$€£]?\d+(?:[.,:]\d+)*\s?(?:%|k|m|gb|mb|tb|ms|s|h|am|pm|usd|eur)?\b", re.I)
_MONTHS = ("january february march april may june july august september october november "
           "december jan feb mar apr jun jul aug sep sept oct nov dec").split()
_DAYS = "monday tuesday wednesday thursday friday saturday sunday".split()
_DATE = re.compile(
    r"\b(\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}(?:/\d{2,4})?|(?:%s)\.?(?:\s+\d{1,2}(?:st|nd|rd|th)?)?"
    r"(?:,?\s+\d{4})?|%s|today|tomorrow|yesterday|tonight|next week|last week)\b"
    % ("|".join(_MONTHS), "|".join(_DAYS)),
    re.I,
)
_NEGATION = re.compile(
    r"\b(not|no|never|none|nobody|nothing|neither|nor|without|no longer|cannot|can't|won't|"
    r"don't|doesn't|didn't|isn't|aren't|wasn't|weren't|shouldn't|haven't|hasn't)\b|n't\b", re.I)
_CHANGE = re.compile(
    r"\b(now|instead|no longer|not anymore|anymore|moved to|moving to|switched to|switching to|"
    r"changed to|changed from|changed|replaced|replacing|actually|correction|corrected|"
    r"updated|update:|from now on|these days|nowadays|rather than|migrated to|renamed)\b", re.I)
_ANTONYMS = [
    ("like", "dislike"), ("likes", "dislikes"), ("love", "hate"), ("loves", "hates"),
    ("prefer", "avoid"), ("prefers", "avoids"), ("enable", "disable"), ("enabled", "disabled"),
    ("true", "false"), ("yes", "no"), ("allow", "deny"), ("allowed", "denied"),
    ("accept", "reject"), ("accepted", "rejected"), ("open", "closed"), ("on", "off"),
    ("always", "never"), ("increase", "decrease"), ("increased", "decreased"),
    ("start", "stop"), ("started", "stopped"), ("pass", "fail"), ("passed", "failed"),
    ("working", "broken"), ("online", "offline"), ("available", "unavailable"),
    ("vegetarian", "vegan"), ("remote", "office"),
]
_ANTONYM = {a: b for a, b in _ANTONYMS} | {b: a for a, b in _ANTONYMS}
_STOP = frozenset(
    "a an the and or but of to in on at for with by from as is are was were be been being it its "
    "this that these those i you he she we they my your his her our their me him us them do does "
    "did have has had will would can could should shall may might must so just also very really "
    "about into than then there here what which who whom when where why how all any some".split()
)
SHARED_CONTEXT = 0.25
# The "[Updated YYYY-MM-DD]" marks that UPDATE merges leave in a memory's content.
_UPDATE_TAG = re.compile(r"\[Updated \d{4}-\d{2}-\d{2}\]")


@dataclass(frozen=True)
class Contradiction:
    """The verdict, which rule fired, and the differing parts."""

    is_contradiction: bool
    kind: str | None = None
    evidence: str = ""


def _content_words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text) if w.lower() not in _STOP and not w[0].isdigit()}


def _overlap(a: set[str], b: set[str]) -> float:
    return len(a & b) / min(len(a), len(b)) if a and b else 0.0


def _numbers(text: str) -> set[str]:
    out = set()
    for m in _NUMBER.finditer(text):
        value = m.group(0).lower().replace(",", "").replace(" ", "")
        if not _DATE.fullmatch(m.group(0)):
            out.add(value)
    return out


def _dates(text: str) -> set[str]:
    return {m.group(0).lower().rstrip(".") for m in _DATE.finditer(text)}


def _names(text: str) -> set[str]:
    names = set()
    for sentence in re.split(r"(?<=[.!?])\s+", text):
        words = _WORD.findall(sentence)
        for i, w in enumerate(words):
            if i > 0 and w[0].isupper() and w.lower() not in _STOP and w.lower() not in _MONTHS \
                    and w.lower() not in _DAYS and w != "I":
                names.add(w)
    return names


def _negated(text: str) -> bool:
    return bool(_NEGATION.search(text))


def detect(old: str, new: str) -> Contradiction:
    """Whether ``new`` contradicts or corrects ``old`` (see the module docstring)."""
    old, new = _UPDATE_TAG.sub(" ", old), _UPDATE_TAG.sub(" ", new)
    old_words, new_words = _content_words(old), _content_words(new)
    shared = _overlap(old_words, new_words)
    if shared < SHARED_CONTEXT:
        return Contradiction(False, None, f"little shared context ({shared:.2f})")
    if _negated(old) != _negated(new):
        return Contradiction(True, "negation", "one statement negates the other")
    for word in new_words:
        opposite = _ANTONYM.get(word)
        if opposite and opposite in old_words and word not in old_words:
            return Contradiction(True, "antonym", f"{opposite!r} -> {word!r}")
    old_nums, new_nums = _numbers(old), _numbers(new)
    if old_nums and new_nums and old_nums != new_nums and not new_nums <= old_nums:
        return Contradiction(True, "number", f"{sorted(old_nums)} -> {sorted(new_nums)}")
    old_dates, new_dates = _dates(old), _dates(new)
    if old_dates and new_dates and old_dates != new_dates and not new_dates <= old_dates:
        return Contradiction(True, "date", f"{sorted(old_dates)} -> {sorted(new_dates)}")
    old_names, new_names = _names(old), _names(new)
    if old_names and new_names and (new_names - old_names) and (old_names - new_names):
        return Contradiction(True, "name", f"{sorted(old_names - new_names)} -> "
                                           f"{sorted(new_names - old_names)}")
    if _CHANGE.search(new) and not _CHANGE.search(old) and (old_words - new_words):
        return Contradiction(True, "change_marker", _CHANGE.search(new).group(0))
    return Contradiction(False, None, "no conflicting slot")
