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
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Contradiction", "ContradictionParams", "detect"]


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

_UPDATE_TAG = re.compile(r"\[Updated \d{4}-\d{2}-\d{2}\]")
_CLAUSE_SPLIT = re.compile(r"(?<=[.!?;])\s+|\n+|;\s*|\s+(?:but|whereas|although|though)\s+", re.I)
_TOKEN = re.compile(r"#[0-9A-Fa-f]{3,8}\b|[$€£]?\d[\d,]*(?:\.\d+)*%?|[A-Za-z][A-Za-z'’\-]*|[,.;:!?()]")
_STOP = frozenset(
    """a an the and or but of to in on at for with by from as is are was were be been being it its
    this that these those i you he she we they my your his her our their me him us them do does
    did done have has had having will would can could should shall may might must so just also
    very really about into than then there here what which who whom when where why how all any
    some each every per via up down out over after before again further once only own same too
    own s t let lets let's i'm we're they're it's that's there's he's she's you're i've we've
    they've i'd we'd i'll we'll one ones thing things get gets got
    if whether because while since until unless though although yet still even
    trying try tried kinda sorta gonna wanna help please wondering wonder thinking figure sure
    maybe perhaps something anything everything lot lots bit way ways""".split()
)
# "not sure", "don't know", "can't wait": hedges and idioms, not negated content.
_HEDGE_AFTER_CUE = frozenset(
    "sure certain know understand clear idea exactly quite wait only problem worries matter "
    "doubt".split())
# Counted for alignment but not as strong shared context: nearly every memory mentions them.
_WEAK_SUBJECTS = frozenset({"user", "users", "team", "project"})
_NEGATION_CUES = frozenset(
    """not no never none nobody nothing neither nor without cannot can't won't don't doesn't
    didn't isn't aren't wasn't weren't shouldn't haven't hasn't hadn't couldn't wouldn't
    mustn't needn't""".split()
)
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
)
_OPPOSITE: dict[str, set[str]] = {}
for _a, _b in _ANTONYMS:
    _OPPOSITE.setdefault(_a, set()).add(_b)
    _OPPOSITE.setdefault(_b, set()).add(_a)

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
_VALUE_WORDS = frozenset(_MONTHS) | frozenset(_WEEKDAYS) | frozenset(w + "s" for w in _WEEKDAYS) \
    | frozenset(_FREQUENCY) | _COLOURS | frozenset(_NUMBER_WORDS)

_VALUE_STEMS: frozenset[str] = frozenset()  # filled in below, after _stem is defined
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


_VALUE_KINDS = ("hex", "time", "date", "weekday", "month", "percent", "money", "version",
                "number", "frequency", "colour")
_PROGRESSIVE_KINDS = frozenset({"number", "percent", "money", "date", "time", "month", "weekday"})
_PRONOUNS = frozenset(
    "i we you they he she it i'm i've i'd i'll we're we've we'd we'll you're you've they're "
    "they've it's my our your their".split())


def _num(text: str) -> float:
    return float(text.replace(",", ""))


def _fmt(value: float) -> str:
    return f"{value:g}"


def _context(clause: str, start: int, end: int) -> set[str]:
    """Content stems of the words around a value (4 on each side): its slot."""
    words = [t for t in _TOKEN.findall(clause[:start]) if t[:1].isalpha()][-4:]
    words += [t for t in _TOKEN.findall(clause[end:]) if t[:1].isalpha()][:4]
    # Month and weekday names stay: "March 22 at 3 PM" / "March 22 at 4:30 PM" share a slot.
    return {_stem(w) for w in words
            if w.lower() not in _STOP and w.lower() not in _NEGATION_CUES
            and (w.lower() not in _VALUE_WORDS or w.lower() in _MONTHS
                 or w.lower().rstrip("s") in _WEEKDAYS)}


