"""The keyword index, written once for both backends: which terms each memory holds, the
corpus statistics BM25 needs, and the SQL that picks keyword candidates.

memoryd ranks keywords itself (:mod:`memoryd.retrieval.bm25`), so that SQLite and PostgreSQL
rank the same memories the same way. Every backend keeps, in the same transaction as the
memory it describes:

- ``memory_terms(term, memory_rowid, tf, length)``: one row per distinct term of a memory
  (the stemmed terms of its content, summary and tags: :func:`keyword_text`,
  :mod:`memoryd.retrieval.tokens`) with how often it occurs, and the memory's length (its
  term count) repeated, so that scoring reads this one table;
- ``term_stats(term, df)``: how many memories hold each term (a term nobody holds has no row);
- ``term_totals``: one row (``id = 1``) with the number of memories and the sum of lengths;
- ``memories.term_count``: the memory's length;
- ``memories.speaker``: who said the memory (:func:`memoryd.retrieval.speaker.memory_speaker`
  of its content and metadata: ``user``, ``assistant`` or a case-folded name; NULL when it
  names none), which the ``speaker`` search filter reads;
- ``memories.instruction_topic``: the topic of the standing instruction the memory states
  (:func:`memoryd.retrieval.instructions.instruction_topic` of its content; NULL for most),
  which the candidate statements hand to the ranking, so that a search reads no text for it
  (a change to how either column is read from a memory needs a migration that fills it again).

A backend describes each write with a :class:`TermChanges` ("this memory now holds this
text", "this memory's terms go") and calls :func:`apply_changes` before its transaction
ends. The SQL here is the same on both backends but for the parameter mark: ``db`` is an
sqlite3 connection or a psycopg cursor (both have ``execute`` and ``executemany``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memoryd.models import Memory
from memoryd.retrieval.bm25 import Bm25Parameters, Candidate, CorpusStats
from memoryd.retrieval.instructions import instruction_topic
from memoryd.retrieval.speaker import memory_speaker
from memoryd.retrieval.tokens import term_counts

#: Recorded in the store's meta table: a different tokenizer needs the index rebuilt.
TOKENIZER_ID = "porter-unicode61-v1"
#: How many of the best-scoring memories are ranked before the filters are applied; when
#: the filters leave fewer than the limit, every match is ranked among the allowed ones.
FIRST_PASS = 200
#: The fields whose text a memory is found by.
TEXT_FIELDS = frozenset({"content", "summary", "tags"})
#: The fields whose change touches the index: the text, and the metadata naming the speaker.
INDEXED_FIELDS = TEXT_FIELDS | {"metadata"}


def keyword_text(content: str, summary: str | None, tags: Sequence[str] | None) -> str:
    """The text whose terms a memory is found by: content, summary and tags."""
    return "\n".join([content, summary or "", " ".join(tags or ())])


@dataclass
class TermChanges:
    """The keyword-index side of one write transaction."""

    postings: list[tuple[str, int, int, int]] = field(default_factory=list)  # term, rowid, tf, length
    lengths: list[tuple[int, int]] = field(default_factory=list)  # (length, rowid)
    cleared: list[int] = field(default_factory=list)  # rowids whose old postings go
    df: Counter[str] = field(default_factory=Counter)
    documents: int = 0
    total_terms: int = 0
    speakers: list[tuple[str | None, int]] = field(default_factory=list)  # (speaker, rowid)
    topics: list[tuple[str | None, int]] = field(default_factory=list)  # (instruction topic, rowid)

    def add(self, rowid: int, content: str, summary: str | None, tags: Sequence[str] | None,
            metadata: Mapping[str, Any] | None) -> None:
        """The memory at ``rowid`` (new, or just cleared) holds this text and metadata
        (``None``: leave its speaker and instruction topic as they are, for a rebuild of the
        terms alone)."""
        counts = term_counts(keyword_text(content, summary, tags))
        length = sum(counts.values())
        self.postings.extend((term, rowid, tf, length) for term, tf in counts.items())
        self.lengths.append((length, rowid))
        self.df.update(counts.keys())
        self.documents += 1
        self.total_terms += length
        if metadata is not None:
            # A new memory's columns are NULL already; a re-indexed one may have lost its values.
            again = rowid in self.cleared
            speaker, topic = memory_speaker(content, metadata), instruction_topic(content)
            if speaker is not None or again:
                self.speakers.append((speaker, rowid))
            if topic is not None or again:
                self.topics.append((topic, rowid))

    def remove(self, rowid: int, terms: Iterable[str], length: int) -> None:
        """The memory at ``rowid`` no longer holds ``terms`` (its postings) of ``length``."""
        self.cleared.append(rowid)
        self.df.subtract(terms)
        self.documents -= 1
        self.total_terms -= length

    def remove_held(self, db: Any, mark: str, rowid: int) -> None:
        """:meth:`remove` with what the index holds for ``rowid`` now."""
        terms, length = held_terms(db, mark, rowid)
        self.remove(rowid, terms, length)

    def update(self, db: Any, mark: str, rowid: int, before: Memory,
               fields: dict[str, Any]) -> None:
        """An update of ``before`` setting ``fields``: re-index it if its text changes, read
        its speaker again if its content or metadata does."""
        metadata = fields.get("metadata", before.metadata)
        if TEXT_FIELDS & fields.keys():
            self.remove_held(db, mark, rowid)
            self.add(rowid, fields.get("content", before.content),
                     fields.get("summary", before.summary), fields.get("tags", before.tags),
                     metadata)
        elif "metadata" in fields:
            self.speakers.append((memory_speaker(before.content, metadata), rowid))


def held_terms(db: Any, mark: str, rowid: int) -> tuple[list[str], int]:
    """The terms the index holds for a memory, and its length."""
    terms = [r[0] for r in db.execute(
        f"SELECT term FROM memory_terms WHERE memory_rowid = {mark}", (rowid,)).fetchall()]
    row = db.execute(f"SELECT term_count FROM memories WHERE rowid = {mark}", (rowid,)).fetchone()
    return terms, int(row[0]) if row else 0


def apply_changes(db: Any, mark: str, changes: TermChanges) -> None:
    """Write ``changes`` inside the caller's transaction."""
    if changes.cleared:
        db.executemany(f"DELETE FROM memory_terms WHERE memory_rowid = {mark}",
                       [(r,) for r in changes.cleared])
    if changes.postings:
        db.executemany("INSERT INTO memory_terms (term, memory_rowid, tf, length) "
                       f"VALUES ({mark}, {mark}, {mark}, {mark})", changes.postings)
    if changes.lengths:
        db.executemany(f"UPDATE memories SET term_count = {mark} WHERE rowid = {mark}",
                       changes.lengths)
    if changes.speakers:
        db.executemany(f"UPDATE memories SET speaker = {mark} WHERE rowid = {mark}",
                       changes.speakers)
    if changes.topics:
        db.executemany(f"UPDATE memories SET instruction_topic = {mark} WHERE rowid = {mark}",
                       changes.topics)
    deltas = [(term, d) for term, d in changes.df.items() if d]
    if deltas:
        db.executemany(f"INSERT INTO term_stats (term, df) VALUES ({mark}, {mark}) "
                       "ON CONFLICT (term) DO UPDATE SET df = term_stats.df + excluded.df", deltas)
        gone = [(term,) for term, d in deltas if d < 0]
        if gone:
            db.executemany(f"DELETE FROM term_stats WHERE term = {mark} AND df <= 0", gone)
    if changes.documents or changes.total_terms:
        db.execute(f"UPDATE term_totals SET documents = documents + {mark}, "
                   f"total_terms = total_terms + {mark} WHERE id = 1",
                   (changes.documents, changes.total_terms))


