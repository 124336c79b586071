"""memoryd's own keyword tokenisation, the same on every backend.

The rules follow SQLite FTS5's ``porter unicode61 remove_diacritics 2`` tokenizer, so that
FTS5 can still find the candidates while memoryd scores them itself:

1. lower-case (``"Deploys"`` → ``"deploys"``);
2. strip diacritics from Latin letters (``"café"`` → ``"cafe"``);
3. split on everything that is not a letter, a digit or a combining mark (``_`` and ``-``
   separate words, as in unicode61);
4. stem each token with the Porter algorithm (``"painting"`` → ``"paint"``).

Documents keep every token (stopwords included: they count toward the length that BM25
normalises by); queries drop stopwords and duplicates (:func:`query_terms`).

    >>> tokenize("Deploys go out on Tuesdays")
    ['deploi', 'go', 'out', 'on', 'tuesdai']
    >>> query_terms("When do we ship the paintings?")
    ['ship', 'paint']
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache

import snowballstemmer

from memoryd.retrieval.fts import STOPWORDS

# Letters and digits (not "_"), with combining marks kept inside words.
_WORD = re.compile(r"(?:[^\W_]|[\u0300-\u036f\u0900-\u0dff])+", re.UNICODE)
# Tokens longer than this are kept whole: stemming a base64 blob or a hash is wasted work.
_MAX_STEM_CHARS = 40
#: Stemmers a :class:`Tokenizer` can use: FTS5's Porter, Snowball English ("Porter2"), none.
STEMMERS = ("porter", "english", "none")


def fold(text: str) -> str:
    """Lower-cased, Latin letters without diacritics, as unicode61 does (``"Café"`` → ``"cafe"``).

    Like FTS5, only Latin letters lose their marks (Greek and Cyrillic keep theirs) and case
    folding is a plain lower-casing (``"ß"`` stays ``"ß"``).
    """
    if text.isascii():
        return text.lower()
    out: list[str] = []
    for ch in unicodedata.normalize("NFD", text):
        if unicodedata.combining(ch) and out and _is_latin(out[-1]):
            continue
        out.append(ch)
    return unicodedata.normalize("NFC", "".join(out)).lower()


def _is_latin(ch: str) -> bool:
    code = ord(ch)
    return code < 0x250 or 0x1E00 <= code <= 0x1EFF


@lru_cache(maxsize=8)
def _stemmer(name: str):  # noqa: ANN202 - snowballstemmer has no type hints
    return snowballstemmer.stemmer(name)


@dataclass(frozen=True)
class Tokenizer:
    """Splits, folds and stems text; ``stemming`` is one of :data:`STEMMERS`."""

    stemming: str = "porter"
    _cache: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.stemming not in STEMMERS:
            raise ValueError(f"unknown stemming {self.stemming!r}; use one of {', '.join(STEMMERS)}")

    def stem(self, word: str) -> str:
        """The stem of one folded word (``"tuesdays"`` → ``"tuesdai"`` with Porter)."""
        if self.stemming == "none" or len(word) > _MAX_STEM_CHARS:
            return word
        stemmed = self._cache.get(word)
        if stemmed is None:
            if len(self._cache) > 200_000:
                self._cache.clear()
            stemmed = self._cache[word] = _stemmer(self.stemming).stemWord(word)
        return stemmed

    def tokenize(self, text: str) -> list[str]:
        """Every stemmed token of ``text`` in order (stopwords kept)."""
        return [self.stem(w) for w in _WORD.findall(fold(text))]

    def term_counts(self, text: str) -> Counter[str]:
        """How often each stemmed term occurs in ``text``: what a store keeps per memory."""
        return Counter(self.tokenize(text))

    def query_terms(self, text: str) -> list[str]:
        """Distinct stemmed content terms of a query, in order of first appearance.

        Stopwords are dropped unless the query has nothing else (``"who are you"`` keeps
        all three words), so a question made only of function words still matches.
        """
        words = _WORD.findall(fold(text))
        content = [w for w in words if w not in STOPWORDS]
        return list(dict.fromkeys(self.stem(w) for w in (content or words)))


DEFAULT_TOKENIZER = Tokenizer()


def tokenize(text: str) -> list[str]:
    """Every stemmed token of ``text``, with the default tokenizer."""
    return DEFAULT_TOKENIZER.tokenize(text)


def term_counts(text: str) -> Counter[str]:
    """Stemmed term counts of ``text`` (default tokenizer).

    >>> term_counts("the cat saw the cats")["cat"]
    2
    """
    return DEFAULT_TOKENIZER.term_counts(text)


def query_terms(text: str) -> list[str]:
    """Distinct stemmed content terms of a query (default tokenizer)."""
    return DEFAULT_TOKENIZER.query_terms(text)
