"""The in-memory copy of the keyword postings itself: every memory's term counts in packed
per-term arrays, its length, its id's hash and the topic of the standing instruction it
states, read from the term tables in one snapshot (:func:`load`); the memories changed
since sit in a small overlay that shadows their packed postings. :mod:`memoryd.store.keyword_index`
keeps it in step with the store and answers searches from it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from memoryd.retrieval.bm25 import CorpusStats

if TYPE_CHECKING:
    from memoryd.store.database import Database
    from memoryd.store.terms import CandidateQuery

# Each term's postings as one row of two comma-joined lists, both in rowid order: a third
# of the time of one row per posting.
_POSTINGS = {
    "sqlite": "SELECT term, group_concat(memory_rowid), group_concat(tf) FROM memory_terms "
              "GROUP BY term",
    "postgresql": "SELECT term, string_agg(memory_rowid::text, ',' ORDER BY memory_rowid), "
                  "string_agg(tf::text, ',' ORDER BY memory_rowid) FROM memory_terms "
                  "GROUP BY term",
}
_ORDER_BLOCK = 1 << 20  # postings whose order is checked at a time
_SNAPSHOT = {"sqlite": "BEGIN", "postgresql": "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"}


@dataclass(frozen=True)
class Described:
    """What the copy knows of one memory: its length, counts of the query terms and the
    topic of the standing instruction it states."""

    length: int
    counts: dict[str, int]
    topic: str | None


@dataclass(frozen=True)
class FirstPass:
    """The best (rowid, BM25) before the filters, best first, and each one described."""

    pairs: list[tuple[int, float]]
    described: dict[int, Described]


class KeywordIndex:
    """Every memory's term counts: packed arrays read at load, and the memories changed since
    in a small overlay that shadows their packed postings."""

    def __init__(self, slices: dict[str, tuple[int, int]], rowids: np.ndarray, tfs: np.ndarray,
                 lengths: np.ndarray, ids: tuple[np.ndarray, np.ndarray],
                 history_seq: int, topics: dict[int, str] | None = None) -> None:
        self._slices = slices  # term -> [start, end) in rowids/tfs, each slice in rowid order
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
        # The id hash of the memory at each rowid (0: none), so that an id whose rowid was
        # taken over by another memory is never read as that one.
        self._hash_at = np.zeros(len(lengths), dtype=np.int64)
        self._hash_at[self._id_rowids] = self._id_hashes
        self._topics = topics or {}  # rowid -> instruction topic, for the memories stating one
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
                   + self._shadowed.nbytes + self._id_hashes.nbytes + self._id_rowids.nbytes
                   + self._hash_at.nbytes)

    def rowid_of(self, memory_id: str) -> int | None:
        """The rowid of the memory, when the index holds it."""
        key = hash(memory_id)
        rowid = self._new_ids.get(key)
        if rowid is None:
            at = int(np.searchsorted(self._id_hashes, key))
            if at < len(self._id_hashes) and self._id_hashes[at] == key:
                rowid = int(self._id_rowids[at])
        if rowid is None or rowid >= len(self.lengths) or self.lengths[rowid] < 0 \
                or self._hash_at[rowid] != key:
            return None
        return rowid

    def corpus_stats(self, terms: Sequence[str]) -> CorpusStats:
        """N, the average length and the df of each of ``terms`` (those some memory holds),
        as :func:`memoryd.store.terms.corpus_stats` reads them from the tables."""
        df: dict[str, int] = {}
        for term in dict.fromkeys(terms):
            start, end = self._slices.get(term, (0, 0))
            held = end - start - int(self._shadowed[self._rowids[start:end]].sum()) \
                if end > start else 0
            held += len(self._overlay_terms.get(term, ()))
            if held > 0:
                df[term] = held
        documents = self.documents
        return CorpusStats(documents, self.total_terms / documents if documents else 0.0, df)

    def describe(self, rowids: Sequence[int], terms: Sequence[str]) -> list[Described]:
        """Each memory's length, counts of ``terms`` and topic (rowids the index holds)."""
        at = np.asarray(rowids, dtype=np.int64)
        packed = np.zeros(len(at), dtype=bool)
        inside = at < len(self._shadowed)
        packed[inside] = ~self._shadowed[at[inside]]
        counts: list[dict[str, int]] = [{} for _ in range(len(at))]
        for term in terms:
            start, end = self._slices.get(term, (0, 0))
            if end <= start or not packed.any():
                continue
            postings = self._rowids[start:end]
            where = np.minimum(np.searchsorted(postings, at), end - start - 1)
            for i in np.flatnonzero(packed & (postings[where] == at)):
                counts[i][term] = int(self._tfs[start + where[i]])
        for i in np.flatnonzero(~packed):
            held = self._overlay.get(int(at[i]), {})
            counts[i] = {t: held[t] for t in terms if t in held}
        return [Described(int(self.lengths[r]), c, self._topics.get(int(r)))
                for r, c in zip(at, counts)]

    def set(self, rowid: int, memory_id: str, counts: dict[str, int], length: int,
            topic: str | None = None) -> None:
        """The memory at ``rowid`` now holds ``counts`` (its term frequencies) of ``length``."""
        self.drop(rowid)
        self._grow(rowid)
        if rowid < len(self._shadowed):
            self._shadowed[rowid] = True
        self._overlay[rowid] = counts
        for term in counts:
            self._overlay_terms.setdefault(term, set()).add(rowid)
        self._new_ids[hash(memory_id)] = rowid
        self._hash_at[rowid] = hash(memory_id)
        if topic is not None:
            self._topics[rowid] = topic
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
        self._hash_at[rowid] = 0
        self._topics.pop(rowid, None)
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
            hashes = np.zeros(len(grown), dtype=np.int64)
            hashes[: len(self._hash_at)] = self._hash_at
            self._hash_at = hashes

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
        lengths, ids, topics = _read_memories(conn, stop)
    finally:
        conn.execute("COMMIT")
    if len(rowids) and int(rowids.max()) >= len(lengths):
        # A posting without its memory (the foreign key forbids it; never index past the end).
        grown = np.full(int(rowids.max()) + 1, -1, dtype=lengths.dtype)
        grown[: len(lengths)] = lengths
        lengths = grown
    _sort_slices(slices, rowids, tfs)
    return KeywordIndex(slices, rowids, tfs, lengths, ids, int(seq), topics)


