"""Does a new statement contradict (make false) an old one about the same thing?

Pure Python + regex, no model. The texts are cut into clauses, each new clause is aligned
with the old clause it shares most content words with, and aligned pairs are compared slot by
slot. Rules, in order (the first that fires wins):

1. ``negation``: exactly one side carries a negation cue ("not", "never", "no longer",
   "n't", "without", ...) and a content word the two clauses share lies in that cue's scope
   (the next few words up to punctuation): "Carol drinks coffee" / "Carol does not drink
   coffee anymore"; "Payments go through Stripe" / "... through Adyen, not Stripe".
2. ``antonym``: a word flips to its opposite with the same polarity (enabled/disabled,
   likes/dislikes, open/closed, mandatory/optional, ...); "does not like" vs "dislikes"
   is agreement, not a flip.
3. ``correction``: an explicit correction ("actually", "correction", "turns out",
   "was wrong") on an aligned clause that changes something.
4. value slots: both clauses carry values of the same type and the new one replaces a value
   of the old (``number``, ``percent``, ``money``, ``version``, ``time``, ``date``,
   ``frequency``, ``colour``, ``hex``) while the rest of the old clause is kept (at most one
   other content word dropped). If the new clause also carries a progression cue
   ("increased to", "grew", "dropped to", "pushed back", "so far", ...) the change is a later
   state of the same quantity, not a contradiction: the verdict is
   ``Contradiction(False, "progression", ...)`` and gating treats it as an update.
5. ``name``: a proper noun is replaced by another in the same slot (the nearest content
   word before or after them is the same) of an otherwise kept clause ("The server is in Frankfurt" /
   "... in Dublin"), unless the new text is additive ("also", "another", "second").
6. ``change_marker``: the new text says it replaces something ("no longer", "instead",
   "switched to", "moved to", "changed to", "stopped", "sold", "left", ...) and either shares
   two content words with the old clause or substitutes a name or value. Weak markers ("now",
   "these days", "updated") need a substitution: a dropped word and an added one.

Rules 4-6 are skipped when the new clause is about a different subject: its head noun (the
first content word, or the possessed noun in "the user's sister") does not occur in the old
clause ("The user lives in Paris" / "The user's sister lives in Madrid").

``[Updated YYYY-MM-DD]`` marks left by UPDATE merges are removed before comparing, and ties
in alignment go to the later clause (the most recent state of a merged memory).

This module aligns clauses and applies the rules. Reading a clause (stems, names, negation
scope) is :mod:`memoryd.cognition.clauses`; its typed values and their slots are
:mod:`memoryd.cognition.slots`; tokens, stop words and stems are :mod:`memoryd.cognition.words`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from memoryd.cognition.clauses import Clause, read_clause, split_clauses
from memoryd.cognition.equivalents import canonical
from memoryd.cognition.slots import VALUE_STEMS, VALUE_WORDS
from memoryd.cognition.words import NEGATIVE_WORDS, stem

__all__ = ["Contradiction", "ContradictionParams", "are_opposites", "detect"]


@dataclass(frozen=True)
class Contradiction:
    """The verdict, which rule decided it, and the words that differ.

    ``kind`` is set for contradictions and also for the one non-contradiction worth
    reporting, ``"progression"`` (a later value of the same quantity).
    """

    is_contradiction: bool
    kind: str | None = None
    evidence: str = ""


@dataclass(frozen=True)
class ContradictionParams:
    """Tunables of the detector.

    min_overlap: share of the smaller clause's content words the two clauses must share to
        be compared at all (0.3; one word of a three-word clause) ...
    min_shared: ... or this many shared content words (2), so that long chat sentences,
        which share a small share of many words, can still be compared.
    max_dropped / max_dropped_share: other content words of the old clause the new one may
        drop while a value or name swap still counts as "the same slot": the larger of 1
        (allows a changed verb, "is" -> "moved") and 34% of the old clause's content words.
        Values must also share a slot: a content word among the four words on either side.
    long_clause: old clauses with at least this many content words (8) skip the "rest is
        kept" test for values: in long chat sentences most words are incidental.
    negation_window: words after a negation cue that it covers (6).
    """

    min_overlap: float = 0.3
    min_shared: int = 2
    max_dropped: int = 1
    max_dropped_share: float = 0.34
    long_clause: int = 8
    negation_window: int = 6


DEFAULT_PARAMS = ContradictionParams()

# Counted for alignment but not as strong shared context: nearly every memory mentions them.
_WEAK_SUBJECTS = frozenset({"user", "users", "team", "project"})
_ANTONYMS = (
    ("like", "dislike"), ("love", "hate"), ("like", "hate"), ("enjoy", "hate"), ("enable", "disable"), ("enabled", "disabled"),
    ("open", "closed"), ("open", "close"), ("required", "optional"), ("mandatory", "optional"),
    ("allow", "forbid"), ("allowed", "forbidden"), ("allow", "deny"), ("allowed", "denied"),
    ("accept", "reject"), ("accepted", "rejected"), ("include", "exclude"),
    ("included", "excluded"), ("always", "never"), ("public", "private"), ("true", "false"),
    ("success", "failure"), ("succeeded", "failed"), ("pass", "fail"), ("passed", "failed"),
    ("online", "offline"), ("available", "unavailable"), ("active", "inactive"),
    ("supported", "unsupported"), ("dark", "light"), ("sync", "async"),
    ("synchronous", "asynchronous"), ("internal", "external"), ("safe", "unsafe"),
    ("valid", "invalid"), ("visible", "hidden"), ("on", "off"), ("remote", "onsite"),
    ("start", "stop"), ("started", "stopped"), ("approved", "rejected"), ("win", "lose"),
    ("won", "lost"), ("best", "worst"), ("before", "after"), ("encrypted", "unencrypted"),
    ("stable", "unstable"), ("permanent", "temporary"), ("free", "paid"),
    ("works", "broken"), ("working", "broken"), ("left", "right"), ("automatic", "manual"),
    ("automated", "manual"), ("public", "internal"), ("increase", "decrease"),
    ("increased", "decreased"), ("minimum", "maximum"), ("ascending", "descending"),
    ("early", "late"), ("earlier", "later"), ("upper", "lower"), ("more", "less"),
    ("more", "fewer"), ("higher", "lower"), ("faster", "slower"), ("allowlist", "denylist"),
    ("start", "end"), ("starts", "ends"), ("begin", "end"), ("begins", "ends"),
    ("first", "last"), ("input", "output"), ("read", "write"), ("import", "export"),
)
_OPPOSITE: dict[str, set[str]] = {}
for _a, _b in _ANTONYMS:
    _OPPOSITE.setdefault(_a, set()).add(_b)
    _OPPOSITE.setdefault(_b, set()).add(_a)
_OPPOSITE_FORMS = frozenset(frozenset((canonical(a), canonical(b))) for a, b in _ANTONYMS)


def are_opposites(a: str, b: str) -> bool:
    """Whether two words (as :func:`memoryd.cognition.equivalents.canonical` spells them)
    are opposites ("enabl"/"disabl", "start"/"end")."""
    return frozenset((a, b)) in _OPPOSITE_FORMS

_CORRECTION = re.compile(
    r"\b(actually|correction|corrected|turns? out|was wrong|were wrong|mistaken|by mistake|"
    r"misdiagnos\w*|not true|i misspoke|to clarify)\b", re.I)
_STRONG_CHANGE = re.compile(
    r"\b(no longer|not any ?more|any ?more|instead(?: of)?|rather than|"
    r"switch(?:ed|ing)? (?:to|from|over|back)|switched|moved|moving (?:to|from)|"
    r"changed (?:to|from|it to)|change (?:to|from)|replaced|replacing|replaces|"
    r"migrat(?:ed|ing)|stopped|quit|gave up|given up|"
    r"dropped (?!to\b|by\b|from\b|below\b|under\b)|discontinued|sold|took (?:it |them )?over|"
    r"taken over|renamed|retired|abandoned|ditched)\b"
    r"|\bleft (?=the\b|[A-Z])", re.I)
_WEAK_CHANGE = re.compile(r"\b(now|nowadays|these days|from now on|updated|at present|currently)\b", re.I)
_PROGRESSION = re.compile(
    r"\b(increas\w*|grew|grown|growing|rose|risen|rising|climb\w*|reach\w*|improv\w*|"
    r"drop(?:ped|s)? (?:to|by|from|below|under)|decreas\w*|fell|fallen|declin\w*|"
    r"went (?:up|down)|gone (?:up|down)|(?:up|down) (?:to|from|by)|rais(?:ed|ing)|"
    r"lower(?:ed|ing)|scal(?:ed|ing) (?:up|down|out|back)|expand\w*|extend\w*|doubl\w*|"
    r"tripl\w*|halv\w*|pushed (?:back|out)|postpon\w*|delay\w*|shift\w*|brought \w+(?: \w+)? down|"
    r"so far|has since|have since|after adding|additional|more than|now (?:at|includes?|has|have|contains?|"
    r"totals?|stands?)|adjust\w* to|up from|from \S+ to)\b", re.I)
_ADDITIVE = re.compile(r"\b(also|another|second|third|additional|as well|too|plus|added|"
                       r"new (?:one|office|branch))\b", re.I)

_VALUE_KINDS = ("hex", "time", "date", "weekday", "month", "percent", "money", "version",
                "number", "frequency", "colour")
_PROGRESSIVE_KINDS = frozenset({"number", "percent", "money", "date", "time", "month", "weekday"})
_PRONOUNS = frozenset(
    "i we you they he she it i'm i've i'd i'll we're we've we'd we'll you're you've they're "
    "they've it's my our your their".split())


def _overlap(a: set[str], b: set[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


def _head(clause: Clause) -> str | None:
    """The subject head: first content word that is no value, name or change word; the
    possessed noun after a possessive ("the user's sister" -> sister)."""
    tokens = clause.tokens
    words = [t.lower() for t in tokens if t[:1].isalpha()]
    if words and words[0] in _PRONOUNS:
        return None
    for i, tok in enumerate(tokens):
        content_stem = clause.stems[i]
        if not content_stem or not tok[:1].isalpha():
            continue
        low = tok.lower()
        if low in VALUE_WORDS or low in clause.names or _CORRECTION.fullmatch(low) \
                or _WEAK_CHANGE.fullmatch(low) or _STRONG_CHANGE.fullmatch(low) \
                or low in ("from", "after", "adding", "add"):
            continue
        if low.endswith(("'s", "’s")):
            for k in range(i + 1, len(tokens)):
                if clause.stems[k] and tokens[k].lower() not in VALUE_WORDS:
                    return clause.stems[k]
        return content_stem
    return None


def _words_of(tokens: list[str]) -> list[tuple[str, str]]:
    """(word, token) for each word, and for each part of a hyphenated word ("left-handed")."""
    out = []
    for tok in tokens:
        if tok[:1].isalpha():
            low = tok.lower()
            out.append((low, tok))
            if "-" in low:
                out.extend((part, tok) for part in low.split("-") if part)
    return out


def _antonym_flip(old: Clause, new: Clause) -> tuple[str, str] | None:
    old_words = dict(_words_of(old.tokens))
    for low, tok in _words_of(new.tokens):
        for candidate in (low, low.removesuffix("s")):
            for opposite in _OPPOSITE.get(candidate, ()):
                for form in (opposite, opposite + "s"):
                    if form in old_words and candidate not in old_words and low not in old_words:
                        same_polarity = (stem(old_words[form]) in old.negated) == (
                            stem(tok) in new.negated)
                        if same_polarity:
                            return form, low
    return None


@dataclass(frozen=True)
class _Pair:
    """An old clause aligned with a new one, and the content words that differ."""

    old: Clause
    new: Clause
    params: ContradictionParams
    shared: set[str]
    strong_shared: set[str]  # shared minus the weak subjects ("user", "team", ...)
    dropped: set[str]
    added: set[str]
    dropped_plain: set[str]  # dropped words that are no value, name or number
    old_word_count: int  # content words of the old clause that are no number
    max_dropped: int  # dropped_plain words a swap in "the same slot" tolerates
    progression: re.Match[str] | None  # a progression cue in the new text


def _pair(old: Clause, new: Clause, params: ContradictionParams) -> _Pair:
    shared = old.content & new.content
    dropped = old.content - new.content
    name_stems = {stem(n) for n in old.names}
    old_words = [c for c in old.content if not c[:1].isdigit()]
    return _Pair(
        old=old, new=new, params=params, shared=shared,
        strong_shared=shared - _WEAK_SUBJECTS, dropped=dropped, added=new.content - old.content,
        dropped_plain={d for d in dropped
                       if d not in VALUE_STEMS and d not in name_stems and not d[:1].isdigit()},
        old_word_count=len(old_words),
        max_dropped=max(params.max_dropped, int(params.max_dropped_share * len(old_words))),
        progression=_PROGRESSION.search(new.text))


def _negation_rule(pair: _Pair) -> Contradiction | None:
    """1. Exactly one side negates a shared word, and does not merely say the opposite
    ("does not like" == "dislikes")."""
    old, new = pair.old, pair.new
    if old.has_negation == new.has_negation:
        return None
    flipped = pair.shared & (old.negated ^ new.negated)
    negating, other = (new, old) if new.has_negation else (old, new)
    other_words = {t.lower() for t in other.tokens}
    agrees = any(
        (_OPPOSITE.get(p, set()) | _OPPOSITE.get(p.rstrip("s"), set()))
        & (other_words | {w.rstrip("s") for w in other_words})
        for p in negating.predicates) or bool(
        # "decided against X", "blocked on X", "skip the X" say "no" in other words.
        (other_words & NEGATIVE_WORDS) - {t.lower() for t in negating.tokens})
    if flipped and not agrees:
        side = "new" if new.has_negation else "old"
        return Contradiction(True, "negation", f"{side} negates {sorted(flipped)}")
    return None


def _antonym_rule(pair: _Pair) -> Contradiction | None:
    """2. A word flips to its opposite with the same polarity."""
    flip = _antonym_flip(pair.old, pair.new)
    if flip:
        return Contradiction(True, "antonym", f"{flip[0]!r} -> {flip[1]!r}")
    return None


def _correction_rule(pair: _Pair) -> Contradiction | None:
    """3. The new text (only) says it corrects something, and something changed."""
    correction = _CORRECTION.search(pair.new.text)
    if correction and not _CORRECTION.search(pair.old.text) and (pair.dropped or pair.added):
        return Contradiction(True, "correction", correction.group(0))
    return None


def _same_subject(pair: _Pair) -> bool:
    """Whether the new clause's head noun occurs in the old clause (or it has none)."""
    head = _head(pair.new)
    return head is None or head in pair.old.content


