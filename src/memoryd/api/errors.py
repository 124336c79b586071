"""Errors as HTTP responses: one body shape for every route, built by code that cannot fail.

``{"success": false, "data": null, "error": "<message>", "code": "<kind>"}`` (plus
``detail``, the field errors, on 422). Status codes: 400 malformed request (headers, body
encoding), 401 no or bad key, 403 the key may not do this (or a foreign Origin), 404 unknown
memory, key, task, wait or domain, 405 method not allowed (with ``Allow``), 408 the body arrived too
slowly, 409 maintenance busy or a task that already ended, 413 body too large, 421 a Host this server does not answer
to, 422 invalid input (the message names the field), 503 store or embedding model unusable (or too many open
event streams), 500 a bug.

Every value placed in a body goes through :func:`json_safe` first (NaN, Infinity, bytes,
lone surrogates, exceptions and odd objects become strings), and :func:`error_response`
falls back to a fixed body if even that fails: an error handler must never raise, since a
raising handler turns a 422 into a 500 and drops the keep-alive connection. Field errors do
not echo the rejected input: it may hold a secret or a megabyte of text. What a message may
say is decided in :mod:`memoryd.operations.messages`: a failing store or model says only that
(503, details in the server log), and every message is screened for credentials.
"""

from __future__ import annotations

import json
import logging
import math
from typing import Any, Iterable

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel
from starlette.types import Message, Send

from memoryd.errors import (
    Conflict,
    DomainNotFound,
    EmbeddingError,
    Forbidden,
    InvalidInput,
    InvalidKey,
    KeyNotFound,
    MaintenanceBusy,
    MemorydError,
    MemoryNotFound,
    StoreError,
)
from memoryd.operations.messages import client_message, without_secrets

log = logging.getLogger("memoryd.api")

_STATUS: list[tuple[type[Exception], int, str]] = [
    (InvalidKey, 401, "unauthorized"),
    (Forbidden, 403, "forbidden"),
    (MemoryNotFound, 404, "not_found"),
    (KeyNotFound, 404, "not_found"),
    (DomainNotFound, 404, "not_found"),
    (LookupError, 404, "not_found"),  # a task or wait the caller may not see, among others
    (Conflict, 409, "conflict"),
    (InvalidInput, 422, "invalid_input"),
    (MaintenanceBusy, 409, "busy"),
    (StoreError, 503, "store_unavailable"),
    (EmbeddingError, 503, "embedding_unavailable"),
]
_CODES = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    408: "request_timeout",
    413: "too_large",
}
_FALLBACK = b'{"success":false,"data":null,"error":"error","code":"error"}'
_MAX_DEPTH = 8
_MAX_TEXT = 2000


class ErrorEnvelope(BaseModel):
    """The body of every error response (``detail`` lists the field errors of a 422)."""

    success: bool = False
    data: None = None
    error: str
    code: str
    detail: list[dict[str, Any]] | None = None


def json_safe(value: Any, depth: int = 0) -> Any:
    """``value`` as plain JSON data that json.dumps(allow_nan=False) and UTF-8 accept."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if abs(value) < 2**63 else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, str):
        text = value if len(value) <= _MAX_TEXT else value[:_MAX_TEXT] + "…"
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, (bytes, bytearray)):
        return json_safe(bytes(value[:_MAX_TEXT]).decode("utf-8", "backslashreplace"), depth)
    if depth >= _MAX_DEPTH:
        return "…"
    if isinstance(value, dict):
        return {str(json_safe(k, depth + 1)): json_safe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [json_safe(v, depth + 1) for v in list(value)[:100]]
    try:
        return json_safe(str(value), depth)
    except Exception:  # an object whose __str__ raises
        return f"<{type(value).__name__}>"


def error_body(message: str, code: str, **extra: Any) -> dict[str, Any]:
    """The error envelope (values made JSON-safe)."""
    return json_safe({"success": False, "data": None, "error": message, "code": code, **extra})


def error_response(
    status: int, message: str, code: str, headers: dict[str, str] | None = None, **extra: Any
) -> Response:
    """The error envelope as a response; never raises."""
    headers = dict(headers or {})
    if status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    try:
        return JSONResponse(error_body(message, code, **extra), status_code=status, headers=headers)
    except Exception:
        log.exception("could not render an error response")
        return Response(_FALLBACK, status_code=status, media_type="application/json")


class StartTracker:
    """Wraps an ASGI ``send`` and records whether the response has started, so middleware
    knows whether it may still answer with an error envelope."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.started = False

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.started = True
        await self._send(message)


