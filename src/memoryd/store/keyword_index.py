"""An in-memory copy of the keyword postings, for the first pass of keyword search.

The keyword side ranks every memory holding a query term by BM25 and keeps the best
:data:`memoryd.store.terms.FIRST_PASS` before the filters. In SQL that pass reads every
posting of every query term (about 18,000 for a typical query at 100,000 memories); here it
is a few array operations over the same postings. What follows the first pass (the filters,
the order by score then id, each candidate's counts of the query terms) stays the store's
SQL, so a search ranks exactly as the SQL-only path does, but for the order of memories
whose scores differ in the last bit (:meth:`KeywordIndex.first_pass` sums a memory's terms
in the query's order; the SQL sums them in the order its rows come).

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
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from memoryd.heap import release_free_memory

if TYPE_CHECKING:
    from memoryd.store.database import Database
    from memoryd.store.terms import CandidateQuery

log = logging.getLogger(__name__)

#: More changed memories than this since the last look: build anew instead of catching up.
CATCH_UP_LIMIT = 5_000
#: Changed memories kept beside the packed postings before these are packed again.
OVERLAY_LIMIT = 20_000

# Each term's postings as one row of two comma-joined lists, both in rowid order: a third
# of the time of one row per posting.
_POSTINGS = {
    "sqlite": "SELECT term, group_concat(memory_rowid), group_concat(tf) FROM memory_terms "
              "GROUP BY term",
    "postgresql": "SELECT term, string_agg(memory_rowid::text, ',' ORDER BY memory_rowid), "
                  "string_agg(tf::text, ',' ORDER BY memory_rowid) FROM memory_terms "
                  "GROUP BY term",
}
_SNAPSHOT = {"sqlite": "BEGIN", "postgresql": "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"}


class KeywordIndex:
    """Every memory's term counts: packed arrays read at load, and the memories changed since
    in a small overlay that shadows their packed postings."""

    def __init__(self, slices: dict[str, tuple[int, int]], rowids: np.ndarray, tfs: np.ndarray,
                 lengths: np.ndarray, ids: tuple[np.ndarray, np.ndarray],
                 history_seq: int) -> None:
        self._slices = slices  # term -> [start, end) in rowids/tfs
        self._rowids = rowids
        self._tfs = tfs
        self.lengths = lengths  # term count by rowid; -1: no memory there
        self._shadowed = np.zeros(len(lengths), dtype=bool)  # packed postings out of date
        self._overlay: dict[int, dict[str, int]] = {}
        self._overlay_terms: dict[str, set[int]] = {}
        # hash(memory id) (this process's hash, never stored), sorted, and the rowid of each;
        # the memories set since the load in a dictionary.
        self._id_hashes, self._id_rowids = ids
        self._new_ids: dict[int, int] = {}
        self.history_seq = history_seq
        present = lengths >= 0
        self.documents = int(present.sum())
        self.total_terms = int(lengths[present].sum())

    @property
    def overlay_size(self) -> int:
        """How many memories the overlay holds."""
        return len(self._overlay)

    def nbytes(self) -> int:
        """Bytes held by the packed arrays (not the dictionaries)."""
        return int(self._rowids.nbytes + self._tfs.nbytes + self.lengths.nbytes
                   + self._shadowed.nbytes + self._id_hashes.nbytes + self._id_rowids.nbytes)

    def rowid_of(self, memory_id: str) -> int | None:
        """The rowid the memory had when the index last saw it."""
        key = hash(memory_id)
        if key in self._new_ids:
            return self._new_ids[key]
        at = int(np.searchsorted(self._id_hashes, key))
        if at < len(self._id_hashes) and self._id_hashes[at] == key:
            return int(self._id_rowids[at])
        return None

    def set(self, rowid: int, memory_id: str, counts: dict[str, int], length: int) -> None:
        """The memory at ``rowid`` now holds ``counts`` (its term frequencies) of ``length``."""
        self.drop(rowid)
        self._grow(rowid)
        if rowid < len(self._shadowed):
            self._shadowed[rowid] = True
        self._overlay[rowid] = counts
        for term in counts:
            self._overlay_terms.setdefault(term, set()).add(rowid)
        self._new_ids[hash(memory_id)] = rowid
        self.lengths[rowid] = length
        self.documents += 1
        self.total_terms += length

    def drop(self, rowid: int) -> None:
        """The memory at ``rowid`` is gone (nothing happens when there is none)."""
        if rowid >= len(self.lengths) or self.lengths[rowid] < 0:
            return
        self.documents -= 1
        self.total_terms -= int(self.lengths[rowid])
        self.lengths[rowid] = -1
        if rowid < len(self._shadowed):
            self._shadowed[rowid] = True
        for term in self._overlay.pop(rowid, {}):
            held = self._overlay_terms.get(term)
            if held is not None:
                held.discard(rowid)
                if not held:
                    del self._overlay_terms[term]

    def _grow(self, rowid: int) -> None:
        if rowid >= len(self.lengths):
            grown = np.full(max(rowid + 1, len(self.lengths) * 5 // 4 + 1024), -1,
                            dtype=self.lengths.dtype)
            grown[: len(self.lengths)] = self.lengths
            self.lengths = grown

    def first_pass(self, query: CandidateQuery, limit: int) -> list[tuple[int, float]]:
        """The best ``limit`` (rowid, BM25) of the memories holding a query term, best first
        (ties by rowid), scored as :func:`memoryd.store.terms.candidates_sql` scores them."""
        rows: list[np.ndarray] = []
        scores: list[np.ndarray] = []
        for term, weight in zip(query.terms, query.weights):
            start, end = self._slices.get(term, (0, 0))
            if end > start:
                r = self._rowids[start:end]
                keep = ~self._shadowed[r]
                rows.append(r[keep])
                scores.append(self._scores(query, weight, rows[-1],
                                           self._tfs[start:end][keep].astype(np.float64)))
            held = self._overlay_terms.get(term)
            if held:
                r = np.fromiter(held, dtype=np.int64, count=len(held))
                rows.append(r)
                scores.append(self._scores(query, weight, r, np.asarray(
                    [self._overlay[x][term] for x in held], dtype=np.float64)))
        if not rows:
            return []
        r = np.concatenate(rows)
        size = len(self.lengths)
        # bincount adds each memory's terms in the query's order, as the SQL's SUM does.
        total = np.bincount(r, weights=np.concatenate(scores), minlength=size)
        found = np.flatnonzero(np.bincount(r, minlength=size))
        if len(found) > limit:
            best = np.argpartition(-total[found], limit - 1)[:limit]
            # Keep every memory tied with the last one kept, so that the rowid decides.
            found = found[total[found] >= total[found[best]].min()]
        order = np.lexsort((found, -total[found]))[:limit]
        return [(int(found[i]), float(total[found[i]])) for i in order]

    def _scores(self, query: CandidateQuery, weight: float, rowids: np.ndarray,
                tf: np.ndarray) -> np.ndarray:
        return weight * tf / (tf + query.constant + query.slope * self.lengths[rowids])


def load(db: Database, conn: Any, stop: threading.Event | None = None) -> KeywordIndex:
    """Read every posting, length and id of the store (one snapshot, so that they are one
    moment's); ``stop`` set meanwhile ends the read with InterruptedError."""
    conn.execute(_SNAPSHOT[db.backend])
    try:
        (seq,) = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM history").fetchone()
        slices, rowids, tfs = _read_postings(db, conn, stop)
        lengths, ids = _read_memories(conn, stop)
    finally:
        conn.execute("COMMIT")
    if len(rowids) and int(rowids.max()) >= len(lengths):
        # A posting without its memory (the foreign key forbids it; never index past the end).
        grown = np.full(int(rowids.max()) + 1, -1, dtype=lengths.dtype)
        grown[: len(lengths)] = lengths
        lengths = grown
    return KeywordIndex(slices, rowids, tfs, lengths, ids, int(seq))


def _read_postings(db: Database, conn: Any, stop: threading.Event | None
                   ) -> tuple[dict[str, tuple[int, int]], np.ndarray, np.ndarray]:
    """Each term's slice, and the rowids and tfs of every posting (narrowed as they come,
    so that the load never holds them at full width)."""
    if db.backend == "postgresql":  # a server-side cursor: rows arrive as they are read
        cursor = conn.cursor(name="memoryd_keyword_postings")
        cursor.execute(_POSTINGS[db.backend])
    else:
        cursor = conn.execute(_POSTINGS[db.backend])
    slices: dict[str, tuple[int, int]] = {}
    rowid_parts: list[np.ndarray] = []
    tf_parts: list[np.ndarray] = []
    start = 0
    while chunk := cursor.fetchmany(1000):
        _check(stop)
        for term, rowids_text, tfs_text in chunk:
            rowid_parts.append(_narrow(np.fromstring(rowids_text, dtype=np.int64, sep=","),
                                       np.int32))
            tf_parts.append(_narrow(np.fromstring(tfs_text, dtype=np.int64, sep=","),
                                    np.uint16))
            slices[term] = (start, start + len(rowid_parts[-1]))
            start += len(rowid_parts[-1])
    if not rowid_parts:
        return slices, np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.uint16)
    return slices, np.concatenate(rowid_parts), np.concatenate(tf_parts)