def _values(clause: str) -> tuple[dict[str, set[str]], dict[tuple[str, str], set[str]]]:
    """Typed values in a clause, normalised (times to HH:MM, dates to M-D, money to numbers),
    and the slot (surrounding content words) of each."""
    out: dict[str, set[str]] = {}
    slots: dict[tuple[str, str], set[str]] = {}
    rest = clause

    def add(kind: str, value: str, m: re.Match[str]) -> None:
        out.setdefault(kind, set()).add(value)
        slots.setdefault((kind, value), set()).update(_context(clause, m.start(), m.end()))

    def take(pattern: re.Pattern[str], handler) -> None:  # type: ignore[no-untyped-def]
        nonlocal rest
        for m in pattern.finditer(rest):
            handler(m)
        # Blank matches out with spaces of the same length so offsets stay valid.
        rest = pattern.sub(lambda m: " " * len(m.group(0)), rest)

    take(_HEX, lambda m: add("hex", m.group(0).lower(), m))

    def time(m: re.Match[str]) -> None:
        if m.group(3):
            hour = int(m.group(1)) % 12 + (12 if m.group(3).lower().startswith("p") else 0)
            add("time", f"{hour:02d}:{int(m.group(2) or 0):02d}", m)
        else:
            add("time", f"{int(m.group(4)):02d}:{m.group(5)}", m)

    take(_TIME, time)

    def date(m: re.Match[str]) -> None:
        if m.group(1):
            add("date", f"{int(m.group(2))}-{int(m.group(3))}", m)
        elif m.group(4):
            add("date", f"{_MONTHS[m.group(4).lower()]}-{int(m.group(5))}", m)
        elif m.group(7):
            add("date", f"{_MONTHS[m.group(8).lower()]}-{int(m.group(7))}", m)
        elif m.group(9):
            add("weekday", m.group(9).lower(), m)
        elif m.group(10):
            add("month", f"{_MONTHS[m.group(10).lower()]}", m)

    take(_DATE, date)
    take(_PERCENT, lambda m: add("percent", _fmt(_num(m.group(1))), m))

    def money(m: re.Match[str]) -> None:
        amount = _num(m.group(1) or m.group(3))
        scale = (m.group(2) or m.group(4) or "").lower()
        amount *= {"k": 1e3, "thousand": 1e3, "m": 1e6, "million": 1e6}.get(scale, 1)
        add("money", _fmt(amount), m)

    take(_MONEY, money)
    take(_VERSION, lambda m: add("version", m.group(1), m))

    def number(m: re.Match[str]) -> None:
        add("number", _fmt(_num(m.group(1)) * (1000 if m.group(2) else 1)), m)

    take(_NUMBER, number)
    for m in _FREQ_PHRASE.finditer(clause):
        add("frequency", _FREQ_NOUN[m.group(1).lower()], m)
    for m in re.finditer(r"[A-Za-z]+", rest):
        low = m.group(0).lower()
        if low in _FREQUENCY:
            add("frequency", _FREQUENCY[low], m)
        elif low in _COLOURS:
            add("colour", low, m)
        elif low in _NUMBER_WORDS:
            add("number", _fmt(_NUMBER_WORDS[low]), m)
    return out, slots


def _stem(word: str) -> str:
    w = word.lower().replace("’", "'")
    w = w.removesuffix("'s")
    w = w.strip("'-")
    for suffix in ("ments", "ment", "ings", "ing", "ied", "ies", "ed", "es", "s", "ly"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)]
            if suffix in ("ied", "ies"):
                w += "y"
            elif suffix in ("ing", "ings", "ed") and len(w) > 3 and w[-1] == w[-2] \
                    and w[-1] not in "lsz":
                w = w[:-1]
            break
    if len(w) > 3 and w[-1] == "e":
        w = w[:-1]
    return w


_VALUE_STEMS = frozenset(_stem(w) for w in _VALUE_WORDS)


@dataclass
class _Clause:
    text: str
    tokens: list[str]
    stems: list[str | None]  # per token; None for stop words, punctuation and numbers
    names: set[str]
    values: dict[str, set[str]]
    slots: dict[tuple[str, str], set[str]]
    negated: set[str]  # stems inside a negation cue's scope
    has_negation: bool
    predicates: list[str]  # first content word after each negation cue ("not [like]")
    name_slots: dict[str, set[str]]  # content words around each name

    @property
    def content(self) -> set[str]:
        return {s for s in self.stems if s}


def _is_name(token: str, index: int, first_word_index: int, other_text: str) -> bool:
    if not token[:1].isupper() or token.lower() in _STOP or token.lower() in _VALUE_WORDS:
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
        return t[:1].isalpha() and low not in _STOP and low not in _NEGATION_CUES \
            and low not in _VALUE_WORDS

    before = next((t for t in reversed(tokens[:i]) if content(t)), None)
    after = next((t for t in tokens[i + 1:] if content(t)), None)
    return {_stem(t) for t in (before, after) if t}


