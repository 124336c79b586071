"""The in-memory copy of the keyword postings (memoryd.store.keyword_index), on both backends.

It computes the keyword side's first pass instead of the SQL, so every test compares it with
a store on the same file that asks the SQL (``keyword_index=False``): same candidates, same
order, same scores, after writes of this process, of another process, and after a change it
cannot follow (then it steps aside until it has been built again).
"""

from __future__ import annotations

import subprocess
import threading
import sys
import textwrap
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memoryd.config import Settings
from memoryd.models import Memory, SchedulingState, SearchFilters
from memoryd.opening import open_store
from memoryd.retrieval.bm25 import DEFAULT_B, DEFAULT_K1, Bm25Parameters
from memoryd.retrieval.tokens import query_terms
from memoryd.store.base import Actor, Store
from memoryd.store.keywords import term_list
from memoryd.store.sqlite import SQLiteStore
from memoryd.store.terms import FIRST_PASS, CandidateQuery

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
ALL = SearchFilters()
ACTOR = Actor("test")
WORDS = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron "
         "pi rho sigma tau upsilon phi chi psi omega").split()
QUERIES = ("alpha", "omega psi", "kappa beta alpha", "rho rho tau", "Omega, CHI and the phi",
           "gamma delta epsilon zeta eta", "nothing matches this")


def make(content: str, **fields: Any) -> Memory:
    return Memory(id=fields.pop("id", None) or str(uuid.uuid4()), content=content,
                  created_at=NOW, updated_at=NOW, state=SchedulingState(last_review=NOW),
                  **fields)


def bulk(n: int, seed: int = 5) -> list[Memory]:
    """``n`` memories of 3-12 words drawn with skewed frequencies (a few words are common)."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, len(WORDS) + 1)
    weights /= weights.sum()
    return [make(" ".join(rng.choice(WORDS, size=int(rng.integers(3, 13)), p=weights)),
                 scope="project:x" if i % 10 == 0 else "user") for i in range(n)]


@pytest.fixture
def pair(backend: str, tmp_path: Path, request: pytest.FixtureRequest):
    """(SQL store, in-memory store, URL) of one backend, one database holding FIRST_PASS + 100
    memories."""
    url = (f"sqlite:///{tmp_path / 'k.db'}" if backend == "sqlite"
           else request.getfixturevalue("pg_database")())
    sql = open_store(url, Settings(keyword_index=False))
    sql.insert(bulk(FIRST_PASS + 100), None, ACTOR)
    memory = open_store(url, Settings())
    memory.keyword_cache.wait()
    yield sql, memory, url
    memory.close()
    sql.close()


def candidates(store: Store, query: str, filters: SearchFilters = ALL,
               limit: int = 50) -> list[tuple[str, int, dict[str, int]]]:
    pool = store.keyword_candidates(query_terms(query), filters, now=NOW, limit=limit)
    return [(c.memory_id, c.length, dict(c.term_frequency))
            for c in pool.candidates]


def from_memory(store: Store, query: str) -> list[tuple[int, float]] | None:
    """What the in-memory copy answers for the first pass (None: it steps aside)."""
    terms = term_list(query_terms(query))
    return store.keyword_cache.first_pass(
        CandidateQuery.of(terms, store.corpus_stats(terms), 2.0, 1.0), FIRST_PASS)


def ranking(store: Store, query: str, filters: SearchFilters = ALL,
            limit: int = 50) -> list[tuple[float, str]]:
    """(BM25 to 9 places, id) of the candidates, in the store's order; the score recomputed
    from each candidate's length and counts by the pure module."""
    terms = term_list(query_terms(query))
    pool = store.keyword_candidates(terms, filters, now=NOW, limit=limit)
    params = Bm25Parameters.of(terms, pool.stats, k1=DEFAULT_K1, b=DEFAULT_B)
    return [(round(params.score(c), 9), c.memory_id) for c in pool.candidates]


def assert_same(sql: Store, memory: Store, filters: SearchFilters = ALL, limit: int = 50) -> None:
    """The same candidates in the same order, but for the order of equal scores (the SQL sums
    a memory's terms in the order its rows come, so equal texts may differ in the last bit)."""
    for query in QUERIES:
        terms = term_list(query_terms(query))
        stats = memory.keyword_cache.corpus_stats(terms)  # the copy's, read without SQL
        assert stats is not None and stats == sql.corpus_stats(terms), query
        assert memory.keyword_candidates(terms, filters, now=NOW, limit=limit).stats == stats
        want, got = ranking(sql, query, filters, limit), ranking(memory, query, filters, limit)
        assert [s for s, _ in got] == [s for s, _ in want], query
        assert sorted(got) == sorted(want) or (  # ties cut at the limit may differ
            [x for x in sorted(got) if x[0] > want[-1][0]]
            == [x for x in sorted(want) if x[0] > want[-1][0]]), query


