"""Checks on call arguments that every face applies before an operation sees them.

JSON parsers hand over numbers no operation can use: ``NaN`` and ``Infinity`` (Python's
``json`` accepts them; MCP clients send them), ``1e400`` (infinity once parsed) and integers
past 64 bits (``?after=9223372036854775808``), which overflow deep in SQLite or PostgreSQL.
:func:`check_numbers` refuses them with an error that names the field.

>>> check_numbers({"importance": 0.5, "metadata": {"n": [1, 2]}})
>>> check_numbers({"metadata": {"ratio": float("nan")}})   # InvalidInput: metadata.ratio: ...
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel

from memoryd.errors import InvalidInput

INT_MIN, INT_MAX = -(2**63), 2**63 - 1


def check_numbers(value: Any, where: str = "") -> None:
    """Raise InvalidInput for a non-finite float or an integer outside 64 bits, anywhere."""
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, bool):
            continue
        if isinstance(item, int) and not INT_MIN <= item <= INT_MAX:
            raise InvalidInput(f"{path or 'input'}: integer out of range (64-bit integers only)")
        if isinstance(item, float) and not math.isfinite(item):
            raise InvalidInput(f"{path or 'input'}: must be a finite number")
        if isinstance(item, BaseModel):
            item = item.model_dump()
        if isinstance(item, dict):
            stack.extend((v, f"{path}.{k}" if path else str(k)) for k, v in item.items())
        elif isinstance(item, (list, tuple)):
            stack.extend((v, f"{path}.{i}" if path else str(i)) for i, v in enumerate(item))
