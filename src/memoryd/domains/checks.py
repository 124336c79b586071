"""Input checks shared by the domain modules: vectors, thresholds, counts.

Every check raises :class:`memoryd.errors.InvalidInput` naming what was wrong, before
anything is computed, so bad input never yields a half-made result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from memoryd.errors import InvalidInput


def unit_rows(vectors: Any, *, name: str = "vectors", dims: int | None = None) -> np.ndarray:
    """``vectors`` as a float32 (n, d) matrix of unit rows; refuses what cannot be one.

    Refused: not 2-D, no columns, a width other than ``dims``, NaN or infinite values,
    all-zero rows (no direction to compare). Rows are re-normalised, so callers may pass
    vectors of any length.
    """
    try:
        matrix = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{name} must be a matrix of numbers: {exc}") from None
    if matrix.ndim != 2 or matrix.shape[1] == 0:
        raise InvalidInput(f"{name} must be a 2-D (n, dims) matrix, got shape {matrix.shape}")
    if dims is not None and matrix.shape[1] != dims:
        raise InvalidInput(f"{name} have {matrix.shape[1]} dimensions, expected {dims}")
    if not np.isfinite(matrix).all():
        raise InvalidInput(f"{name} contain NaN or infinite values")
    norms = np.linalg.norm(matrix, axis=1)
    zero = np.flatnonzero(norms == 0)
    if zero.size:
        raise InvalidInput(f"{name} row {int(zero[0])} is all zeros")
    return matrix / norms[:, None]


def unit_vector(vector: Any, *, name: str = "vector", dims: int | None = None) -> np.ndarray:
    """One vector as a unit float32 array of length ``dims`` (see :func:`unit_rows`)."""
    try:
        array = np.asarray(vector, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{name} must be a vector of numbers: {exc}") from None
    if array.ndim != 1:
        raise InvalidInput(f"{name} must be a 1-D vector, got shape {array.shape}")
    return unit_rows(array[None, :], name=name, dims=dims)[0]


def threshold(value: float, *, name: str = "threshold") -> float:
    """A cosine threshold: a finite number in [-1, 1]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
        raise InvalidInput(f"{name} must be a number in [-1, 1], got {value!r}")
    if not -1.0 <= value <= 1.0:
        raise InvalidInput(f"{name} must be in [-1, 1], got {value}")
    return float(value)


def share(value: float, *, name: str) -> float:
    """A fraction in [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise InvalidInput(f"{name} must be a fraction in [0, 1], got {value!r}")
    return float(value)


def count(value: int, *, name: str, minimum: int) -> int:
    """An integer of at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidInput(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


def same_length(items: Sequence[Any], n: int, *, name: str, of: str) -> None:
    """Refuse ``items`` unless it has one entry per row of ``of``."""
    if len(items) != n:
        raise InvalidInput(f"{name} has {len(items)} entries but there are {n} {of}")