def _read_memories(conn: Any, stop: threading.Event | None
                   ) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """Every memory's length by rowid, and (sorted hashes of the ids, their rowids)."""
    cursor = conn.execute("SELECT rowid, id, term_count FROM memories")
    rowid_parts, hash_parts, length_parts = [], [], []
    while chunk := cursor.fetchmany(10_000):
        _check(stop)
        rowid_parts.append(np.fromiter((m[0] for m in chunk), dtype=np.int64, count=len(chunk)))
        hash_parts.append(np.fromiter((hash(m[1]) for m in chunk), dtype=np.int64,
                                      count=len(chunk)))
        length_parts.append(np.fromiter((m[2] or 0 for m in chunk), dtype=np.int32,
                                        count=len(chunk)))
    rowids = np.concatenate(rowid_parts) if rowid_parts else np.zeros(0, dtype=np.int64)
    hashes = np.concatenate(hash_parts) if hash_parts else np.zeros(0, dtype=np.int64)
    lengths = np.full(int(rowids.max()) + 1 if len(rowids) else 1, -1, dtype=np.int32)
    if len(rowids):
        lengths[rowids] = np.concatenate(length_parts)
    order = np.argsort(hashes, kind="stable")
    return lengths, (hashes[order], rowids[order])


def _narrow(values: np.ndarray, dtype: type[np.integer]) -> np.ndarray:
    """``values`` as ``dtype`` when they fit it (a wider part widens the whole on concat)."""
    if len(values) and 0 <= values.min() and values.max() <= np.iinfo(dtype).max:
        return values.astype(dtype)
    return values


