"""What is running in this process: searches, and the background work that makes way for them.

A search that runs alone may embed its query on two cores (``Embedder.embed_query``'s
``alone``). Background work of the engine (the access writer) takes a core too, and a
two-thread inference whose second thread must share a core with it stalls at every
parallel step: so while background work runs, no search counts as alone. The other way
round, background work waits for a pause in the searches before it starts
(:func:`quiet_for`), so a search and a background write rarely meet at all.

The counts are per process: a child forked while a search or background work runs starts
with none running.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["background_work", "quiet_for", "search_running"]

_lock = threading.Lock()
_searches = 0  # searches in progress
_background = 0  # background writes in progress
_last_search_end = -math.inf  # time.monotonic() when the last search ended


@contextmanager
def search_running() -> Iterator[bool]:
    """Count a search as running for the block; yields whether it is alone (no other search
    and no background work running), so its query may be embedded on more than one core."""
    global _searches, _last_search_end
    with _lock:
        _searches += 1
        alone = _searches == 1 and _background == 0
    try:
        yield alone
    finally:
        with _lock:
            _searches -= 1
            _last_search_end = time.monotonic()


@contextmanager
def background_work() -> Iterator[None]:
    """Count background work as running for the block: searches starting meanwhile are not
    alone."""
    global _background
    with _lock:
        _background += 1
    try:
        yield
    finally:
        with _lock:
            _background -= 1


def quiet_for() -> float:
    """Seconds since the last search ended: 0.0 while one is running, ``inf`` if none ran."""
    with _lock:
        return 0.0 if _searches else time.monotonic() - _last_search_end


def _forget_in_child() -> None:
    global _lock, _searches, _background
    _lock, _searches, _background = threading.Lock(), 0, 0


os.register_at_fork(after_in_child=_forget_in_child)
