"""memoryd's own tokenizer agrees with the FTS5 tokenizer the SQLite store indexes with."""

from __future__ import annotations

import sqlite3

import pytest

from memoryd.retrieval.tokens import Tokenizer, query_terms, term_counts, tokenize

SAMPLES = [
    "Deploys go out on Tuesdays after standup",
    "The painter was painting paintings; she paints.",
    "Café NAÏVE résumé façade",
    "snake_case and kebab-case and CamelCase",
    "Version 2.13.0 released 2024-05-01, costs $30,000",
    "Running runners ran quickly; happiness, relational, conditional",
    "Ünïcödé wörds: Ελληνικά κείμενο, русский текст",
]


def fts5_tokens(text: str) -> list[str]:
    """Tokens exactly as the store's FTS5 table sees them (porter unicode61 remove_diacritics 2)."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter unicode61 remove_diacritics 2')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
    conn.execute("INSERT INTO t(x) VALUES (?)", (text,))
    rows = conn.execute("SELECT term FROM v ORDER BY offset").fetchall()
    conn.close()
    return [r[0] for r in rows]


@pytest.mark.parametrize("text", SAMPLES)
def test_tokens_match_fts5(text: str) -> None:
    assert tokenize(text) == fts5_tokens(text)


def test_stemming_joins_word_forms() -> None:
    assert tokenize("painting paintings painted") == ["paint", "paint", "paint"]
    assert Tokenizer("none").tokenize("painting paintings") == ["painting", "paintings"]
    assert Tokenizer("english").tokenize("generously") == ["generous"]


def test_query_terms_drop_stopwords_and_duplicates() -> None:
    assert query_terms("When do we ship the ships?") == ["ship"]
    assert query_terms("who are you") == ["who", "ar", "you"]  # only stopwords: keep them
    assert query_terms("?!") == []


def test_term_counts_count_stems() -> None:
    counts = term_counts("The cat saw the cats")
    assert counts["cat"] == 2 and counts["the"] == 2 and sum(counts.values()) == 5


def test_unknown_stemmer_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown stemming"):
        Tokenizer("klingon")
