"""Giving freed heap memory back to the operating system after a large load.

Loading the vector index of a large store and the embedding model allocate and free many
blocks; glibc keeps what was freed in its arenas, so the process stays as large as at its
peak. ``malloc_trim`` returns the free pages (bench/results/serve_memory.md measures it on a
real server). Elsewhere (musl, macOS, Windows) this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import lru_cache
from typing import Any


@lru_cache(maxsize=1)
def _libc() -> Any:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return libc if libc is not None and hasattr(libc, "malloc_trim") else None


def release_free_memory() -> bool:
    """Return the heap's free pages to the operating system (glibc); False where unsupported."""
    libc = _libc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True