def _value_rule(pair: _Pair) -> Contradiction | None:
    """4. A value of one kind replaced by another in the same slot of a kept clause; a
    progression when the new text says the quantity moved on."""
    old, new = pair.old, pair.new
    for kind in _VALUE_KINDS:
        old_values, new_values = old.values.get(kind), new.values.get(kind)
        if not old_values or not new_values:
            continue
        replaced = old_values - new_values
        introduced = new_values - old_values
        if not replaced or not introduced:
            continue
        # Same slot: the words around an old and a new value overlap, and the rest of the old
        # clause is kept (short clauses) or the clause is long enough that its other words
        # are incidental chat (long clauses).
        same_slot = any(old.slots[(kind, r)] & new.slots[(kind, i)]
                        for r in replaced for i in introduced) or kind in ("frequency", "colour")
        kept = len(pair.dropped_plain) <= pair.max_dropped \
            or pair.old_word_count >= pair.params.long_clause
        if same_slot and kept:
            evidence = f"{kind}: {sorted(replaced)} -> {sorted(introduced)}"
            if pair.progression and kind in _PROGRESSIVE_KINDS:
                return Contradiction(
                    False, "progression", f"{evidence} ({pair.progression.group(0)})")
            return Contradiction(True, kind, evidence)
    return None


