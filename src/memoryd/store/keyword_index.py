"""An in-memory copy of the keyword postings, for the first pass of keyword search.

The keyword side ranks every memory holding a query term by BM25 and keeps the best
:data:`memoryd.store.terms.FIRST_PASS` before the filters. In SQL that pass reads every
posting of every query term (about 18,000 for a typical query at 100,000 memories); here it
is a few array operations over the same postings. The copy also gives each candidate's
length and counts of the query terms, for the keyword candidates and for the vector side's
nearest memories (:meth:`KeywordCache.term_counts`), so that neither waits on a statement
for them, and the corpus statistics BM25 weighs the terms by (the number of memories, their
average length and each term's document frequency: :meth:`KeywordCache.ranked_first_pass`
reads them and ranks at the same moment of the copy). The filters and the order by score
then id stay the store's SQL, so a search ranks exactly as the SQL-only path does, but for
the order of memories whose scores differ in the last bit (:meth:`KeywordIndex.first_pass`
sums a memory's terms in the query's order; the SQL sums them in the order its rows come).

The copy is kept in step with the tables from one place, :meth:`KeywordCache.first_pass`:
before it answers, it reads the newest change sequence number (``history``), re-reads the
postings of every memory changed since (by this process or another, on this machine or
another) and drops the memories deleted since, then checks its totals against the store's
``term_totals``. When they disagree (an import that kept old sequence numbers, more changes
than :data:`CATCH_UP_LIMIT` at once) it answers ``None`` and builds itself anew in the
background; the caller then runs the SQL first pass, which is always right.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from memoryd.heap import release_free_memory
from memoryd.retrieval.bm25 import CorpusStats
from memoryd.store.keyword_postings import Described, FirstPass, KeywordIndex, check_stop, load
from memoryd.store.terms import CandidateQuery

if TYPE_CHECKING:
    from memoryd.store.database import Database

log = logging.getLogger(__name__)

#: More changed memories than this since the last look: build anew instead of catching up.
CATCH_UP_LIMIT = 5_000
#: Changed memories kept beside the packed postings before these are packed again.
OVERLAY_LIMIT = 20_000

class KeywordCache:
    """The :class:`KeywordIndex` of one store, kept in step with its term tables."""

    def __init__(self, db: Database, *, enabled: bool = True) -> None:
        self.db = db
        self.enabled = enabled
        self._index: KeywordIndex | None = None
        self._lock = threading.Lock()
        self._builder: threading.Thread | None = None
        self._broken = False  # a fresh build disagreed with the store's totals: stay off
        self._closing = threading.Event()
        self._after: Callable[[], Any] | None = None
        self._until: threading.Event | None = None

    @property
    def ready(self) -> bool:
        """True when searches take their first pass from memory."""
        return self._index is not None

    def open(self, after: Callable[[], Any] | None = None,
             until: threading.Event | None = None) -> None:
        """Build the index on a thread of its own (searches use SQL until it is there), once
        ``after`` returns (e.g. the vector index's load, which a search needs more) and
        ``until`` is set (e.g. when a server is ready: the copy is not needed for that, and
        would compete with it for the CPU)."""
        if self.enabled:
            self._after, self._until = after, until
            self._rebuild()

    def wait(self, timeout: float | None = None) -> None:
        """Wait for a build in progress (tests, benchmarks)."""
        builder = self._builder
        if builder is not None:
            builder.join(timeout)

    def first_pass(self, query: CandidateQuery, limit: int) -> list[tuple[int, float]] | None:
        """The best ``limit`` (rowid, score) by BM25, or None: ask the SQL (always inside a
        write transaction, whose uncommitted rows the copy must not take in)."""
        found = self.described_first_pass(query, limit)
        return None if found is None else found.pairs

    def described_first_pass(self, query: CandidateQuery, limit: int) -> FirstPass | None:
        """:meth:`first_pass` with each memory's length, counts of the query terms and topic."""
        with self._caught_up() as index:
            return None if index is None else _described(index, query, limit)

    def ranked_first_pass(self, terms: Sequence[str], limit: int, *, k1: float, b: float
                          ) -> tuple[CorpusStats, CandidateQuery, FirstPass] | None:
        """The corpus statistics of ``terms``, the BM25 query they make and its described
        first pass, all read at one moment of the copy (no statement for the statistics),
        or None: ask the SQL."""
        with self._caught_up() as index:
            if index is None:
                return None
            stats = index.corpus_stats(terms)
            query = CandidateQuery.of(terms, stats, k1, b)
            return stats, query, _described(index, query, limit)

    def corpus_stats(self, terms: Sequence[str]) -> CorpusStats | None:
        """N, the average length and the df of each of ``terms``, or None: ask the SQL."""
        with self._caught_up() as index:
            return None if index is None else index.corpus_stats(terms)

    def term_counts(self, memory_ids: Sequence[str], terms: Sequence[str]
                    ) -> dict[str, Described] | None:
        """The named memories' lengths, counts of ``terms`` and topics, for those the copy
        holds (a memory written after its last look is not among them), or None: ask the SQL."""
        with self._caught_up() as index:
            if index is None:
                return None
            rowids = {m: index.rowid_of(m) for m in memory_ids}
            held = [(m, r) for m, r in rowids.items() if r is not None]
            described = index.describe([r for _, r in held], terms)
            return {m: d for (m, _), d in zip(held, described)}

    @contextmanager
    def _caught_up(self) -> Iterator[KeywordIndex | None]:
        """The index, in step with the store and held for the block, or None (not there,
        out of step, or inside a write transaction)."""
        if self._index is None or self.db.in_transaction():
            yield None
            return
        with self._lock:
            index = self._index
            yield index if index is not None and self._catch_up(index) else None

    def _catch_up(self, index: KeywordIndex) -> bool:
        """Apply the memories changed since the index last looked; False when it is out of
        step with the store (and a new build has started)."""
        with self.db.read() as conn:
            seq, documents, total = conn.execute(
                "SELECT (SELECT COALESCE(MAX(seq), 0) FROM history), documents, total_terms "
                "FROM term_totals WHERE id = 1").fetchone()
            if seq != index.history_seq:
                mark = self.db.mark
                ids = [r[0] for r in conn.execute(
                    f"SELECT DISTINCT memory_id FROM history WHERE seq > {mark} "
                    f"AND seq <= {mark} LIMIT {mark}",
                    (index.history_seq, seq, CATCH_UP_LIMIT + 1)).fetchall()]
                if len(ids) > CATCH_UP_LIMIT:
                    return self._out_of_step("many changes")
                _apply(self.db, conn, index, ids)
                index.history_seq = seq
        if (index.documents, index.total_terms) != (documents, total):
            return self._out_of_step("totals differ")
        if index.overlay_size > max(OVERLAY_LIMIT, index.documents // 10):
            self._rebuild()  # keeps answering from this one meanwhile
        return True

    def _out_of_step(self, why: str) -> bool:
        log.debug("keyword index out of step (%s): building it again", why)
        self._index = None
        self._rebuild()
        return False

    def _rebuild(self) -> None:
        if self._broken or self._closing.is_set() or (
                self._builder is not None and self._builder.is_alive()):
            return
        self._builder = threading.Thread(target=self._build, name="memoryd-keyword-index")
        self._builder.start()

    def _build(self) -> None:
        """Load a new index and put it in place (the thread a build runs on). It never
        raises: when the load fails, the SQL path answers from then on."""
        after, self._after = self._after, None
        until, self._until = self._until, None
        try:
            if after is not None:
                after()
            while until is not None and not until.wait(0.05):
                check_stop(self._closing)
            check_stop(self._closing)  # closed while it waited: a one-off command, say
            with self.db.read() as conn:
                index = load(self.db, conn, self._closing)
                documents, total = conn.execute(
                    "SELECT documents, total_terms FROM term_totals WHERE id = 1").fetchone()
            release_free_memory()  # the text the postings were read as
            unchanged = index.history_seq == self._seq_now()
        except InterruptedError:
            return
        except Exception:
            if not self._closing.is_set():
                log.warning("could not load the keyword index; keyword search uses SQL",
                            exc_info=True)
            return
        with self._lock:
            if unchanged and (index.documents, index.total_terms) != (documents, total):
                # Nothing changed meanwhile and still the counts disagree: the store's totals
                # are not what its rows say. Stay with SQL rather than build in a loop.
                log.warning("keyword index disabled: term totals disagree with the postings")
                self._broken = True
                self._index = None
                return
            self._index = index

    def _seq_now(self) -> int:
        with self.db.read() as conn:
            return int(conn.execute("SELECT COALESCE(MAX(seq), 0) FROM history").fetchone()[0])

    def close(self) -> None:
        """Stop a build in progress (it ends at its next block of rows) and drop the index."""
        self._closing.set()
        self.wait()
        self._index = None


def _described(index: KeywordIndex, query: CandidateQuery, limit: int) -> FirstPass:
    pairs = index.first_pass(query, limit)
    described = index.describe([r for r, _ in pairs], query.terms)
    return FirstPass(pairs, {r: d for (r, _), d in zip(pairs, described)})


def _apply(db: Database, conn: Any, index: KeywordIndex, memory_ids: Sequence[str]) -> None:
    """Re-read the postings of the named memories into the index; drop those now gone."""
    for chunk in db.chunks(memory_ids):
        rows = conn.execute(f"SELECT rowid, id, term_count, instruction_topic FROM memories "
                            f"WHERE id IN ({db.marks(len(chunk))})", chunk).fetchall()
        for gone in set(chunk) - {row[1] for row in rows}:
            rowid = index.rowid_of(gone)
            if rowid is not None:
                index.drop(rowid)
        if not rows:
            continue
        rowids = [int(row[0]) for row in rows]
        counts: dict[int, dict[str, int]] = {r: {} for r in rowids}
        for rowid, term, tf in conn.execute(
                "SELECT memory_rowid, term, tf FROM memory_terms WHERE memory_rowid IN "
                f"({db.marks(len(rowids))})", rowids).fetchall():
            counts[int(rowid)][term] = int(tf)
        for rowid, memory_id, length, topic in rows:
            index.set(int(rowid), memory_id, counts[int(rowid)], int(length or 0), topic)