def test_the_first_pass_from_memory_ranks_as_the_sql(pair) -> None:
    sql, memory, _ = pair
    assert memory.keyword_cache.ready
    assert from_memory(memory, "omega psi")  # the memory path answers, not the SQL
    assert_same(sql, memory)
    for limit in (1, 10, FIRST_PASS + 50):
        assert_same(sql, memory, limit=limit)


def test_filters_that_leave_few_of_the_first_pass_rank_every_match(pair) -> None:
    sql, memory, _ = pair
    assert_same(sql, memory, SearchFilters(scope="project:x"))
    assert_same(sql, memory, SearchFilters(node_types=["decision"]))  # none: empty


def test_a_rare_term_is_never_dropped(pair) -> None:
    sql, memory, _ = pair
    rare = make("omega alpha beta zanzibar " + " ".join(f"pad{i}" for i in range(60)))
    sql.insert([rare], None, ACTOR)
    found = [c[0] for c in candidates(memory, "alpha zanzibar", limit=10)]
    assert found[0] == rare.id  # the only memory holding the rare term, despite its length
    assert_same(sql, memory)


def test_it_follows_the_writes_of_this_process(pair) -> None:
    sql, memory, _ = pair
    added = make("psi psi psi omega")
    memory.insert([added], None, ACTOR)
    assert from_memory(memory, "psi")[0][0] == memory.db.rows(
        f"SELECT rowid FROM memories WHERE id = {memory.db.mark}", (added.id,))[0][0]
    assert_same(sql, memory)
    memory.update(added.id, {"content": "tau tau upsilon"}, ACTOR)
    assert added.id not in [c[0] for c in candidates(memory, "psi")]
    assert added.id == candidates(memory, "tau upsilon")[0][0]
    assert_same(sql, memory)
    memory.delete(added.id, ACTOR)
    assert added.id not in [c[0] for c in candidates(memory, "tau upsilon")]
    assert from_memory(memory, "tau") is not None  # still in step: no rebuild needed
    assert_same(sql, memory)
    for words in ("tau upsilon", "psi omega", "zzz-unknown"):  # changed, packed, nobody's
        terms = term_list(query_terms(words))
        assert memory.keyword_cache.corpus_stats(terms) == sql.corpus_stats(terms)


WRITER = textwrap.dedent("""
    import sys
    from datetime import UTC, datetime
    from memoryd.config import Settings
    from memoryd.models import Memory, SchedulingState
    from memoryd.opening import open_store
    from memoryd.store.base import Actor
    now = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
    store = open_store(sys.argv[1], Settings(keyword_index=False))
    store.insert([Memory(id=sys.argv[2], content="quokka alpha", created_at=now,
                         updated_at=now, state=SchedulingState(last_review=now))],
                 None, Actor("other"))
    if len(sys.argv) > 3:
        store.delete(sys.argv[3], Actor("other"))
    store.close()
""")


def test_it_follows_the_writes_of_another_process(pair) -> None:
    sql, memory, url = pair
    assert from_memory(memory, "alpha")
    first = candidates(memory, "alpha")[0][0]
    added = str(uuid.uuid4())
    subprocess.run([sys.executable, "-c", WRITER, url, added], check=True)
    assert added in [c[0] for c in candidates(memory, "quokka")]
    assert from_memory(memory, "quokka") is not None  # caught up by the change sequence
    assert_same(sql, memory)
    # A deletion by another process: found in the change sequence, the memory's rowid from
    # its id, and dropped; no new build needed.
    subprocess.run([sys.executable, "-c", WRITER, url, str(uuid.uuid4()), first], check=True)
    assert first not in [c[0] for c in candidates(memory, "alpha")]
    assert from_memory(memory, "alpha") is not None
    assert_same(sql, memory)


def test_a_change_outside_the_change_sequence_makes_it_step_aside(pair) -> None:
    sql, memory, _ = pair
    victim = candidates(memory, "omega")[0][0]
    mark = sql.db.mark
    # What an import that keeps old sequence numbers looks like to the copy: rows change
    # with no new entry in the history.
    with sql.db.write() as tx:
        rowid, length = tx.execute(f"SELECT rowid, term_count FROM memories WHERE id = {mark}",
                                   (victim,)).fetchone()
        terms = [r[0] for r in tx.execute(
            f"SELECT term FROM memory_terms WHERE memory_rowid = {mark}", (rowid,)).fetchall()]
        tx.execute(f"DELETE FROM memory_terms WHERE memory_rowid = {mark}", (rowid,))
        tx.executemany(f"UPDATE term_stats SET df = df - 1 WHERE term = {mark}",
                       [(t,) for t in terms])
        tx.execute("UPDATE term_totals SET documents = documents - 1, "
                   f"total_terms = total_terms - {mark} WHERE id = 1", (length,))
        tx.execute(f"DELETE FROM memories WHERE rowid = {mark}", (rowid,))
    assert from_memory(memory, "omega") is None
    assert victim not in [c[0] for c in candidates(memory, "omega")]
    memory.keyword_cache.wait()
    assert from_memory(memory, "omega") is not None
    assert_same(sql, memory)


