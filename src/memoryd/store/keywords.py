"""The keyword side of search, read the same way on every backend: the corpus statistics,
the BM25 candidates passing a filter, and the term counts of given memories, all from the
term tables that :mod:`memoryd.store.terms` keeps."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memoryd.retrieval.bm25 import Candidate, CorpusStats
from memoryd.store import terms

if TYPE_CHECKING:
    from memoryd.store.database import Database
    from memoryd.store.keyword_postings import FirstPass


def corpus_stats(db: Database, words: list[str]) -> CorpusStats:
    """N, the average length and the df of each term."""
    with db.read() as conn:
        return terms.corpus_stats(conn, db.mark, words)


def candidates(db: Database, query: terms.CandidateQuery, where: str, params: list[Any],
               limit: int, first: FirstPass | None = None) -> list[Candidate]:
    """The best ``limit`` memories passing ``where`` by BM25: a first pass over the best
    ``FIRST_PASS`` (``first``, when a copy of the postings in memory computed and described
    them: the SQL then only filters), and every match when the filter leaves fewer than
    ``limit``."""
    head = query.head_params()
    with db.read() as conn:
        if first is not None:
            if not first.pairs:
                return []  # no memory holds a query term
            arrays = db.backend == "postgresql"
            rows = conn.execute(
                terms.given_sql(where, db.mark, collate=db.collate, given=len(first.pairs),
                                arrays=arrays),
                [*terms.given_params(first.pairs, arrays=arrays), *params, limit]).fetchall()
            found = [Candidate(memory_id, first.described[rowid].length,
                               first.described[rowid].counts, topic)
                     for rowid, memory_id, topic in rows]
        else:
            rows = conn.execute(
                terms.candidates_sql(query, where, db.mark, first_pass=True, collate=db.collate),
                [*head, max(terms.FIRST_PASS, limit), *params, limit]).fetchall()
            found = terms.candidates_from_rows(rows, scored=True)
        if len(found) < limit:
            # The filter removed too many of the best matches: rank every allowed one.
            rows = conn.execute(
                terms.candidates_sql(query, where, db.mark, first_pass=False, collate=db.collate),
                [*head, *params, limit]).fetchall()
            found = terms.candidates_from_rows(rows, scored=True)
    return found


def frequencies(db: Database, memory_ids: list[str], words: list[str]) -> list[Candidate]:
    """The given memories' lengths and counts of ``words``."""
    out: list[Candidate] = []
    for chunk in db.chunks(memory_ids):
        rows = db.rows(terms.frequencies_sql(words, chunk, db.mark), [*words, *chunk])
        out.extend(terms.candidates_from_rows(rows, scored=False))
    return out


def term_list(words: Sequence[str]) -> list[str]:
    """The distinct non-empty terms, in order."""
    return list(dict.fromkeys(w for w in words if w))
