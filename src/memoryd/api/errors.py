"""Errors as HTTP responses: one body shape for every route.

``{"success": false, "data": null, "error": "<message>", "code": "<kind>"}`` (plus
``detail``, the field errors, on 422). Status codes: 401 no or bad key, 403 the key may
not do this, 404 unknown memory, key or domain, 413 body too large, 422 invalid input (the
message names the field), 503 store or embedding model unusable, 500 a bug.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from memoryd.errors import (
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

log = logging.getLogger("memoryd.api")

_STATUS: list[tuple[type[Exception], int, str]] = [
    (InvalidKey, 401, "unauthorized"),
    (Forbidden, 403, "forbidden"),
    (MemoryNotFound, 404, "not_found"),
    (KeyNotFound, 404, "not_found"),
    (DomainNotFound, 404, "not_found"),
    (InvalidInput, 422, "invalid_input"),
    (MaintenanceBusy, 409, "busy"),
    (StoreError, 503, "store_unavailable"),
    (EmbeddingError, 503, "embedding_unavailable"),
]


def error_body(message: str, code: str, **extra: Any) -> dict[str, Any]:
    """The error envelope."""
    return {"success": False, "data": None, "error": message, "code": code, **extra}


def error_response(status: int, message: str, code: str, **extra: Any) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse(error_body(message, code, **extra), status_code=status, headers=headers)


def status_of(exc: MemorydError) -> tuple[int, str]:
    for kind, status, code in _STATUS:
        if isinstance(exc, kind):
            return status, code
    return 400, "error"


async def memoryd_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, MemorydError)
    status, code = status_of(exc)
    return error_response(status, str(exc), code)


def _field(err: dict[str, Any]) -> str:
    loc = [str(p) for p in err.get("loc", ())]
    if loc and loc[0] in ("body", "query", "path", "header"):
        loc = loc[1:]
    return ".".join(loc) or "body"


async def validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = exc.errors()
    message = "; ".join(f"{_field(e)}: {e.get('msg', 'invalid')}" for e in errors)
    detail = jsonable_encoder(errors, custom_encoder={BaseException: str, bytes: repr})
    return error_response(422, message or "invalid request", "invalid_input", detail=detail)


async def unicode_error(request: Request, exc: Exception) -> JSONResponse:
    return error_response(422, "text must be valid Unicode (no lone surrogates)", "invalid_input")


async def unexpected_error(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return error_response(500, "internal error", "internal")
