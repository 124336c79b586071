"""Checks on the raw arguments of a call that no field type can make, applied once for every
face by :meth:`memoryd.operations.Operation.parse` (REST, MCP, CLI alike):

* text is valid Unicode (lone surrogates from JSON escapes cannot be stored) and holds no NUL
  (U+0000): PostgreSQL cannot store it and SQLite would, so both backends refuse it alike;
* numbers are finite (``NaN`` and ``Infinity`` reach Python through MCP clients and ``json``)
  and within the 64-bit integer range (``?after=9223372036854775808`` would overflow in the
  store; a float past it is refused alike, as JSON does not tell 1e30 from an integer);
* nothing nests deeper than :data:`MAX_DEPTH` levels.

Each error names where the bad value is (``tags.2``, ``metadata.owner``) and never the value:
a mapping key that is not a plain identifier is named by position (``metadata[key 0]``), so a
path cannot repeat a secret either.

>>> check_arguments({"importance": 0.5, "metadata": {"n": [1, 2]}})
>>> check_arguments({"tags": ["ok", "a\\x00b"]})   # InvalidInput: tags.1: ... NUL ...
"""

from __future__ import annotations

import math
import re
from typing import Any

from pydantic import BaseModel

from memoryd.errors import InvalidInput

INT_MIN, INT_MAX = -(2**63), 2**63 - 1
#: The largest float below 2^63: what a number that is not an integer may reach either way.
FLOAT_LIMIT = float(2**63 - 1024)
MAX_DEPTH = 64
NUL_MESSAGE = "text must not contain the NUL character (U+0000)"
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_\-]{1,40}")


def key_path(path: str, key: Any, index: int) -> str:
    """The path of a mapping's item: ``path.key`` for a plain key, else by position."""
    if isinstance(key, str) and _PLAIN_KEY.fullmatch(key):
        return f"{path}.{key}" if path else key
    return f"{path}[key {index}]" if path else f"[key {index}]"


def check_text(text: str, where: str) -> None:
    """InvalidInput unless ``text`` is valid Unicode without NUL."""
    if "\x00" in text:
        raise InvalidInput(f"{where or 'input'}: {NUL_MESSAGE}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{where or 'input'}: text is not valid Unicode") from None


def check_arguments(value: Any, where: str = "") -> None:
    """InvalidInput for NUL or invalid Unicode in any text (mapping keys included), a number
    that is not finite or an integer outside 64 bits, anywhere in ``value``."""
    stack: list[tuple[Any, str, int]] = [(value, where, 0)]
    while stack:
        item, path, depth = stack.pop()
        if depth > MAX_DEPTH:
            top = path.split(".")[0].split("[")[0] or "input"
            raise InvalidInput(f"{top}: nested deeper than {MAX_DEPTH} levels")
        if isinstance(item, str):
            check_text(item, path)
        elif isinstance(item, bool):
            continue
        elif isinstance(item, int) and not INT_MIN <= item <= INT_MAX:
            raise InvalidInput(f"{path or 'input'}: integer out of range (64-bit integers only)")
        elif isinstance(item, float) and not math.isfinite(item):
            raise InvalidInput(f"{path or 'input'}: must be a finite number")
        elif isinstance(item, float) and not -FLOAT_LIMIT <= item <= FLOAT_LIMIT:
            raise InvalidInput(f"{path or 'input'}: number out of range (at most 2^63 either way)")
        elif isinstance(item, BaseModel):
            stack.append((item.model_dump(), path, depth))
        elif isinstance(item, dict):
            for i, (key, child) in enumerate(item.items()):
                child_path = key_path(path, key, i)
                if isinstance(key, str):
                    check_text(key, f"{path or 'input'}[key {i}]")
                stack.append((child, child_path, depth + 1))
        elif isinstance(item, (list, tuple)):
            stack.extend((v, f"{path}.{i}" if path else str(i), depth + 1)
                         for i, v in enumerate(item))

