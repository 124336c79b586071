"""The vector index's float32 vectors saved beside an SQLite store (``<file>.hnsw.vectors``).

Reading 100,000 vectors from the ``memory_vectors`` table costs a row at a time in Python
(and, with other threads busy at start-up, a wait for the interpreter lock at every row);
one file read of the same matrix costs a few hundredths of a second. The file is a cache,
written with the saved HNSW graph and trusted only when the table still holds exactly what it
was saved from (the same last change sequence number, and the same count and sums of the
rows' sequence numbers and row ids, checked by the caller); anything else loads from the
table as before.

Format: the keys (int64) then the matrix (float32, one row per key), two ``.npy`` arrays one
after the other.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np


def write(path: Path, keys: np.ndarray, matrix: np.ndarray) -> None:
    """Save ``keys`` and their rows of ``matrix`` at ``path`` (replaced at once)."""
    partial = path.with_name(path.name + ".partial")
    with open(partial, "wb") as out:
        np.save(out, np.ascontiguousarray(keys, dtype=np.int64), allow_pickle=False)
        np.save(out, np.ascontiguousarray(matrix, dtype=np.float32), allow_pickle=False)
    os.replace(partial, path)


def read(path: Path, count: int, dims: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The saved keys and matrix when the file holds ``count`` distinct keys of ``dims``
    dimensions; None when it is missing, unreadable or holds anything else."""
    try:
        with open(path, "rb") as src:
            keys = np.load(src, allow_pickle=False)
            matrix = np.load(src, allow_pickle=False)
    except (OSError, ValueError, EOFError):
        return None
    if (keys.dtype != np.int64 or matrix.dtype != np.float32 or keys.shape != (count,)
            or matrix.shape != (count, dims) or len(np.unique(keys)) != count):
        return None
    return keys, matrix
