"""Turn free user text into a safe SQLite FTS5 query.

User text never reaches FTS5's query syntax: it is split into word tokens and each
token is double-quoted, so characters such as ``"*:^()-`` and words like ``NEAR``,
``AND`` or ``NOT`` are matched as plain text instead of raising a syntax error.
"""

from __future__ import annotations

import re
import unicodedata

# Word characters plus combining marks (accents left decomposed, Indic vowel signs),
# which \w alone does not match.
_TOKEN = re.compile(r"[\w\u0300-\u036f\u0900-\u0dff]+", re.UNICODE)

# Function words that match nearly every message and only slow BM25 down; they
# carry almost no IDF weight anyway.
STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself no nor not now of off on once only or
    other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your
    yours yourself yourselves also did does get got let lets make made many much may might
    ok okay please tell thing things want way well yes ve ll re don doesn didn isn wasn
    """.split()
)


def query_terms(text: str, *, keep_stopwords: bool = False) -> list[str]:
    """Word tokens of ``text`` (NFC-normalised) in order, without duplicates.

    Tokens keep their case: FTS5's tokenizer folds case and accents itself, while
    Python's lower() can split a word ("İ" becomes "i" plus a combining dot).
    Lower-casing is used only to drop stopwords and duplicates.
    """
    seen: list[str] = []
    folded: set[str] = set()
    for token in _TOKEN.findall(unicodedata.normalize("NFC", text)):
        key = token.casefold()
        if not keep_stopwords and key in STOPWORDS:
            continue
        if key not in folded:
            folded.add(key)
            seen.append(token)
    return seen


def match_expression(text: str, *, mode: str = "or") -> str | None:
    """An FTS5 MATCH expression for ``text``: quoted terms joined by OR (or AND).

    Returns None when the text has no searchable word (the caller skips the
    keyword side). If every word is a stopword, the stopwords are used.
    """
    terms = query_terms(text) or query_terms(text, keep_stopwords=True)
    if not terms:
        return None
    joiner = " OR " if mode == "or" else " AND "
    return joiner.join(f'"{term}"' for term in terms)
