"""Strict JSON request bodies for the REST routes.

Python's ``json.loads`` accepts more than JSON: ``NaN``, ``Infinity`` and ``-Infinity``,
numbers such as ``1e400`` that overflow to infinity, a UTF-8 byte order mark (when given
bytes), and integers of any size. Each of those reached the engine or the response encoder
and ended in a 500. It also keeps the last value of a repeated key, silently.
:func:`parse_json_body` accepts RFC 8259 JSON only, with numbers a 64-bit double or integer
can hold, keys unique within each object, nested at most :data:`MAX_DEPTH` levels, and
raises ``json.JSONDecodeError`` (FastAPI's 422 ``json_invalid``) with a message that says
what is wrong. :class:`StrictJSONRoute` makes a FastAPI route parse its body with it.
"""

from __future__ import annotations

import codecs
import json
import math
from typing import Any, Callable, Coroutine

import anyio.to_thread
from fastapi import Request, Response
from fastapi.routing import APIRoute

from memoryd.operations.arguments import INT_MAX, INT_MIN, MAX_DEPTH, key_path


class _Refused(ValueError):
    """A value json.loads would accept but memoryd does not (``token``: its text)."""

    def __init__(self, message: str, token: str) -> None:
        super().__init__(message)
        self.token = token


def _constant(name: str) -> Any:
    raise _Refused(f"{name} is not a JSON number (numbers must be finite)", name)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # a finite one past 2^63 is refused with its field's name
        raise _Refused(f"number {text[:40]} is out of range", text)
    return value


def _int(text: str) -> int:
    if len(text) > 20:
        raise _Refused(f"integer {text[:24]}… is out of range (64-bit integers only)", text)
    value = int(text)
    if not INT_MIN <= value <= INT_MAX:
        raise _Refused(f"integer {text} is out of range (64-bit integers only)", text)
    return value


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are unique (with a repeated key, parsers disagree on which
    value counts: a check made on the first would not be the one stored)."""
    out: dict[str, Any] = {}
    for i, (key, value) in enumerate(pairs):
        if key in out:  # a dict lookup: linear in the object's size however many keys repeat
            name = key_path("", key, i)  # the key itself only if it is a plain identifier
            raise _Refused(f"key {name!r} is repeated in an object", json.dumps(key))
        out[key] = value
    return out


def _depth(value: Any) -> int:
    """Nesting depth of parsed JSON, computed without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in item if isinstance(child, (dict, list)))
    return deepest


def parse_json_body(body: bytes) -> Any:
    """Parse a request body as strict JSON; raises json.JSONDecodeError saying why not.

    >>> parse_json_body(b'{"importance": 0.5}')
    {'importance': 0.5}
    """
    if body.startswith(codecs.BOM_UTF8):
        raise json.JSONDecodeError("a UTF-8 byte order mark is not allowed", "", 0)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise json.JSONDecodeError("the body is not valid UTF-8", "", exc.start) from None
    try:
        value = json.loads(text, parse_constant=_constant, parse_float=_float, parse_int=_int,
                           object_pairs_hook=_object)
    except _Refused as exc:  # where (the first occurrence of) the refused token is
        raise json.JSONDecodeError(str(exc), text, max(text.find(exc.token), 0)) from None
    except RecursionError:
        raise json.JSONDecodeError(f"nested deeper than {MAX_DEPTH} levels", text, 0) from None
    if _depth(value) > MAX_DEPTH:
        raise json.JSONDecodeError(f"nested deeper than {MAX_DEPTH} levels", text, 0)
    return value


class StrictJSONRequest(Request):
    """A request whose ``json()`` is :func:`parse_json_body`."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()
            # In a worker thread: a megabyte of JSON takes milliseconds to parse, and the
            # event loop must stay free for every other request meanwhile.
            self._json = await anyio.to_thread.run_sync(parse_json_body, body)
        return self._json


class StrictJSONRoute(APIRoute):
    """An APIRoute that reads its JSON body strictly (see the module docstring)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict(request: Request) -> Response:
            return await handler(StrictJSONRequest(request.scope, request.receive))

        return strict
