"""Thread pools of the read path, one per kind of job, made anew in a forked child.

A search runs its keyword side on the caller's thread while the query is embedded on a
worker (``query-vector``): the model's forward pass lets go of the GIL, so on two cores the
two overlap. Each kind of job has its own pool, so that a job that waits for another kind
can never fill the workers that kind needs.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

_lock = threading.Lock()
_pools: dict[str, tuple[int, ThreadPoolExecutor]] = {}  # name -> (pid, pool)


def pool(name: str) -> ThreadPoolExecutor:
    """The pool for jobs of kind ``name`` (e.g. ``query-vector``) in this process."""
    with _lock:
        entry = _pools.get(name)
        if entry is None or entry[0] != os.getpid():
            # Up to one job per core: more would only wait for a core.
            entry = (os.getpid(), ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 1),
                                                     thread_name_prefix=f"memoryd-{name}"))
            _pools[name] = entry
        return entry[1]