def _clause(text: str, other_text: str, params: ContradictionParams) -> _Clause:
    tokens = _TOKEN.findall(text)
    stems: list[str | None] = []
    names: set[str] = set()
    name_slots: dict[str, set[str]] = {}
    first_word = next((i for i, t in enumerate(tokens) if t[:1].isalpha()), -1)
    for i, tok in enumerate(tokens):
        low = tok.lower().replace("’", "'")
        if tok[:1].isdigit() or tok[:1] in "$€£":
            stems.append(low.lstrip("$€£").replace(",", "").rstrip("%"))
            continue
        if not tok[:1].isalpha() or low in _STOP or low in _NEGATION_CUES:
            stems.append(None)
            continue
        if _is_name(tok, i, first_word, other_text):
            name = re.sub(r"['’]s$", "", tok.lower())
            names.add(name)
            name_slots.setdefault(name, set()).update(_neighbours(tokens, i))
        stems.append(_stem(tok))
    negated: set[str] = set()
    predicates: list[str] = []
    has_negation = False
    lowered = [t.lower().replace("’", "'") for t in tokens]
    for i, low in enumerate(lowered):
        cue = low in _NEGATION_CUES or low.endswith("n't") or (
            low == "longer" and i > 0 and lowered[i - 1] == "no")
        if not cue:
            continue
        following = [t for t in lowered[i + 1:i + 3] if t[:1].isalpha()]
        if any(t in _HEDGE_AFTER_CUE for t in following):
            continue
        scope: list[str] = []
        predicate: str | None = None
        cancelled = False
        seen = 0
        for j in range(i + 1, len(tokens)):
            if tokens[j] in ",.;:!?" or lowered[j] in ("but", "and"):
                break
            if lowered[j] in _NEGATION_CUES or lowered[j].endswith("n't"):
                cancelled = True  # "never ... without": a double negative asserts
                break
            if tokens[j][:1].isalnum():
                seen += 1
                if stems[j]:
                    scope.append(stems[j])  # type: ignore[arg-type]
                    if predicate is None and tokens[j][:1].isalpha():
                        predicate = lowered[j]
            if seen >= params.negation_window:
                break
        if cancelled:
            continue
        has_negation = True
        negated.update(scope)
        if predicate:
            predicates.append(predicate)
    values, slots = _values(text)
    return _Clause(text, tokens, stems, names, values, slots, negated, has_negation, predicates,
                   name_slots)


def _clauses(text: str) -> list[str]:
    text = _UPDATE_TAG.sub(" ", text)
    return [c.strip() for c in _CLAUSE_SPLIT.split(text) if c and re.search(r"[A-Za-z0-9]", c)]


