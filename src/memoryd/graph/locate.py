"""Where things are in a JSON text that parsed: the line and column of a top-level key's
value, of each item of a top-level array, of a field inside one of those items.

``json.loads`` gives values, not positions; a graph file's problems must be reported at their
line and column, so the text is walked once more with the same decoder (``raw_decode``),
which only ever runs on text ``json.loads`` accepted.

    >>> where = Locator('{"nodes": [{"id": "a"},\\n  {"id": "b", "type": 7}]}')
    >>> where.position(where.field(where.items("nodes")[1], "type"))
    (2, 23)
"""

from __future__ import annotations

import json
import re

_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def _skip(text: str, i: int) -> int:
    match = _WS.match(text, i)
    return match.end() if match else i


def object_values(text: str, start: int) -> dict[str, int]:
    """The offsets of the values of the object at ``start``, by key (``{}`` if there is no
    object there; a repeated key keeps its last value, as ``json.loads`` does)."""
    i = _skip(text, start)
    if text[i:i + 1] != "{":
        return {}
    out: dict[str, int] = {}
    i = _skip(text, i + 1)
    while i < len(text) and text[i] == '"':
        key, i = _DECODER.raw_decode(text, i)
        i = _skip(text, _skip(text, i) + 1)  # past the colon
        out[key] = i
        _, i = _DECODER.raw_decode(text, i)
        i = _skip(text, i)
        if text[i:i + 1] == ",":
            i = _skip(text, i + 1)
    return out


def array_items(text: str, start: int) -> list[int]:
    """The offsets of the items of the array at ``start`` (``[]`` if there is no array)."""
    i = _skip(text, start)
    if text[i:i + 1] != "[":
        return []
    out: list[int] = []
    i = _skip(text, i + 1)
    while i < len(text) and text[i] != "]":
        out.append(i)
        _, i = _DECODER.raw_decode(text, i)
        i = _skip(text, i)
        if text[i:i + 1] == ",":
            i = _skip(text, i + 1)
    return out


class Locator:
    """Positions in one JSON text whose top level is an object."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._top = object_values(text, 0)

    def value_of(self, key: str) -> int | None:
        """The offset of a top-level key's value (None when there is no such key)."""
        return self._top.get(key)

    def items(self, key: str) -> list[int]:
        """The offsets of the items of a top-level array."""
        start = self._top.get(key)
        return [] if start is None else array_items(self.text, start)

    def field(self, start: int, key: str) -> int | None:
        """The offset of ``key``'s value in the object at ``start``."""
        return object_values(self.text, start).get(key)

    def path(self, start: int, steps: list[str | int]) -> int:
        """The offset of the value ``steps`` (keys and list indexes) lead to from ``start``;
        where a step leads nowhere, the offset of the last value found."""
        offset = start
        for step in steps:
            if isinstance(step, int):
                items = array_items(self.text, offset)
                found = items[step] if 0 <= step < len(items) else None
            else:
                found = object_values(self.text, offset).get(step)
            if found is None:
                break
            offset = found
        return offset

    def position(self, offset: int | None) -> tuple[int, int]:
        """The 1-based line and column of ``offset`` (the start of the text when None)."""
        offset = 0 if offset is None else offset
        line_start = self.text.rfind("\n", 0, offset) + 1
        return self.text.count("\n", 0, offset) + 1, offset - line_start + 1