def _name_rule(pair: _Pair) -> Contradiction | None:
    """5. A name replaced by another in the same slot of a kept clause, unless additive."""
    old, new = pair.old, pair.new
    lost_names, new_names = old.names - new.names, new.names - old.names
    name_slot = any(old.name_slots.get(a, set()) & new.name_slots.get(b, set())
                    for a in lost_names for b in new_names)
    if lost_names and new_names and name_slot and len(pair.dropped_plain) <= pair.max_dropped \
            and not _ADDITIVE.search(new.text):
        return Contradiction(True, "name", f"{sorted(lost_names)} -> {sorted(new_names)}")
    return None


def _strong_change_rule(pair: _Pair) -> Contradiction | None:
    """6a. A strong change marker with enough shared context or a substitution."""
    old, new = pair.old, pair.new
    strong = _STRONG_CHANGE.search(new.text)
    if not strong or _STRONG_CHANGE.search(old.text):
        return None
    substituted = bool(new.names - old.names) or any(
        old.values.get(k) and new.values.get(k) and old.values[k] != new.values[k]
        for k in new.values)
    swapped = bool(pair.strong_shared) and bool(pair.dropped_plain) and bool(pair.added)
    if len(pair.strong_shared) >= 2 or (pair.shared and substituted) or swapped:
        return Contradiction(True, "change_marker", strong.group(0))
    return None


