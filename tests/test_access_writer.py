"""Access recording in the background (memoryd.engine.memory.access_writer): searches queue the
testing effect and never wait for the write lock; settle() and close() write everything
queued; a full queue drops and counts; the writer thread never holds up an exit.

Real SQLite and PostgreSQL stores, the real model, real subprocesses.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import memoryd
from memoryd.cognition import scheduling
from memoryd.engine.memory.access_writer import AccessWriter, Retrieval, write_retrievals
from memoryd.engine.memory.running import search_running
from waits_fixtures import wait_until

TEXTS = [
    "Alice maintains the billing service written in Go",
    "The staging database runs PostgreSQL 16 on port 5433",
    "Bob prefers tabs over spaces in every repository",
    "The release train leaves every second Tuesday",
    "Carol owns the mobile app and its push notifications",
    "The billing service sends invoices on the first of the month",
    "Deploys to production need two approvals",
    "The staging cluster is rebuilt every Sunday night",
]
QUERIES = ["who maintains billing", "staging database port", "tabs or spaces",
           "when does the release train leave", "who owns the mobile app",
           "when are invoices sent", "production deploy approvals", "staging rebuild"]


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, store_url: str) -> str:
    if request.param == "sqlite":
        return store_url
    return request.getfixturevalue("pg_database")()


def _search_many(engine: memoryd.Engine, rounds: int) -> Counter[str]:
    """Run the queries ``rounds`` times (with and without sessions): how often each memory
    was returned."""
    returned: Counter[str] = Counter()
    for n in range(rounds):
        for i, query in enumerate(QUERIES):
            session = f"s{n}" if i % 2 else None
            hits = engine.search(query, 3, session_key=session)
            returned.update({h.memory.id for h in hits})
    return returned


def test_a_clean_close_records_every_returned_memory(open_mem, url: str) -> None:
    engine = open_mem(url)
    engine.add_many([{"content": t} for t in TEXTS])
    returned = _search_many(engine, 3)
    engine.close()
    reopened = open_mem(url)
    counts = {m.id: m.state.access_count for m in reopened.list(limit=100)}
    assert sum(returned.values()) > len(QUERIES) * 3
    assert counts == {i: returned.get(i, 0) for i in counts}
    strengthened = [i for i in returned if reopened.get(i).state.last_accessed is not None]
    assert sorted(strengthened) == sorted(returned)


def test_settle_makes_the_recordings_visible(open_mem, url: str) -> None:
    engine = open_mem(url)
    memory = engine.add("The release train leaves every second Tuesday")
    for _ in range(4):
        assert engine.search("release train", 3, session_key="a")[0].memory.id == memory.id
    engine.settle()
    state = engine.get(memory.id).state
    assert state.access_count == 4 and state.last_accessed is not None
    assert engine.context.accesses is not None and engine.context.accesses.pending == 0


def _holding_the_write_lock(engine: memoryd.Engine) -> tuple[threading.Event, threading.Thread]:
    """A thread that holds the store's write transaction until the returned event is set."""
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with engine.store.transaction():
            held.set()
            release.wait(120)

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    assert held.wait(30)
    return release, thread


def test_a_search_does_not_wait_for_the_write_lock(open_mem, url: str) -> None:
    """While another writer holds the lock, a search returns (the write is queued) and the
    recording lands once the lock is free. Synchronous recording would block here."""
    engine = open_mem(url)
    memory = engine.add("Carol owns the mobile app and its push notifications")
    engine.search("mobile app owner", 3)  # warm the model and the writer thread
    engine.settle()
    release, holder = _holding_the_write_lock(engine)
    results: list[int] = []
    searcher = threading.Thread(
        target=lambda: results.append(len(engine.search("who owns the mobile app", 3))),
        daemon=True)
    searcher.start()
    searcher.join(60)
    returned_while_locked = not searcher.is_alive()
    release.set()
    holder.join(60)
    searcher.join(60)
    assert returned_while_locked, "the search waited for the write lock"
    assert results == [1]
    engine.settle()
    assert engine.get(memory.id).state.access_count == 2


def test_a_full_queue_drops_new_recordings_and_counts_them(open_mem, url: str) -> None:
    """The documented choice: a search never waits; what does not fit is dropped, counted."""
    engine = open_mem(url)
    memory = engine.add("Deploys to production need two approvals")
    writer = AccessWriter(engine.store, capacity=2, linger=0)  # takes one at a time
    at = datetime.now(timezone.utc)
    one = Retrieval((memory.id,), None, at)
    release, holder = _holding_the_write_lock(engine)
    try:
        assert writer.submit(one)  # the writer takes it and waits for the lock
        for _ in range(600):
            if writer.queued == 0:
                break
            threading.Event().wait(0.05)
        assert writer.queued == 0
        accepted = [writer.submit(one) for _ in range(5)]
    finally:
        release.set()
        holder.join(60)
    assert accepted == [True, True, False, False, False]
    assert writer.dropped == 3
    assert writer.flush(60) and writer.pending == 0 and writer.failed == 0
    assert engine.get(memory.id).state.access_count == 3
    writer.close()
    assert writer.submit(one)  # after close: written at once
    assert engine.get(memory.id).state.access_count == 4