def _check(stop: threading.Event | None) -> None:
    if stop is not None and stop.is_set():
        raise InterruptedError("the store is closing")


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

    @property
    def ready(self) -> bool:
        """True when searches take their first pass from memory."""
        return self._index is not None

    def open(self, after: Callable[[], Any] | None = None) -> None:
        """Build the index on a thread of its own (searches use SQL until it is there), once
        ``after`` returns (e.g. the vector index's load, which a search needs more)."""
        if self.enabled:
            self._after = after
            self._rebuild()

    def wait(self, timeout: float | None = None) -> None:
        """Wait for a build in progress (tests, benchmarks)."""
        builder = self._builder
        if builder is not None:
            builder.join(timeout)

    def first_pass(self, query: CandidateQuery, limit: int) -> list[tuple[int, float]] | None:
        """The best ``limit`` (rowid, score) by BM25, or None: ask the SQL (always inside a
        write transaction, whose uncommitted rows the copy must not take in)."""
        if self._index is None or self.db.in_transaction():
            return None
        with self._lock:
            index = self._index
            if index is None or not self._catch_up(index):
                return None
            return index.first_pass(query, limit)

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
        try:
            if after is not None:
                after()
            _check(self._closing)  # closed while it waited: a one-off command, say
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


def _apply(db: Database, conn: Any, index: KeywordIndex, memory_ids: Sequence[str]) -> None:
    """Re-read the postings of the named memories into the index; drop those now gone."""
    for chunk in db.chunks(memory_ids):
        rows = conn.execute(f"SELECT rowid, id, term_count FROM memories WHERE id IN "
                            f"({db.marks(len(chunk))})", chunk).fetchall()
        for gone in set(chunk) - {memory_id for _, memory_id, _ in rows}:
            rowid = index.rowid_of(gone)
            if rowid is not None:
                index.drop(rowid)
        if not rows:
            continue
        rowids = [int(r) for r, _, _ in rows]
        counts: dict[int, dict[str, int]] = {r: {} for r in rowids}
        for rowid, term, tf in conn.execute(
                "SELECT memory_rowid, term, tf FROM memory_terms WHERE memory_rowid IN "
                f"({db.marks(len(rowids))})", rowids).fetchall():
            counts[int(rowid)][term] = int(tf)
        for rowid, memory_id, length in rows:
            index.set(int(rowid), memory_id, counts[int(rowid)], int(length or 0))