def _weak_change_rule(pair: _Pair) -> Contradiction | None:
    """6b. A weak change marker ("now") with a word dropped and another added."""
    weak = _WEAK_CHANGE.search(pair.new.text)
    if weak and not _WEAK_CHANGE.search(pair.old.text) and len(pair.strong_shared) >= 1 \
            and pair.dropped_plain and len(pair.dropped_plain) <= pair.max_dropped \
            and pair.added and not _ADDITIVE.search(pair.new.text) and not pair.progression:
        return Contradiction(
            True, "change_marker",
            f"{weak.group(0)}: {sorted(pair.dropped_plain)} -> {sorted(pair.added)}")
    return None


def _progression_rule(pair: _Pair) -> Contradiction | None:
    """A progression cue with values on both sides that no rule above took: an update."""
    old, new = pair.old, pair.new
    if pair.progression and any(old.values.get(k) and new.values.get(k) for k in new.values):
        return Contradiction(False, "progression", pair.progression.group(0))
    return None


_Rule = Callable[[_Pair], Contradiction | None]
# Rules 1-3 hold whatever the subject; the rest only when both clauses are about one subject.
_ANY_SUBJECT_RULES: tuple[_Rule, ...] = (_negation_rule, _antonym_rule, _correction_rule)
_SAME_SUBJECT_RULES: tuple[_Rule, ...] = (
    _value_rule, _name_rule, _strong_change_rule, _weak_change_rule, _progression_rule)


