"""Access recording off the read path: the testing effect, written in the background.

A search strengthens the memories it returns (:func:`scheduling.on_retrieved`: the access
count, and at most once per session the storage and retrieval strengths). Writing that
takes the store's write lock, so :func:`record_retrieval` only queues the retrieval and
returns; one :class:`AccessWriter` thread per engine writes what has queued, a batch per
transaction. The writer waits :data:`LINGER_SECONDS` after a retrieval arrives for more to
join it, so a run of searches costs one write instead of one each. Each batch reads the
memories' current states inside its transaction and applies the retrievals in the order
they happened, so retrievals of the same memory queued together all count (none
overwrites another).

The writer shares the process, and the interpreter, with the searches: a batch written
while a search runs slows that search down. So after the linger a batch waits for a pause
of :data:`QUIET_SECONDS` with no search running (:func:`running.quiet_for`), for at most
:data:`YIELD_SECONDS` more, and while it is written no search embeds on two cores
(:func:`running.background_work`). It does not wait when a full batch is queued (the writer
must keep up with the searches), nor for a flush or a close. While it waits it wakes every
:data:`QUIET_SECONDS` at most, not at every search.

Bounds and guarantees (docs/scaling.md, "Access recording"):

* The queue holds :data:`QUEUE_CAPACITY` retrievals. When it is full (the writer cannot
  get the write lock, e.g. behind a long import) a new retrieval is **dropped** and
  counted (:attr:`AccessWriter.dropped`, logged): a search never waits for the lock.
* :meth:`AccessWriter.flush` (``Engine.settle()``) returns once everything queued before it
  is written; :meth:`AccessWriter.close` (``Engine.close()``, and at interpreter exit)
  writes everything queued, then stops the thread. It waits at most
  :data:`CLOSE_TIMEOUT` seconds, so an unreachable store cannot hold up a shutdown (what
  is then unwritten is lost and logged). The thread is a daemon: it never keeps
  a process alive.
* A process killed outright (``kill -9``, power loss) loses the retrievals still queued:
  those of the last :data:`LINGER_SECONDS` + :data:`YIELD_SECONDS` or so, under load up to
  :data:`QUEUE_CAPACITY`.
"""

from __future__ import annotations

import atexit
import logging
import queue
import threading
import time
import weakref
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Callable, Protocol

from memoryd.cognition import scheduling
from memoryd.engine.memory.running import background_work, quiet_for
from memoryd.models import SchedulingState, SearchHit

if TYPE_CHECKING:
    from memoryd.store.base import Store

__all__ = ["AccessWriter", "Retrieval", "record_retrieval", "write_retrievals"]

log = logging.getLogger("memoryd.access")

#: Retrievals (one search's hits each) the queue holds before new ones are dropped.
QUEUE_CAPACITY = 10_000
#: Retrievals written per transaction at most.
BATCH_SIZE = 256
#: How long closing waits for the queued retrievals to be written, in seconds.
CLOSE_TIMEOUT = 10.0
#: How long the writer waits, after a retrieval arrives, for others to share its write.
LINGER_SECONDS = 0.2
#: A pause in the searches this long is a moment to write a batch.
QUIET_SECONDS = 0.05
#: How long a batch waits for such a pause after the linger, at most.
YIELD_SECONDS = 2.0


@dataclass(frozen=True)
class Retrieval:
    """One search's returned memories, in the session they were returned in, and when."""

    memory_ids: tuple[str, ...]
    session_key: str | None
    at: datetime


class Recording(Protocol):
    """What recording a retrieval needs of an engine context (``EngineContext``)."""

    @property
    def store(self) -> Store: ...
    @property
    def clock(self) -> Callable[[], datetime]: ...
    @property
    def accesses(self) -> AccessWriter | None: ...


def record_retrieval(ctx: Recording, hits: list[SearchHit], session_key: str | None) -> None:
    """Strengthen retrieved memories a little (at most once per memory per session): queued
    for the engine's access writer, or written now when the context has none.

    Without a session key, :func:`scheduling.on_retrieved` treats retrievals close in
    time as one session. Access counts always advance. No history rows: retrieval is
    not a change to the memory's content.
    """
    if not hits:
        return
    retrieval = Retrieval(tuple(dict.fromkeys(h.memory.id for h in hits)), session_key,
                          ctx.clock())
    if ctx.accesses is None:
        write_retrievals(ctx.store, [retrieval])
    else:
        ctx.accesses.submit(retrieval)


def write_retrievals(store: Store, retrievals: list[Retrieval]) -> None:
    """Apply ``retrievals`` in order to the memories' current states: one transaction."""
    with store.transaction():
        wanted = list(dict.fromkeys(i for r in retrievals for i in r.memory_ids))
        states: dict[str, SchedulingState] = store.states(wanted)
        for r in retrievals:
            ids = [i for i in r.memory_ids if i in states]  # deleted since: nothing to mark
            if not ids:
                continue
            fresh = store.mark_accessed(r.session_key, ids, r.at) if r.session_key else set(ids)
            for i in ids:
                states[i] = scheduling.on_retrieved(states[i], r.at, r.session_key,
                                                    i not in fresh)
        store.update_states(states)