def _overlap(a: set[str], b: set[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


def _head(clause: _Clause) -> str | None:
    """The subject head: first content word that is no value, name or change word; the
    possessed noun after a possessive ("the user's sister" -> sister)."""
    tokens = clause.tokens
    words = [t.lower() for t in tokens if t[:1].isalpha()]
    if words and words[0] in _PRONOUNS:
        return None
    for i, tok in enumerate(tokens):
        stem = clause.stems[i]
        if not stem or not tok[:1].isalpha():
            continue
        low = tok.lower()
        if low in _VALUE_WORDS or low in clause.names or _CORRECTION.fullmatch(low) \
                or _WEAK_CHANGE.fullmatch(low) or _STRONG_CHANGE.fullmatch(low) \
                or low in ("from", "after", "adding", "add"):
            continue
        if low.endswith(("'s", "’s")):
            for k in range(i + 1, len(tokens)):
                if clause.stems[k] and tokens[k].lower() not in _VALUE_WORDS:
                    return clause.stems[k]
        return stem
    return None


def _antonym_flip(old: _Clause, new: _Clause) -> tuple[str, str] | None:
    old_words = {t.lower(): t for t in old.tokens if t[:1].isalpha()}
    for tok in new.tokens:
        low = tok.lower()
        for candidate in (low, low.removesuffix("s")):
            for opposite in _OPPOSITE.get(candidate, ()):
                for form in (opposite, opposite + "s"):
                    if form in old_words and candidate not in old_words and low not in old_words:
                        same_polarity = (_stem(form) in old.negated) == (_stem(tok) in new.negated)
                        if same_polarity:
                            return form, tok
    return None


def _compare(old: _Clause, new: _Clause, params: ContradictionParams) -> Contradiction | None:
    shared = old.content & new.content
    strong_shared = shared - _WEAK_SUBJECTS
    # 1. negation flip
    if old.has_negation != new.has_negation:
        flipped = shared & (old.negated ^ new.negated)
        negating, other = (new, old) if new.has_negation else (old, new)
        other_words = {t.lower() for t in other.tokens}
        agrees = any(  # "does not like" == "dislikes"
            (_OPPOSITE.get(p, set()) | _OPPOSITE.get(p.rstrip("s"), set()))
            & (other_words | {w.rstrip("s") for w in other_words})
            for p in negating.predicates)
        if flipped and not agrees:
            side = "new" if new.has_negation else "old"
            return Contradiction(True, "negation", f"{side} negates {sorted(flipped)}")
    # 2. antonym
    flip = _antonym_flip(old, new)
    if flip:
        return Contradiction(True, "antonym", f"{flip[0]!r} -> {flip[1]!r}")
    dropped = old.content - new.content
    added = new.content - old.content
    name_stems = {_stem(n) for n in old.names}
    dropped_plain = {d for d in dropped
                     if d not in _VALUE_STEMS and d not in name_stems and not d[:1].isdigit()}
    old_words = [c for c in old.content if not c[:1].isdigit()]
    max_dropped = max(params.max_dropped, int(params.max_dropped_share * len(old_words)))
    # 3. explicit correction
    if _CORRECTION.search(new.text) and not _CORRECTION.search(old.text) and (dropped or added):
        return Contradiction(True, "correction", _CORRECTION.search(new.text).group(0))  # type: ignore[union-attr]
    head = _head(new)
    same_subject = head is None or head in old.content
    if not same_subject:
        return None
    # 4. value slots
    progression = _PROGRESSION.search(new.text)
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
        kept = len(dropped_plain) <= max_dropped or len(old_words) >= params.long_clause
        if same_slot and kept:
            evidence = f"{kind}: {sorted(replaced)} -> {sorted(introduced)}"
            if progression and kind in _PROGRESSIVE_KINDS:
                return Contradiction(False, "progression", f"{evidence} ({progression.group(0)})")
            return Contradiction(True, kind, evidence)
    # 5. names in the same slot
    lost_names, new_names = old.names - new.names, new.names - old.names
    name_slot = any(old.name_slots.get(a, set()) & new.name_slots.get(b, set())
                    for a in lost_names for b in new_names)
    if lost_names and new_names and name_slot and len(dropped_plain) <= max_dropped \
            and not _ADDITIVE.search(new.text):
        return Contradiction(True, "name", f"{sorted(lost_names)} -> {sorted(new_names)}")
    # 6. change markers
    strong = _STRONG_CHANGE.search(new.text)
    if strong and not _STRONG_CHANGE.search(old.text):
        substituted = bool(new_names) or any(
            old.values.get(k) and new.values.get(k) and old.values[k] != new.values[k]
            for k in new.values)
        swapped = bool(strong_shared) and bool(dropped_plain) and bool(added)
        if len(strong_shared) >= 2 or (shared and substituted) or swapped:
            return Contradiction(True, "change_marker", strong.group(0))
    weak = _WEAK_CHANGE.search(new.text)
    if weak and not _WEAK_CHANGE.search(old.text) and len(strong_shared) >= 1 \
            and dropped_plain and len(dropped_plain) <= max_dropped and added \
            and not _ADDITIVE.search(new.text) and not progression:
        return Contradiction(True, "change_marker",
                             f"{weak.group(0)}: {sorted(dropped_plain)} -> {sorted(added)}")
    if progression and any(old.values.get(k) and new.values.get(k) for k in new.values):
        return Contradiction(False, "progression", progression.group(0))
    return None


def detect(old: str, new: str, params: ContradictionParams = DEFAULT_PARAMS) -> Contradiction:
    """Whether ``new`` contradicts ``old`` (see the module docstring for the rules).

    Returns ``Contradiction(True, kind, evidence)`` for a contradiction,
    ``Contradiction(False, "progression", ...)`` for a later value of the same quantity and
    ``Contradiction(False, None, reason)`` otherwise.
    """
    old_clauses = [_clause(c, new, params) for c in _clauses(old)]
    new_clauses = [_clause(c, old, params) for c in _clauses(new)]
    best_progression: Contradiction | None = None
    aligned_any = False
    for n in new_clauses:
        best: _Clause | None = None
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
    for chunk in _clauses(text):
        clause = _clause(chunk, "", DEFAULT_PARAMS)
        stems |= clause.content
        heavy |= {_stem(n) for n in clause.names}
        heavy |= {s for s in clause.content if s[:1].isdigit()}
    return stems, heavy
