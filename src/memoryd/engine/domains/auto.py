"""Discovery by itself, off the write path: once the store reaches the accumulation threshold,
a background thread discovers the first domains.

Writes only count; the store is asked how many memories it holds (one ``COUNT``) after at
least as many writes as were missing at the last look, so a busy store is asked rarely. When
domains exist (made here, by another process or by hand) it stops looking. A discovery that
finds nothing (only noise) is tried again once the store has grown by half.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from memoryd.errors import MaintenanceBusy

log = logging.getLogger("memoryd.domains")


class AutoDiscovery:
    """Start ``discover`` in the background once ``count()`` reaches ``min_memories``.

    ``has_domains`` and ``count`` are cheap store reads; ``discover`` runs on a daemon thread.
    """

    def __init__(self, *, enabled: bool, min_memories: int, count: Callable[[], int],
                 has_domains: Callable[[], bool], discover: Callable[[], object]) -> None:
        self._enabled = enabled
        self._target = min_memories
        self._count = count
        self._has_domains = has_domains
        self._discover = discover
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
            self._thread = threading.Thread(target=self._look, name="memoryd-domains",
                                            daemon=True)
            self._thread.start()

    def _look(self) -> None:
        try:
            if self._has_domains():
                self.done = True
                return
            count = self._count()
            if count < self._target:
                self._due = self._target - count
                return
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

    def join(self, timeout: float | None = None) -> None:
        """Wait for a running look or discovery (before closing the store, and in tests)."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