def test_inside_a_write_transaction_the_sql_answers(pair) -> None:
    sql, memory, _ = pair
    ghost = make("zebra zebra omega")
    with pytest.raises(RuntimeError):
        with memory.transaction():
            memory.insert([ghost], None, ACTOR)
            assert from_memory(memory, "zebra") is None  # must not take in uncommitted rows
            assert candidates(memory, "zebra")[0][0] == ghost.id
            raise RuntimeError("roll back")
    assert candidates(memory, "zebra") == []
    assert from_memory(memory, "zebra omega") is not None
    kept = make("zebra omega")
    memory.insert([kept], None, ACTOR)
    assert [c[0] for c in candidates(memory, "zebra")] == [kept.id]
    assert_same(sql, memory)


def test_closing_while_it_loads_stops_the_load(tmp_path: Path) -> None:
    from memoryd.store.keyword_postings import load

    path = tmp_path / "big.db"
    seed = SQLiteStore(path, keyword_index=False)
    seed.insert(bulk(3000, seed=9), None, ACTOR)
    closing = threading.Event()
    closing.set()
    with seed.db.read() as conn:
        with pytest.raises(InterruptedError):  # the flag close() sets ends a load under way
            load(seed.db, conn, closing)
        assert load(seed.db, conn, threading.Event()).documents == 3000
    seed.close()
    store = SQLiteStore(path)
    store.close()
    builder = store.keyword_cache._builder
    assert builder is None or not builder.is_alive()
    assert not store.keyword_cache.ready


def test_the_setting_turns_it_off(tmp_path: Path) -> None:
    import memoryd

    with memoryd.open(f"sqlite:///{tmp_path / 'off.db'}", keyword_index=False) as mem:
        assert not mem.store.keyword_cache.ready
        assert mem.store.keyword_cache._builder is None


def test_a_failing_load_leaves_the_sql_answering(tmp_path: Path, monkeypatch) -> None:
    from memoryd.errors import StoreError
    from memoryd.store.keyword_index import KeywordCache

    def fail(self: KeywordCache) -> int:
        raise StoreError("the database went away")

    monkeypatch.setattr(KeywordCache, "_seq_now", fail)
    store = SQLiteStore(tmp_path / "f.db")
    store.insert(bulk(50), None, ACTOR)
    store.keyword_cache.wait()  # the thread ends without raising (pytest reports it if not)
    assert not store.keyword_cache.ready
    assert candidates(store, "alpha")  # the SQL path
    store.close()


def described(store: Store, memory_ids: list[str], query: str) -> list[tuple[str, int, dict[str, int], str | None]]:
    """The store's term counts of the given memories (the vector side's question)."""
    return [(c.memory_id, c.length, dict(c.term_frequency), c.topic)
            for c in store.term_counts(memory_ids, term_list(query_terms(query)))]


def test_term_counts_come_from_memory_as_the_sql_gives_them(pair) -> None:
    sql, memory, url = pair
    instruction = make("When I ask about alpha beta, answer with omega psi psi")
    memory.insert([instruction], None, ACTOR)
    stored = [r[0] for r in sql.db.rows("SELECT id FROM memories ORDER BY rowid LIMIT 120", ())]
    ids = [*stored, instruction.id, str(uuid.uuid4())]  # the last one was never stored
    for query in QUERIES:
        assert described(memory, ids, query) == described(sql, ids, query), query
    # Asked of the copy alone: every stored memory is answered there, with its topic.
    held = memory.keyword_cache.term_counts(ids, ["alpha", "omega", "psi"])
    assert held is not None and set(held) == set(ids[:-1])
    assert held[instruction.id].topic == "alpha beta"
    assert held[instruction.id].counts == {"alpha": 1, "omega": 1, "psi": 2}
    # Written by another process since the copy last looked: caught up before answering.
    added = str(uuid.uuid4())
    subprocess.run([sys.executable, "-c", WRITER, url, added, ids[0]], check=True)
    assert memory.keyword_cache.term_counts([added], ["quokka"])[added].counts == {"quokka": 1}
    assert described(memory, [ids[0], added], "quokka alpha") == described(
        sql, [ids[0], added], "quokka alpha")
    assert ids[0] not in {c[0] for c in described(memory, [ids[0]], "alpha")}