def clear_index(db: Any) -> None:
    """Empty the index (before a rebuild or a restore)."""
    db.execute("DELETE FROM memory_terms")
    db.execute("DELETE FROM term_stats")
    db.execute("UPDATE term_totals SET documents = 0, total_terms = 0 WHERE id = 1")


def memory_batches(db: Any, mark: str, columns: str, size: int = 1000) -> Iterator[list[Any]]:
    """Every memory's rowid and ``columns`` (e.g. ``"content, metadata"``), in rowid order,
    ``size`` rows at a time: what a migration's backfill reads."""
    last = 0
    while True:
        rows = db.execute(f"SELECT rowid, {columns} FROM memories WHERE rowid > {mark} "
                          f"ORDER BY rowid LIMIT {int(size)}", (last,)).fetchall()
        if not rows:
            return
        yield rows
        last = rows[-1][0]


def rebuild_index(db: Any, mark: str,
                  batches: Iterable[list[tuple[int, str, str | None, Sequence[str] | None]]]) -> int:
    """Build the term index anew from (rowid, content, summary, tags) batches (speakers are
    left as they are); returns how many memories it holds."""
    clear_index(db)
    count = 0
    for batch in batches:
        changes = TermChanges()
        for rowid, content, summary, tags in batch:
            changes.add(rowid, content, summary, tags, None)
        apply_changes(db, mark, changes)
        count += len(batch)
    return count