def _sort_slices(slices: dict[str, tuple[int, int]], rowids: np.ndarray, tfs: np.ndarray) -> None:
    """Put each term's postings in rowid order (both databases send them so; a lookup by
    binary search must not depend on it). Checked a block at a time: a comparison over the
    whole arrays at once held about as much again as the postings themselves."""
    if len(rowids) < 2 or not slices:
        return
    starts = np.array(sorted(start for start, _ in slices.values()), dtype=np.int64)
    unsorted: set[int] = set()
    for low in range(1, len(rowids), _ORDER_BLOCK):
        high = min(low + _ORDER_BLOCK, len(rowids))
        # Positions whose rowid is not above the one before, other than where a slice starts.
        back = np.flatnonzero(rowids[low:high] <= rowids[low - 1:high - 1]) + low
        back = back[~np.isin(back, starts)]
        unsorted.update(int(i) for i in np.searchsorted(starts, back, side="right") - 1)
    ends: dict[int, int] = {}
    for start, end in slices.values():  # an empty slice may share its start with the next
        ends[start] = max(end, ends.get(start, start))
    for i in sorted(unsorted):
        start = int(starts[i])
        end = ends[start]
        order = np.argsort(rowids[start:end], kind="stable")
        rowids[start:end] = rowids[start:end][order]
        tfs[start:end] = tfs[start:end][order]