async def send_error(
    send: Send,
    status: int,
    message: str,
    code: str,
    headers: Iterable[tuple[str, str]] = (),
) -> None:
    """Send the error envelope from ASGI middleware (before any app has answered)."""
    try:
        body = json.dumps(
            error_body(message, code), ensure_ascii=False, separators=(",", ":")
        ).encode("utf-8")
    except Exception:
        body = _FALLBACK
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers]
    if status == 401:
        raw.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def status_of(exc: MemorydError) -> tuple[int, str]:
    for kind, status, code in _STATUS:
        if isinstance(exc, kind):
            return status, code
    return 400, "error"


async def memoryd_error(request: Request, exc: Exception) -> Response:
    status, code = status_of(exc) if isinstance(exc, MemorydError) else (500, "internal")
    return error_response(status, _text(client_message(exc)), code)


async def http_error(request: Request, exc: Exception) -> Response:
    """Starlette/FastAPI HTTPExceptions (404, 405 with Allow, 408, 413, ...)."""
    status = getattr(exc, "status_code", 500)
    headers = getattr(exc, "headers", None)
    return error_response(
        status, _text(getattr(exc, "detail", exc)), _CODES.get(status, "error"), headers=headers
    )


def _field(err: dict[str, Any]) -> str:
    """The field an error is about; for the whole of the query string, ``query`` (not
    ``body``: a GET has none)."""
    loc = [str(p) for p in err.get("loc", ())]
    where = "body"
    if loc and loc[0] in ("body", "query", "path", "header"):
        where, loc = loc[0], loc[1:]
    return ".".join(loc) or where


def _describe(err: dict[str, Any]) -> str:
    if err.get("type") == "json_invalid":
        ctx = err.get("ctx") or {}
        where = err.get("loc", ("body", 0))[-1]
        return f"body: invalid JSON: {_text(ctx.get('error', 'cannot be parsed'))} (at {where})"
    return f"{_field(err)}: {_text(err.get('msg', 'invalid'))}"


def _detail(err: dict[str, Any]) -> dict[str, Any]:
    """A field error without the rejected input (it may hold a secret or a lot of text)."""
    out = {k: err[k] for k in ("type", "loc", "msg") if k in err}
    if "msg" in out:
        out["msg"] = without_secrets(_text(out["msg"]))
    if err.get("ctx"):
        out["ctx"] = {k: without_secrets(_text(v)) for k, v in err["ctx"].items()}
    return out


async def validation_error(request: Request, exc: Exception) -> Response:
    try:
        errors = list(exc.errors()) if isinstance(exc, RequestValidationError) else []
        message = without_secrets("; ".join(_describe(e) for e in errors[:20])) or "invalid request"
        detail = [_detail(e) for e in errors[:20]]
    except Exception:
        log.exception("could not describe a validation error")
        message, detail = "invalid request", []
    return error_response(422, message, "invalid_input", detail=detail)


async def unicode_error(request: Request, exc: Exception) -> Response:
    return error_response(422, "text must be valid Unicode (no lone surrogates)", "invalid_input")


async def unexpected_error(request: Request, exc: Exception) -> Response:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return error_response(500, "internal error", "internal")


def _text(value: Any) -> str:
    safe = json_safe(value)
    return safe if isinstance(safe, str) else json.dumps(safe)
