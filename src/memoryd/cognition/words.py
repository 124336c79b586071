"""Words of a statement as the contradiction detector reads them: tokens, stop words, stems.

A token is a hex colour, a number (with currency sign, thousands separators, decimals or a
percent sign), a word (letters, apostrophes, hyphens) or a punctuation mark. Content words are
the words that are neither stop words nor negation cues; they are compared by :func:`stem`.
"""

from __future__ import annotations

import re

__all__ = ["NEGATION_CUES", "NEGATIVE_WORDS", "STOP_WORDS", "TOKEN", "stem"]

TOKEN = re.compile(r"#[0-9A-Fa-f]{3,8}\b|[$€£]?\d[\d,]*(?:\.\d+)*%?|[A-Za-z][A-Za-z'’\-]*|[,.;:!?()]")
STOP_WORDS = frozenset(
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
) | frozenset(
    # interjections of chat: no content, and never a name however they are capitalised
    """hey hi hello thanks thank thx ok okay yeah yep yup lol haha hahaha hehe wow oh omg
    hmm um uh ah aww yay ooh btw bye""".split())
NEGATION_CUES = frozenset(
    """not no never none nobody nothing neither nor without cannot can't won't don't doesn't
    didn't isn't aren't wasn't weren't shouldn't haven't hasn't hadn't couldn't wouldn't
    mustn't needn't""".split()
)
NEGATIVE_WORDS = frozenset(
    """against avoid avoids avoided skip skips skipped refuse refuses refused forbid forbids
    forbidden ban bans banned prohibit prohibited block blocks blocked prevent prevents
    prevented lack lacks missing absent freeze frozen deny denied disallow disallowed unable
    impossible except""".split()
)
"""Words that say "no" without a negation cue: "decided against X" agrees with "not X"."""


def stem(word: str) -> str:
    """A crude suffix-stripping stem, enough to match inflected forms of one word.

    >>> [stem(w) for w in ("Moved", "moving", "running", "companies", "user's", "deployment")]
    ['mov', 'mov', 'run', 'company', 'user', 'deploy']
    """
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
