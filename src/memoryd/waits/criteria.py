"""Wait criteria: what must be seen for a wait to resolve, parsed and checked up front.

A criteria is a mapping (or a short string, see :func:`parse_criteria`) with these keys:

=============  ==========================================================================
``regex``      a line of new output matches this regular expression (``re.search``)
``contains``   a line of new output contains this text
``ignore_case`` both of the above ignore case
``status``     http: the URL answers this status (default 200 when nothing else is asked)
``exits``      process/terminal: the process exits; ``exit_code`` narrows it to one code
``condition``  screen/window: a natural-language condition judged by the vision model
=============  ==========================================================================

>>> parse_criteria("/BUILD (OK|FAILED)/").regex
'BUILD (OK|FAILED)'
>>> parse_criteria({"contains": "ready", "ignore_case": True}).matches_line("Server READY")
True
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any

from memoryd.waits.errors import InvalidWait

MAX_LINE_CHARS = 4096  # lines are cut before matching: bounds the cost of any regex
_KEYS = frozenset({"regex", "contains", "ignore_case", "status", "exits", "exit_code", "condition"})


@dataclass(frozen=True)
class Criteria:
    """A validated criteria (see the module docstring for the meaning of each field)."""

    regex: str | None = None
    contains: str | None = None
    ignore_case: bool = False
    status: int | None = None
    exits: bool = False
    exit_code: int | None = None
    condition: str | None = None
    _pattern: re.Pattern[str] | None = field(default=None, repr=False, compare=False)

    @property
    def wants_text(self) -> bool:
        """True when a line of text can satisfy the criteria."""
        return self.regex is not None or self.contains is not None

    @cached_property
    def _needle(self) -> str | None:
        if self.contains is None:
            return None
        return self.contains.casefold() if self.ignore_case else self.contains

    def matches_line(self, line: str) -> bool:
        """Whether one line of text satisfies the text part of the criteria."""
        line = line[:MAX_LINE_CHARS]
        if self._pattern is not None and self._pattern.search(line):
            return True
        if self._needle is not None:
            hay = line.casefold() if self.ignore_case else line
            return self._needle in hay
        return False

    def first_match(self, lines: Iterable[str]) -> str | None:
        """The first line that matches, or None."""
        for line in lines:
            if self.matches_line(line):
                return line
        return None

    def to_dict(self) -> dict[str, Any]:
        """Only the fields that are set (what a job stores and a caller reads back)."""
        out = {k: v for k, v in asdict(self).items() if not k.startswith("_")}
        return {k: v for k, v in out.items() if v not in (None, False)}

    def describe(self) -> str:
        """A short human form for wake messages: ``/re/``, ``"text"``, ``exit 0``, ..."""
        parts = []
        if self.regex is not None:
            parts.append(f"/{self.regex}/")
        if self.contains is not None:
            parts.append(f'"{self.contains}"')
        if self.status is not None:
            parts.append(f"status {self.status}")
        if self.exits:
            parts.append("exit" if self.exit_code is None else f"exit {self.exit_code}")
        if self.condition is not None and self.condition != self.contains:
            parts.append(f"'{self.condition}'")
        return " or ".join(parts) or "any change"


def parse_criteria(value: str | Mapping[str, Any]) -> Criteria:
    """A :class:`Criteria` from a mapping or a short string; raises :class:`InvalidWait`.

    Strings: ``/PATTERN/`` or ``re:PATTERN`` is a regex, ``exit`` / ``exit:N`` a process
    exit, ``status:N`` an HTTP status; any other text is a plain ``contains`` (and, for
    screens, also the condition the vision model judges).
    """
    if isinstance(value, str):
        return _from_mapping(_string_form(value))
    if isinstance(value, Mapping):
        return _from_mapping(value)
    raise InvalidWait("criteria", "must be a string or an object")


def _string_form(text: str) -> dict[str, Any]:
    if not text.strip():
        raise InvalidWait("criteria", "is empty")
    if len(text) >= 2 and text.startswith("/") and text.endswith("/"):
        return {"regex": text[1:-1]}
    if text.startswith("re:"):
        return {"regex": text[3:]}
    if text == "exit":
        return {"exits": True}
    for prefix, key in (("exit:", "exit_code"), ("status:", "status")):
        if text.startswith(prefix):
            number = text[len(prefix):].strip()
            if not re.fullmatch(r"-?\d+", number):
                raise InvalidWait("criteria", f"{prefix} needs a whole number, got {number!r}")
            return {key: int(number), **({"exits": True} if key == "exit_code" else {})}
    return {"contains": text}


def _from_mapping(data: Mapping[str, Any]) -> Criteria:
    unknown = set(data) - _KEYS
    if unknown:
        raise InvalidWait("criteria", f"unknown key(s) {sorted(unknown)}; use {sorted(_KEYS)}")
    values = {k: v for k, v in data.items() if v is not None}
    for key in ("regex", "contains", "condition"):
        if key in values and (not isinstance(values[key], str) or not values[key]):
            raise InvalidWait(f"criteria.{key}", "must be a non-empty string")
    for key in ("status", "exit_code"):
        if key in values and (isinstance(values[key], bool) or not isinstance(values[key], int)):
            raise InvalidWait(f"criteria.{key}", "must be an integer")
    if "status" in values and not 100 <= values["status"] <= 599:
        raise InvalidWait("criteria.status", f"{values['status']} is not an HTTP status")
    if "exit_code" in values:
        values["exits"] = True
    pattern = _compile(values.get("regex"), bool(values.get("ignore_case")))
    criteria = Criteria(**values, _pattern=pattern)
    if not (criteria.wants_text or criteria.status is not None or criteria.exits
            or criteria.condition):
        raise InvalidWait("criteria", "says nothing to wait for")
    return criteria


def _compile(regex: str | None, ignore_case: bool) -> re.Pattern[str] | None:
    if regex is None:
        return None
    try:
        return re.compile(regex, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise InvalidWait("criteria.regex", f"does not compile: {exc}") from None