class AccessWriter:
    """A bounded queue of retrievals and the daemon thread that writes them in batches."""

    def __init__(self, store: Store, *, capacity: int = QUEUE_CAPACITY,
                 batch_size: int = BATCH_SIZE, linger: float = LINGER_SECONDS,
                 quiet: float = QUIET_SECONDS, yield_seconds: float = YIELD_SECONDS) -> None:
        self._store = store
        self._batch_size = batch_size
        self._linger = linger
        self._quiet = quiet
        self._yield = yield_seconds
        self._queue: queue.Queue[Retrieval | None] = queue.Queue(capacity)
        self._hurry = threading.Event()  # set by flush and close: stop waiting, write
        self._lock = threading.Lock()
        self._progress = threading.Condition(self._lock)
        self._submitted = self._done = 0
        self._awaited = 0  # what a flush waits for: up to this many retrievals written
        self._dropped = self._failed = 0
        self._thread: threading.Thread | None = None
        self._closed = False

    @property
    def dropped(self) -> int:
        """Retrievals not recorded because the queue was full."""
        return self._dropped

    @property
    def failed(self) -> int:
        """Retrievals not recorded because their write failed (logged)."""
        return self._failed

    @property
    def pending(self) -> int:
        """Retrievals queued and not yet written."""
        with self._lock:
            return self._submitted - self._done

    @property
    def queued(self) -> int:
        """Retrievals waiting in the queue (not yet taken by the writer thread)."""
        return self._queue.qsize()

    def submit(self, retrieval: Retrieval) -> bool:
        """Queue ``retrieval`` without waiting; False when the queue is full (dropped).

        After :meth:`close` the retrieval is written at once, on the caller's thread.
        """
        with self._lock:
            if self._closed:
                closed = True
            else:
                closed = False
                self._start()
                try:
                    self._queue.put_nowait(retrieval)
                except queue.Full:
                    self._dropped += 1
                    dropped = self._dropped
                else:
                    self._submitted += 1
                    return True
        if closed:
            write_retrievals(self._store, [retrieval])
            return True
        if dropped == 1 or dropped % 1000 == 0:
            log.warning("access recording queue full: %d retrievals dropped so far", dropped)
        return False

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every retrieval queued before this call is written (or has failed);
        False if ``timeout`` seconds passed first."""
        with self._progress:
            target = self._submitted
            if self._done >= target:
                return True
            self._awaited = max(self._awaited, target)
        self._hurry.set()
        with self._progress:
            return self._progress.wait_for(lambda: self._done >= target, timeout)

    def close(self, timeout: float | None = None) -> None:
        """Write everything queued, then stop the thread (idempotent).

        Waits at most ``timeout`` seconds (None: :data:`CLOSE_TIMEOUT`). A store that has
        become unreachable must not hold up a shutdown: past the timeout the thread is
        left behind (a daemon), and what it has not written is lost, with a warning.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
        if thread is None:
            return
        self._hurry.set()
        timeout = CLOSE_TIMEOUT if timeout is None else timeout
        deadline = time.monotonic() + timeout
        try:  # after every queued retrieval; the writer makes room
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            pass
        thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            log.warning("access writer did not finish in %ss: %d retrievals not recorded",
                        timeout, self.pending)

    def _start(self) -> None:
        """Start the writer thread on the first retrieval (called with the lock held)."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="memoryd-access-writer",
                                        daemon=True)
        self._thread.start()
        atexit.register(_close_at_exit, weakref.ref(self))

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            self._wait_to_write(time.monotonic())
            batch, stop = self._take(first)
            with background_work():
                self._write(batch)
            if stop:
                return

    def _wait_to_write(self, first_at: float) -> None:
        """Wait :data:`LINGER_SECONDS` from ``first_at`` for more retrievals to join the
        first, then up to :data:`YIELD_SECONDS` more for a pause in the searches; not at all
        once a full batch is queued or a flush or close waits for the writer."""
        deadline = first_at + self._linger + self._yield
        while True:
            self._hurry.clear()  # before looking, so that a flush after the look wakes us
            if self._closed or self._done < self._awaited:
                return
            if self._queue.qsize() + 1 >= self._batch_size:
                return
            now = time.monotonic()
            wait = max(first_at + self._linger - now, self._quiet - quiet_for())
            if wait <= 0 or now >= deadline:
                return
            self._hurry.wait(min(wait, deadline - now))

    def _take(self, first: Retrieval) -> tuple[list[Retrieval], bool]:
        """``first`` and what is queued behind it, up to a batch, and whether the writer was
        told to stop after them."""
        batch = [first]
        while len(batch) < self._batch_size:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is None:
                return batch, True
            batch.append(item)
        return batch, False

    def _write(self, batch: list[Retrieval]) -> None:
        failed = 0
        try:
            write_retrievals(self._store, batch)
        except Exception:
            if self._closed:  # shutting down: no retries against a failing store
                failed = len(batch)
                log.exception("recording %d retrievals at close failed", failed)
            else:  # one bad retrieval (a store error) must not cost the batch
                failed = self._write_one_by_one(batch)
        with self._progress:
            self._failed += failed
            self._done += len(batch)
            self._progress.notify_all()

    def _write_one_by_one(self, batch: list[Retrieval]) -> int:
        """Write each retrieval in its own transaction; how many failed (logged)."""
        failed = 0
        for retrieval in batch:
            try:
                write_retrievals(self._store, [retrieval])
            except Exception:
                failed += 1
                log.exception("recording a retrieval of %d memories failed",
                              len(retrieval.memory_ids))
        return failed


def _close_at_exit(ref: weakref.ref[AccessWriter]) -> None:
    """Write what is queued before the interpreter finalizes (no-op once closed)."""
    writer = ref()
    if writer is not None:
        writer.close()