def fill_speakers(db: Any, mark: str,
                  batches: Iterable[list[tuple[int, str, Mapping[str, Any]]]]) -> int:
    """Set ``memories.speaker`` from (rowid, content, metadata) batches (a migration's
    backfill); returns how many memories name a speaker."""
    return _fill(db, mark, "speaker", ([(memory_speaker(content, metadata), rowid)
                                        for rowid, content, metadata in batch]
                                       for batch in batches))


def fill_instruction_topics(db: Any, mark: str,
                            batches: Iterable[list[tuple[int, str]]]) -> int:
    """Set ``memories.instruction_topic`` from (rowid, content) batches (a migration's
    backfill); returns how many memories state a conditional instruction."""
    return _fill(db, mark, "instruction_topic", ([(instruction_topic(content), rowid)
                                                  for rowid, content in batch]
                                                 for batch in batches))


def _fill(db: Any, mark: str, column: str,
          batches: Iterable[list[tuple[str | None, int]]]) -> int:
    """Write the non-NULL (value, rowid) pairs of each batch into ``column``."""
    filled = 0
    for batch in batches:
        pairs = [(value, rowid) for value, rowid in batch if value is not None]
        if pairs:
            db.executemany(f"UPDATE memories SET {column} = {mark} WHERE rowid = {mark}", pairs)
        filled += len(pairs)
    return filled


# --------------------------------------------------------------------------- reading


def corpus_stats(db: Any, mark: str, terms: Sequence[str]) -> CorpusStats:
    """N, the average length and the df of each of ``terms``, in one statement (one round
    trip to a server): the totals row has no term, each term row no total."""
    marks = ", ".join([mark] * len(terms)) if terms else "NULL"
    rows = db.execute(
        "SELECT NULL, documents, total_terms FROM term_totals WHERE id = 1 "
        f"UNION ALL SELECT term, df, NULL FROM term_stats WHERE term IN ({marks})",
        list(terms)).fetchall()
    documents, total, df = 0, 0, {}
    for term, count, terms_total in rows:
        if term is None:
            documents, total = int(count), int(terms_total)
        else:
            df[term] = int(count)
    return CorpusStats(documents, total / documents if documents else 0.0, df)


@dataclass(frozen=True)
class CandidateQuery:
    """BM25 over ``terms`` in SQL form (:class:`memoryd.retrieval.bm25.Bm25Parameters`):
    score = Σ weight · tf / (tf + constant + slope · length)."""

    terms: tuple[str, ...]
    weights: tuple[float, ...]
    constant: float
    slope: float

    @classmethod
    def of(cls, terms: Sequence[str], stats: CorpusStats, k1: float, b: float) -> CandidateQuery:
        """The query :func:`memoryd.retrieval.bm25.bm25_scores` would score with."""
        p = Bm25Parameters.of(terms, stats, k1=k1, b=b)
        return cls(tuple(p.weights), tuple(p.weights.values()), p.constant, p.slope)

    def head_params(self) -> list[Any]:
        """Parameters of the ``q`` values and the scoring expression
        (:func:`candidates_sql`), in SQL order."""
        values = [x for pair in zip(self.terms, self.weights) for x in pair]
        return [*values, self.constant, self.slope]


