"""Keyword-side experiments against a memoryd SQLite store.

FTS5's ``bm25()`` has fixed k1 = 1.2 and b = 0.75, and the schema fixes the tokenizer
(``porter unicode61 remove_diacritics 2``). What can change without a schema change:
the MATCH expression built from the question and the column weights. Because the content
weight multiplies term frequency *before* saturation, a content weight ``w`` ranks exactly
like BM25 with ``k1 = 1.2 / w`` (b stays 0.75). To see what b would do, :class:`BM25Emulator`
recomputes FTS5's formula in Python from the index's own tokens (``fts5vocab``), for any
k1 and b; at (1.2, 0.75) it reproduces ``bm25()``.
"""

from __future__ import annotations

import math
import sqlite3
from collections import defaultdict
from pathlib import Path
from typing import Sequence

import numpy as np

from memoryd.retrieval.fts import match_expression, query_terms

try:  # the store's own weights, for the baseline
    from memoryd.store.sqlite import BM25_WEIGHTS
except ImportError:  # pragma: no cover
    BM25_WEIGHTS = (1.0, 0.5, 0.5)

FTS5_K1 = 1.2
FTS5_B = 0.75


def _quote(terms: Sequence[str]) -> list[str]:
    return [f'"{t}"' for t in terms]


def expressions(text: str) -> dict[str, str | None]:
    """MATCH expressions for one question, by query-construction variant.

    ``or``: memoryd's current construction (OR of content words; stopwords only if nothing else).
    ``or_stop``: OR of every word, stopwords included.  ``and``: AND of content words.
    """
    content = query_terms(text)
    every = query_terms(text, keep_stopwords=True)
    return {
        "or": match_expression(text),
        "or_stop": " OR ".join(_quote(every)) or None,
        "and": " AND ".join(_quote(content or every)) or None,
    }


class KeywordRunner:
    """Ranked keyword candidates from a store file, through its own FTS5 index."""

    def __init__(self, db_path: Path) -> None:
        self.conn = sqlite3.connect(f"{Path(db_path).resolve().as_uri()}?mode=ro", uri=True)

    def close(self) -> None:
        self.conn.close()

    def search(
        self, expression: str | None, *, weights: Sequence[float] = BM25_WEIGHTS, limit: int = 200
    ) -> list[tuple[str, float]]:
        if not expression:
            return []
        w = ", ".join(str(float(x)) for x in weights)
        rows = self.conn.execute(
            f"SELECT m.id, bm25(memories_fts, {w}) AS rank FROM memories_fts "
            "JOIN memories m ON m.rowid = memories_fts.rowid "
            "WHERE memories_fts MATCH ? ORDER BY rank LIMIT ?",
            (expression, limit),
        ).fetchall()
        return [(r[0], -float(r[1])) for r in rows]


class BM25Emulator:
    """FTS5's bm25() in Python over the store's own tokens, with free k1 and b.

    Query phrases are the quoted terms of the OR expression, tokenized by the same FTS5
    tokenizer (a term like ``foo_bar`` is a two-token phrase, matched as a phrase). Like FTS5,
    every phrase counts, even two that stem alike; idf = ln((N - n + 0.5) / (n + 0.5)),
    floored at 1e-6; document length = tokens in the row; only the content column is
    non-empty in this benchmark (summary NULL, tags '[]').
    """

    TOKENIZE = "porter unicode61 remove_diacritics 2"

    def __init__(self, db_path: Path) -> None:
        self.conn = sqlite3.connect(":memory:", uri=True)
        self.conn.execute("ATTACH DATABASE ? AS s", (f"{Path(db_path).resolve().as_uri()}?mode=ro",))
        self.conn.execute("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(s, memories_fts, instance)")
        self.ids: list[str] = []
        rowid_pos: dict[int, int] = {}
        for rowid, mid in self.conn.execute("SELECT rowid, id FROM s.memories ORDER BY rowid"):
            rowid_pos[rowid] = len(self.ids)
            self.ids.append(mid)
        self.n = len(self.ids)
        self.lengths = np.zeros(self.n, dtype=np.float64)
        # term -> doc position -> sorted offsets (content column)
        self.postings: dict[str, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
        for term, doc, col, offset in self.conn.execute(
            "SELECT term, doc, col, offset FROM temp.vocab ORDER BY doc, col, offset"
        ):
            pos = rowid_pos[doc]
            self.lengths[pos] += 1
            if col == "content":
                self.postings[term][pos].append(offset)
        self.avgdl = float(self.lengths.sum() / self.n) if self.n else 1.0
        self.conn.execute(f"CREATE VIRTUAL TABLE temp.q USING fts5(t, tokenize='{self.TOKENIZE}')")
        self.conn.execute("CREATE VIRTUAL TABLE temp.qvocab USING fts5vocab(temp, q, instance)")

    def close(self) -> None:
        self.conn.close()

    def phrases(self, terms: Sequence[str]) -> list[list[str]]:
        """Each query term as the token sequence FTS5 makes of it."""
        self.conn.execute("DELETE FROM temp.q")
        self.conn.executemany("INSERT INTO temp.q (rowid, t) VALUES (?, ?)", [(i + 1, t) for i, t in enumerate(terms)])
        out: dict[int, list[str]] = defaultdict(list)
        for term, doc, offset in self.conn.execute(
            "SELECT term, doc, offset FROM temp.qvocab ORDER BY doc, offset"
        ):
            out[doc].append(term)
        return [out[i + 1] for i in range(len(terms)) if out.get(i + 1)]

    def _tf(self, phrase: list[str]) -> dict[int, int]:
        first = self.postings.get(phrase[0])
        if not first:
            return {}
        if len(phrase) == 1:
            return {d: len(offs) for d, offs in first.items()}
        out: dict[int, int] = {}
        for d, offs in first.items():
            rest = [set(self.postings.get(t, {}).get(d, ())) for t in phrase[1:]]
            count = sum(1 for o in offs if all((o + j) in r for j, r in enumerate(rest, 1)))
            if count:
                out[d] = count
        return out

    def matrix(self, terms: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(candidate doc positions, tf matrix docs x phrases, idf per phrase)."""
        tfs = [self._tf(p) for p in self.phrases(terms)]
        docs = sorted({d for t in tfs for d in t})
        if not docs:
            return np.zeros(0, dtype=np.int64), np.zeros((0, 0)), np.zeros(0)
        index = {d: i for i, d in enumerate(docs)}
        tf = np.zeros((len(docs), len(tfs)), dtype=np.float64)
        idf = np.zeros(len(tfs), dtype=np.float64)
        for j, t in enumerate(tfs):
            for d, c in t.items():
                tf[index[d], j] = c
            n_hit = len(t)
            value = math.log((self.n - n_hit + 0.5) / (n_hit + 0.5))
            idf[j] = value if value > 0 else 1e-6
        return np.asarray(docs, dtype=np.int64), tf, idf

    def rank(self, prepared: tuple[np.ndarray, np.ndarray, np.ndarray], k1: float, b: float,
             limit: int = 200) -> list[str]:
        docs, tf, idf = prepared
        if len(docs) == 0:
            return []
        norm = k1 * (1 - b + b * self.lengths[docs] / self.avgdl)
        scores = (idf[None, :] * (tf * (k1 + 1)) / (tf + norm[:, None])).sum(axis=1)
        # FTS5 orders by rank then rowid (docs are in rowid order; stable sort keeps it)
        order = np.argsort(-scores, kind="stable")[:limit]
        return [self.ids[docs[i]] for i in order]