def test_retrievals_close_in_time_share_one_write(open_mem, url: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer lingers for more retrievals after the first; flush() cuts that short."""
    from memoryd.engine.memory import access_writer

    engine = open_mem(url)
    memory = engine.add("Deploys to production need two approvals")
    writes: list[int] = []
    real = access_writer.write_retrievals

    def counted(store, retrievals):  # type: ignore[no-untyped-def]
        writes.append(len(retrievals))
        real(store, retrievals)

    monkeypatch.setattr(access_writer, "write_retrievals", counted)
    writer = AccessWriter(engine.store, linger=30.0)
    at = datetime.now(timezone.utc)
    for _ in range(3):
        assert writer.submit(Retrieval((memory.id,), None, at))
    assert writer.flush(10)  # well before the 30 s linger ends
    assert writes == [3]
    assert engine.get(memory.id).state.access_count == 3
    writer.close(10)


def test_closing_waits_at_most_its_timeout(open_mem, url: str,
                                          caplog: pytest.LogCaptureFixture) -> None:
    """Behind a lock that is not released, close() gives up after its timeout and says how
    much it did not record; the retrieval is still written once the lock is free."""
    engine = open_mem(url)
    memory = engine.add("The release train leaves every second Tuesday")
    writer = AccessWriter(engine.store, linger=0)
    release, holder = _holding_the_write_lock(engine)
    try:
        assert writer.submit(Retrieval((memory.id,), None, datetime.now(timezone.utc)))
        with caplog.at_level("WARNING", logger="memoryd.access"):
            writer.close(0.5)
        assert "did not finish in 0.5s: 1 retrievals not recorded" in caplog.text
        assert writer.pending == 1
    finally:
        release.set()
        holder.join(60)
    assert writer.flush(60) and writer.pending == 0 and writer.failed == 0
    assert engine.get(memory.id).state.access_count == 1


def test_an_engine_closes_after_its_database_is_gone(
    open_mem, pg_server, pg_database, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """PostgreSQL dropped under an engine with a search still to record: close() returns
    (after CLOSE_TIMEOUT, not the pool's 30 s wait per retry) and logs what it lost."""
    from memoryd.engine.memory import access_writer

    monkeypatch.setattr(access_writer, "CLOSE_TIMEOUT", 1.0)
    url = pg_database()
    engine = open_mem(url)
    engine.add("Deploys to production need two approvals")
    engine.search("deploy approvals", 3)
    engine.settle()
    engine.search("deploy approvals", 3)  # queued: the writer lingers before writing it
    pg_server.drop_database(url)
    closer = threading.Thread(target=engine.close, daemon=True)
    with caplog.at_level("WARNING", logger="memoryd.access"):
        closer.start()
        closer.join(20)  # well under the pool's 30 s wait for a connection
        assert not closer.is_alive(), "close() waited for the dropped database"
    assert "retrievals not recorded" in caplog.text or "at close failed" in caplog.text


SCRIPT = """
import sys, threading, time, memoryd
engine = memoryd.open(sys.argv[1])
engine.add_many([{"content": t} for t in sys.argv[2:]])
returned = len(engine.search(sys.argv[2], 2))  # loads the model
engine.settle()
held = threading.Event()
def hold():  # another writer holds the lock past the end of the script
    with engine.store.transaction():
        held.set()
        time.sleep(2)
threading.Thread(target=hold, daemon=True).start()
held.wait()
returned += sum(len(engine.search(text, 2)) for text in sys.argv[2:])
print(returned, flush=True)
if CLOSE:
    engine.close()
"""


@pytest.mark.parametrize("close", [True, False])
def test_the_writer_thread_never_holds_up_an_exit(cli_env, tmp_path: Path, close: bool) -> None:
    """A process that searched ends with 0, closed or not (the thread is a daemon and an exit
    hook writes what is queued), and loses nothing queued, even behind another writer."""
    store = tmp_path / "exit.db"
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT.replace("CLOSE", str(close)), f"sqlite:///{store}", *TEXTS[:4]],
        env=cli_env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "terminate called" not in done.stderr and "Traceback" not in done.stderr
    with memoryd.open(f"sqlite:///{store}") as engine:
        total = sum(m.state.access_count for m in engine.list(limit=100))
    assert total == int(done.stdout)


def test_a_batch_waits_for_a_pause_in_the_searches(open_mem, store_url: str) -> None:
    """While a search runs, the writer holds its batch back (writing would slow the search
    down); once the searches pause, it writes, without being asked to."""
    engine = open_mem(store_url)
    memory = engine.add("Deploys to production need two approvals")
    writer = AccessWriter(engine.store, linger=0, quiet=0.05, yield_seconds=120)
    with search_running():
        assert writer.submit(Retrieval((memory.id,), None, datetime.now(timezone.utc)))
        time.sleep(0.5)
        assert writer.pending == 1, "written while a search ran"
    wait_until(lambda: writer.pending == 0, 30)
    assert engine.get(memory.id).state.access_count == 1
    writer.close()


def test_a_batch_waits_for_a_pause_no_longer_than_its_bound(open_mem, store_url: str) -> None:
    """Searches that never pause cannot hold the writing back for longer than the bound."""
    engine = open_mem(store_url)
    memory = engine.add("Deploys to production need two approvals")
    writer = AccessWriter(engine.store, linger=0, quiet=0.05, yield_seconds=0.3)
    with search_running():
        assert writer.submit(Retrieval((memory.id,), None, datetime.now(timezone.utc)))
        wait_until(lambda: writer.pending == 0, 30)
    assert engine.get(memory.id).state.access_count == 1
    writer.close()


def test_a_flush_a_close_or_a_full_batch_does_not_wait_for_the_searches(
    open_mem, store_url: str
) -> None:
    engine = open_mem(store_url)
    memory = engine.add("Deploys to production need two approvals")
    one = Retrieval((memory.id,), None, datetime.now(timezone.utc))
    writer = AccessWriter(engine.store, linger=0, yield_seconds=120, batch_size=3)
    with search_running():
        assert writer.submit(one)
        assert writer.flush(30), "the flush waited for the search"
        for _ in range(3):  # a full batch: the writer must keep up, it writes at once
            assert writer.submit(one)
        wait_until(lambda: writer.pending == 0, 30)
        assert writer.submit(one)
        closer = threading.Thread(target=writer.close, daemon=True)
        closer.start()
        closer.join(30)
        assert not closer.is_alive(), "the close waited for the search"
    assert writer.pending == 0
    assert engine.get(memory.id).state.access_count == 5


def test_a_search_that_meets_a_background_write_is_not_alone(
    open_mem, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search running beside the writer embeds its query on one core: two threads of a
    two-thread inference would share one core with the writer."""
    from memoryd.engine.memory import access_writer

    engine = open_mem(store_url)
    memory = engine.add("Deploys to production need two approvals")
    seen: list[bool] = []
    real = access_writer.write_retrievals

    def beside_a_search(store, retrievals):  # type: ignore[no-untyped-def]
        with search_running() as alone:
            seen.append(alone)
        real(store, retrievals)

    monkeypatch.setattr(access_writer, "write_retrievals", beside_a_search)
    writer = AccessWriter(engine.store, linger=0)
    assert writer.submit(Retrieval((memory.id,), None, datetime.now(timezone.utc)))
    assert writer.flush(30)
    writer.close()
    with search_running() as alone:
        assert alone
    assert seen == [False]


def _one_at_a_time(states: dict, retrievals: list[Retrieval]) -> dict:  # type: ignore[type-arg]
    """The reference: every retrieval applied in order by ``scheduling.on_retrieved``."""
    marked: set[tuple[str, str]] = set()
    for r in retrievals:
        for i in r.memory_ids:
            repeat = (r.session_key, i) in marked
            if r.session_key is not None:
                marked.add((r.session_key, i))
            states[i] = scheduling.on_retrieved(states[i], r.at, r.session_key, repeat)
    return states


def test_batches_record_what_one_retrieval_at_a_time_would(open_mem, url: str) -> None:
    """A batch applies its retrievals in order, sessions and repeats included: the states
    come out as applying every retrieval alone, one after another, makes them."""
    engine = open_mem(url)
    a, b, c, d = (engine.add(t).id for t in TEXTS[:4])
    start = datetime.now(timezone.utc)

    def at(minutes: int) -> datetime:
        return start + timedelta(minutes=minutes)

    first = [Retrieval((a, b, d), None, at(0)), Retrieval((a,), None, at(1)),
             Retrieval((a, c), "s", at(2)), Retrieval((a, c), "s", at(3))]
    second = [Retrieval((a, d), None, at(4)),  # repeats: counted only
              Retrieval((a, c), "s", at(5)),  # repeats in session s
              Retrieval((b,), None, at(45)),  # 45 minutes on: strengthened again
              Retrieval((a,), None, at(46)),  # 44 minutes after session s: the same
              Retrieval((c,), "t", at(47)), Retrieval((b,), None, at(48))]
    expected = _one_at_a_time(engine.store.states([a, b, c, d]), first + second)
    write_retrievals(engine.store, first)
    write_retrievals(engine.store, second)
    assert engine.store.states([a, b, c, d]) == expected
    assert expected[a].access_count == 7 and expected[d].access_count == 2
    assert expected[b].last_accessed == at(45) and expected[a].last_accessed == at(46)
