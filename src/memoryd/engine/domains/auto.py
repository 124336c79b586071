"""Discovery by itself, off the write path: once the store reaches the accumulation threshold,
a background thread discovers the first domains.

Writes only count; the store is asked how many memories it holds (one ``COUNT``) after at
least as many writes as were missing at the last look, so a busy store is asked rarely. When
domains exist (made here, by another process or by hand) it stops looking. A discovery that
finds nothing (only noise) is tried again once the store has grown by half.

A discovery takes seconds of CPU (clustering, then scoring every memory). Started beside a
run of searches, for instance right after a bulk import that an agent goes on to search, it
slows them down; so it waits until no search has run for :data:`QUIET_SECONDS` since it was
due, for at most :data:`WAIT_SECONDS`, and runs as background work (a search meanwhile
embeds its query on one core). :meth:`AutoDiscovery.join` (``settle()``, a close) ends the
wait; once the engine is closing, a discovery that has not started is left for the next start.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from memoryd.engine.memory.running import background_work, quiet_for
from memoryd.errors import MaintenanceBusy

log = logging.getLogger("memoryd.domains")

#: A discovery waits until no search has run for this long...
QUIET_SECONDS = 1.0
#: ...for at most this long, then runs beside the searches.
WAIT_SECONDS = 30.0


class AutoDiscovery:
    """Start ``discover`` in the background once ``count()`` reaches ``min_memories``.

    ``has_domains`` and ``count`` are cheap store reads; ``discover`` runs on a daemon thread.
    ``closing`` is the engine's: set, it keeps a discovery that has not started from starting.
    """

    def __init__(self, *, enabled: bool, min_memories: int, count: Callable[[], int],
                 has_domains: Callable[[], bool], discover: Callable[[], object],
                 closing: threading.Event | None = None, quiet: float = QUIET_SECONDS,
                 wait: float = WAIT_SECONDS) -> None:
        self._enabled = enabled
        self._target = min_memories
        self._count = count
        self._has_domains = has_domains
        self._discover = discover
        self._closing = closing
        self._quiet, self._wait = quiet, wait
        self._hurry = threading.Event()  # set by join(): stop waiting for the searches
        self._lock = threading.Lock()
        self._since = 0
        self._due = 1  # look after the first write
        self._thread: threading.Thread | None = None
        self.done = not enabled

    def after_writes(self, n: int) -> None:
        """Count ``n`` new memories; maybe start a look (and a discovery) in the background."""
        if self.done or n <= 0:
            return
        with self._lock:
            self._since += n
            if self._since < self._due or (self._thread and self._thread.is_alive()):
                return
            self._since = 0
            self._hurry.clear()
            self._thread = threading.Thread(target=self._look, args=(time.monotonic(),),
                                            name="memoryd-domains", daemon=True)
            self._thread.start()

    def _look(self, due: float) -> None:
        try:
            if self._has_domains():
                self.done = True
                return
            count = self._count()
            if count < self._target:
                self._due = self._target - count
                return
            self._make_way(due)
            if self._closing is not None and self._closing.is_set():
                return  # the next start looks again
            with background_work():
                self._discover()
            if self._has_domains():
                self.done = True
            else:  # only noise: try again when the store has grown by half
                self._due, self._target = max(1, count // 2), count + count // 2
        except MaintenanceBusy:
            self._due = 1  # someone else is changing the domains: look again soon
        except InterruptedError:  # the engine closed meanwhile; the next start looks again
            log.info("automatic domain discovery stopped: the engine is closing")
        except Exception:  # keep writes working; the next look retries
            log.exception("automatic domain discovery failed")
            self._due = max(self._due, 50)

    def _make_way(self, due: float) -> None:
        """Wait until no search has run for :data:`QUIET_SECONDS` since ``due`` (at most
        :data:`WAIT_SECONDS` from it), unless :meth:`join` ends the wait."""
        deadline = due + self._wait
        while not self._hurry.is_set():
            now = time.monotonic()
            left = self._quiet - min(quiet_for(), now - due)
            if left <= 0 or now >= deadline:
                return
            self._hurry.wait(min(left, deadline - now))

    def join(self, timeout: float | None = None) -> None:
        """Wait for a running look or discovery (before closing the store, and in tests); one
        still waiting for a pause in the searches starts at once."""
        thread = self._thread
        if thread is not None:
            self._hurry.set()
            thread.join(timeout)