def test_a_rowid_taken_over_by_another_memory_is_not_read_as_the_old_one(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "r.db")
    store.insert(bulk(20), None, ACTOR)
    store.keyword_cache.wait()
    last = make("omega omega omega")
    store.insert([last], None, ACTOR)
    assert store.keyword_cache.term_counts([last.id], ["omega"])[last.id].counts == {"omega": 3}
    rowid = store.db.rows("SELECT rowid FROM memories WHERE id = ?", (last.id,))[0][0]
    store.delete(last.id, ACTOR)
    heir = make("alpha beta")  # SQLite gives the freed highest rowid to the next memory
    store.insert([heir], None, ACTOR)
    assert store.db.rows("SELECT rowid FROM memories WHERE id = ?", (heir.id,))[0][0] == rowid
    held = store.keyword_cache.term_counts([last.id, heir.id], ["omega", "alpha"])
    assert held is not None and set(held) == {heir.id}
    assert held[heir.id].counts == {"alpha": 1}
    store.close()


def test_postings_sent_out_of_rowid_order_are_sorted_at_load() -> None:
    from memoryd.store.keyword_postings import _sort_slices

    slices = {"a": (0, 3), "b": (3, 7), "c": (7, 8)}
    rowids = np.array([5, 2, 9, 1, 3, 4, 8, 6], dtype=np.int32)
    tfs = np.array([50, 20, 90, 10, 30, 40, 80, 60], dtype=np.uint16)
    _sort_slices(slices, rowids, tfs)
    assert rowids.tolist() == [2, 5, 9, 1, 3, 4, 8, 6]
    assert tfs.tolist() == [20, 50, 90, 10, 30, 40, 80, 60]  # each tf moved with its rowid


def test_the_copy_waits_for_its_signal_and_closing_ends_the_wait(tmp_path: Path) -> None:
    path = tmp_path / "u.db"
    seed = SQLiteStore(path, keyword_index=False)
    seed.insert(bulk(50), None, ACTOR)
    seed.close()
    go = threading.Event()
    store = SQLiteStore(path, keyword_index_until=go)  # as `memoryd serve` opens it
    store.keyword_cache.wait(0.3)
    assert not store.keyword_cache.ready
    assert candidates(store, "alpha")  # the SQL answers meanwhile
    go.set()
    store.keyword_cache.wait()
    assert store.keyword_cache.ready and from_memory(store, "alpha")
    store.close()
    never = SQLiteStore(path, keyword_index_until=threading.Event())
    never.close()  # returns: the build stops waiting when the store closes
    assert not never.keyword_cache._builder.is_alive()
    assert not never.keyword_cache.ready


def test_out_of_order_postings_are_found_across_check_blocks(monkeypatch) -> None:
    import memoryd.store.keyword_postings as postings

    monkeypatch.setattr(postings, "_ORDER_BLOCK", 2)  # slices straddle the blocks checked
    slices = {"a": (0, 3), "b": (3, 7), "c": (7, 8), "d": (8, 11)}
    rowids = np.array([5, 2, 9, 1, 3, 4, 8, 6, 7, 1, 4], dtype=np.int32)
    tfs = np.arange(11, dtype=np.uint16)
    postings._sort_slices(slices, rowids, tfs)
    assert rowids.tolist() == [2, 5, 9, 1, 3, 4, 8, 6, 1, 4, 7]
    assert tfs.tolist() == [1, 0, 2, 3, 4, 5, 6, 7, 9, 10, 8]


def _loaded(store: SQLiteStore) -> tuple[dict[str, list[tuple[int, int]]], np.dtype]:
    """Each term's (rowid, tf) pairs as the load reads them, and the type the tfs are held in."""
    from memoryd.store.keyword_postings import load

    with store.db.read() as conn:
        index = load(store.db, conn)
    held = {term: list(zip(index._rowids[a:b].tolist(), index._tfs[a:b].tolist()))
            for term, (a, b) in index._slices.items()}
    return held, index._tfs.dtype


def test_the_load_keeps_every_posting_when_the_statistics_undercount(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db", keyword_index=False)
    store.insert(bulk(60), None, ACTOR)
    want, _ = _loaded(store)
    with store.db.write() as conn:
        conn.execute("UPDATE term_stats SET df = 1")  # the arrays are sized from these
    got, dtype = _loaded(store)
    assert got == want and dtype == np.uint16
    store.close()


def test_the_load_widens_a_count_too_large_for_its_narrow_type(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "w.db", keyword_index=False)
    store.insert(bulk(30), None, ACTOR)
    with store.db.write() as conn:
        (rowid,) = conn.execute("SELECT MIN(memory_rowid) FROM memory_terms "
                                "WHERE term = 'alpha'").fetchone()
        conn.execute("UPDATE memory_terms SET tf = 70000 WHERE term = 'alpha' "
                     "AND memory_rowid = ?", (rowid,))
    got, dtype = _loaded(store)
    assert dtype == np.int64 and (rowid, 70000) in got["alpha"]
    store.close()