def candidates_sql(query: CandidateQuery, where: str, mark: str, *, first_pass: bool,
                   collate: str = "") -> str:
    """The candidate statement: params are ``query.head_params()``, then with ``first_pass``
    the first-pass limit, then the filter's params, then the limit.

    Rows: (id, length, score, instruction topic, term, tf), one per chosen memory and query
    term (tf NULL when the memory does not hold the term).
    """
    values = ", ".join([f"(CAST({mark} AS TEXT), CAST({mark} AS DOUBLE PRECISION))"]
                       * len(query.terms))
    cap = f" ORDER BY score DESC, mt.memory_rowid LIMIT {mark}" if first_pass else ""
    return (
        f"WITH q (term, w) AS (VALUES {values}), "
        "scored AS (SELECT mt.memory_rowid AS r, "
        f"SUM(q.w * mt.tf / (mt.tf + {mark} + {mark} * mt.length)) AS score "
        f"FROM q JOIN memory_terms mt ON mt.term = q.term "
        f"GROUP BY mt.memory_rowid{cap}), "
        "picked AS (SELECT m.rowid AS r, m.id AS id, m.term_count AS length, s.score AS score, "
        "m.instruction_topic AS topic "
        f"FROM scored s JOIN memories m ON m.rowid = s.r WHERE {where} "
        f"ORDER BY s.score DESC, m.id{collate} LIMIT {mark}) "
        # Each chosen memory's count of each query term by one key lookup per pair (NULL when
        # it lacks the term): a join let SQLite scan every term of every chosen memory, about
        # a fifth of the statement's time at 100k memories.
        "SELECT p.id, p.length, p.score, p.topic, q.term, (SELECT mt.tf FROM memory_terms mt "
        "WHERE mt.term = q.term AND mt.memory_rowid = p.r) AS tf FROM picked p CROSS JOIN q"
    )


def given_sql(where: str, mark: str, *, given: int, collate: str = "",
              arrays: bool = False) -> str:
    """The best ``limit`` of a first pass computed elsewhere (an in-memory copy of the
    postings) that pass ``where``: params are :func:`given_params` of the ``given`` (rowid,
    score) pairs, then the filter's params, then the limit. With ``arrays`` (PostgreSQL) the
    pairs come as two arrays, so that the statement's text, and the plan the server keeps
    for it, does not depend on how many there are.

    Rows: (rowid, id, instruction topic), best first (ties by id).
    """
    if arrays:
        scored = (f"SELECT * FROM unnest(CAST({mark} AS BIGINT[]), "
                  f"CAST({mark} AS DOUBLE PRECISION[]))")
    else:
        scored = "VALUES " + ", ".join(
            [f"(CAST({mark} AS BIGINT), CAST({mark} AS DOUBLE PRECISION))"] * given)
    return (
        f"WITH scored (r, score) AS ({scored}) "
        "SELECT m.rowid, m.id, m.instruction_topic FROM scored s "
        f"JOIN memories m ON m.rowid = s.r WHERE {where} "
        f"ORDER BY s.score DESC, m.id{collate} LIMIT {mark}"
    )


def given_params(pairs: Sequence[tuple[int, float]], *, arrays: bool = False) -> list[Any]:
    """The parameters of :func:`given_sql`'s pairs."""
    if arrays:  # as array literals: a few joins, where binding lists dumps each element
        return ["{" + ",".join([str(r) for r, _ in pairs]) + "}",
                "{" + ",".join([repr(s) for _, s in pairs]) + "}"]
    return [x for pair in pairs for x in pair]


def frequencies_sql(terms: Sequence[str], ids: Sequence[str], mark: str) -> str:
    """(id, length, instruction topic, term, tf) of the given memories for ``terms`` (params:
    terms, then ids); a memory holding none of them gives one row with term NULL."""
    term_marks = ", ".join([mark] * len(terms)) if terms else "NULL"
    id_marks = ", ".join([mark] * len(ids))
    return (
        "SELECT m.id, m.term_count, m.instruction_topic, mt.term, mt.tf FROM memories m "
        f"LEFT JOIN memory_terms mt ON mt.memory_rowid = m.rowid AND mt.term IN ({term_marks}) "
        f"WHERE m.id IN ({id_marks})"
    )


def candidates_from_rows(rows: Iterable[Sequence[Any]], *, scored: bool) -> list[Candidate]:
    """Group (id, length, [score,] topic, term, tf) rows into candidates; with ``scored``,
    best first by the SQL score (ties by id), otherwise in first-seen order."""
    found: dict[str, tuple[int, float, str | None, dict[str, int]]] = {}
    for row in rows:
        memory_id, length = row[0], int(row[1] or 0)
        score = float(row[2]) if scored else 0.0
        topic, term, tf = row[-3], row[-2], row[-1]
        entry = found.setdefault(memory_id, (length, score, topic, {}))
        if term is not None and tf is not None:
            entry[3][term] = int(tf)
    order = list(found)
    if scored:
        order.sort(key=lambda mid: (-found[mid][1], mid))
    return [Candidate(mid, found[mid][0], found[mid][3], found[mid][2]) for mid in order]