def _compare(old: Clause, new: Clause, params: ContradictionParams) -> Contradiction | None:
    """The verdict of the first rule that fires on an aligned pair, in the module's order."""
    pair = _pair(old, new, params)
    for rule in _ANY_SUBJECT_RULES:
        verdict = rule(pair)
        if verdict is not None:
            return verdict
    if not _same_subject(pair):
        return None
    for rule in _SAME_SUBJECT_RULES:
        verdict = rule(pair)
        if verdict is not None:
            return verdict
    return None


def detect(old: str, new: str, params: ContradictionParams = DEFAULT_PARAMS) -> Contradiction:
    """Whether ``new`` contradicts ``old`` (see the module docstring for the rules).

    Returns ``Contradiction(True, kind, evidence)`` for a contradiction,
    ``Contradiction(False, "progression", ...)`` for a later value of the same quantity and
    ``Contradiction(False, None, reason)`` otherwise.
    """
    old_clauses = [read_clause(c, new, params.negation_window) for c in split_clauses(old)]
    new_clauses = [read_clause(c, old, params.negation_window) for c in split_clauses(new)]
    best_progression: Contradiction | None = None
    aligned_any = False
    for n in new_clauses:
        best: Clause | None = None
        best_score = 0.0
        for o in old_clauses:
            score = _overlap(o.content, n.content)
            if score >= best_score and score > 0:
                best, best_score = o, score
        if best is None:
            continue
        if best_score < params.min_overlap and \
                len((best.content & n.content) - _WEAK_SUBJECTS) < params.min_shared:
            continue
        aligned_any = True
        verdict = _compare(best, n, params)
        if verdict is None:
            continue
        if verdict.is_contradiction:
            return verdict
        best_progression = best_progression or verdict
    if best_progression is not None:
        return best_progression
    return Contradiction(False, None, "no conflicting slot" if aligned_any else "no shared context")


def content_terms(text: str) -> tuple[set[str], set[str]]:
    """(content stems, "heavy" stems) of ``text``: heavy are names and values (numbers,
    dates, ...), which carry more information than ordinary words. Used by gating to tell a
    restatement from an addition."""
    stems: set[str] = set()
    heavy: set[str] = set()
    for chunk in split_clauses(text):
        clause = read_clause(chunk, "", DEFAULT_PARAMS.negation_window)
        stems |= clause.content
        heavy |= {stem(n) for n in clause.names}
        heavy |= {s for s in clause.content if s[:1].isdigit()}
    return stems, heavy