def _read_postings(db: Database, conn: Any, stop: threading.Event | None
                   ) -> tuple[dict[str, tuple[int, int]], np.ndarray, np.ndarray]:
    """Each term's slice, and the rowids and tfs of every posting, filled into arrays sized
    from the term statistics of the same snapshot (gathering parts and joining them at the
    end held the postings twice) and as narrow as the values allow."""
    (expected,) = conn.execute("SELECT COALESCE(SUM(df), 0) FROM term_stats").fetchone()
    rowids = np.empty(int(expected), dtype=np.int32)
    tfs = np.empty(int(expected), dtype=np.uint16)
    if db.backend == "postgresql":  # a server-side cursor: rows arrive as they are read
        cursor = conn.cursor(name="memoryd_keyword_postings")
        cursor.execute(_POSTINGS[db.backend])
    else:
        cursor = conn.execute(_POSTINGS[db.backend])
    slices: dict[str, tuple[int, int]] = {}
    start = 0
    while chunk := cursor.fetchmany(1000):
        check_stop(stop)
        for term, rowids_text, tfs_text in chunk:
            term_rowids = np.fromstring(rowids_text, dtype=np.int64, sep=",")
            term_tfs = np.fromstring(tfs_text, dtype=np.int64, sep=",")
            end = start + len(term_rowids)
            if end > len(rowids):  # the statistics undercount: grow (never expected)
                rowids, tfs = _grown(rowids, end), _grown(tfs, end)
            rowids, tfs = _holding(rowids, term_rowids), _holding(tfs, term_tfs)
            rowids[start:end] = term_rowids
            tfs[start:end] = term_tfs
            slices[term] = (start, end)
            start = end
    return slices, rowids[:start], tfs[:start]


def _grown(values: np.ndarray, size: int) -> np.ndarray:
    """``values`` in an array of at least ``size`` items (room to spare for more)."""
    grown = np.empty(max(size, 2 * len(values)), dtype=values.dtype)
    grown[: len(values)] = values
    return grown


def _holding(values: np.ndarray, incoming: np.ndarray) -> np.ndarray:
    """``values``, widened to int64 when ``incoming`` does not fit its type (a rowid past
    2**31, a term counted more than 65,535 times in one memory)."""
    limits = np.iinfo(values.dtype)
    if len(incoming) and (incoming.min() < limits.min or incoming.max() > limits.max):
        return values.astype(np.int64)
    return values


def _read_memories(conn: Any, stop: threading.Event | None
                   ) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray], dict[int, str]]:
    """Every memory's length by rowid, (sorted hashes of the ids, their rowids), and the
    topics of the memories stating a standing instruction."""
    cursor = conn.execute("SELECT rowid, id, term_count, instruction_topic FROM memories")
    rowid_parts, hash_parts, length_parts = [], [], []
    topics: dict[int, str] = {}
    while chunk := cursor.fetchmany(10_000):
        check_stop(stop)
        rowid_parts.append(np.fromiter((m[0] for m in chunk), dtype=np.int64, count=len(chunk)))
        hash_parts.append(np.fromiter((hash(m[1]) for m in chunk), dtype=np.int64,
                                      count=len(chunk)))
        length_parts.append(np.fromiter((m[2] or 0 for m in chunk), dtype=np.int32,
                                        count=len(chunk)))
        topics.update((int(m[0]), m[3]) for m in chunk if m[3] is not None)
    rowids = np.concatenate(rowid_parts) if rowid_parts else np.zeros(0, dtype=np.int64)
    hashes = np.concatenate(hash_parts) if hash_parts else np.zeros(0, dtype=np.int64)
    lengths = np.full(int(rowids.max()) + 1 if len(rowids) else 1, -1, dtype=np.int32)
    if len(rowids):
        lengths[rowids] = np.concatenate(length_parts)
    order = np.argsort(hashes, kind="stable")
    return lengths, (hashes[order], rowids[order]), topics


def check_stop(stop: threading.Event | None) -> None:
    """Raise InterruptedError when ``stop`` is set (a load ends at its next block of rows)."""
    if stop is not None and stop.is_set():
        raise InterruptedError("the store is closing")
