"""Request limits, as ASGI middleware (they also guard /mcp): body size, body read time,
and how many ``GET /mcp`` event streams may be open at once.

* :class:`BodyLimitMiddleware`: bodies over ``limit`` bytes get 413, declared or streamed.
* :class:`BodyTimeoutMiddleware`: a body must arrive within ``timeout`` seconds of the
  request; a client that declares a body and trickles it (or stops) gets 408 and the
  connection is closed, instead of holding a worker and a connection forever. uvicorn has
  no such timeout of its own (only an idle keep-alive one). Waiting for a disconnect after
  the body (event streams do) is not limited.
* :class:`StreamCapMiddleware`: at most ``limit`` ``GET /mcp`` streams (server-sent events,
  open until the client leaves) at once; the next gets 503 with ``Retry-After``.

The limits raise :class:`~starlette.exceptions.HTTPException` subclasses from ``receive``
because FastAPI re-raises those from its body reader (any other exception becomes a 400).
"""

from __future__ import annotations

import math

import anyio
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memoryd.api.errors import StartTracker, send_error

MCP_PATH = "/mcp"


class BodyTooLarge(HTTPException):
    """Raised while reading a streamed body past the limit."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, _too_large(limit))


class BodyTooSlow(HTTPException):
    """Raised when the body has not arrived within the read timeout."""

    def __init__(self, timeout: float) -> None:
        super().__init__(
            408,
            f"the request body did not arrive within {timeout:g} s",
            headers={"Connection": "close"},
        )


def _too_large(limit: int) -> str:
    return f"request body over {limit} bytes (MEMORYD_MAX_BODY_BYTES)"


class BodyLimitMiddleware:
    """Refuse request bodies over ``limit`` bytes with 413 (declared or streamed)."""

    def __init__(self, app: ASGIApp, *, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None:
            try:
                too_big = int(declared) > self.limit
            except ValueError:
                await send_error(send, 400, "invalid Content-Length", "bad_request")
                return
            if too_big:
                await send_error(send, 413, _too_large(self.limit), "too_large")
                return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise BodyTooLarge(self.limit)
            return message

        tracked = StartTracker(send)
        try:
            await self.app(scope, counted, tracked)
        except BodyTooLarge:
            if not tracked.started:
                await send_error(send, 413, _too_large(self.limit), "too_large")


class BodyTimeoutMiddleware:
    """Answer 408 (and close) when a request body takes longer than ``timeout`` seconds."""

    def __init__(self, app: ASGIApp, *, timeout: float) -> None:
        self.app = app
        self.timeout = timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not math.isfinite(self.timeout):
            await self.app(scope, receive, send)
            return
        deadline = anyio.current_time() + self.timeout
        body_done = False

        async def timed() -> Message:
            nonlocal body_done
            if body_done:  # waiting for a disconnect (event streams): not limited
                return await receive()
            remaining = deadline - anyio.current_time()
            if remaining <= 0:
                raise BodyTooSlow(self.timeout)
            with anyio.move_on_after(remaining):
                message = await receive()
                if message["type"] != "http.request" or not message.get("more_body", False):
                    body_done = True
                return message
            raise BodyTooSlow(self.timeout)

        await self.app(scope, timed, send)


class StreamCapMiddleware:
    """At most ``limit`` concurrent ``GET /mcp`` requests (each may hold an event stream)."""

    def __init__(self, app: ASGIApp, *, limit: int) -> None:
        self.app = app
        self.limit = limit
        self.open = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not (scope["type"] == "http" and scope["method"] == "GET" and scope["path"] == MCP_PATH):
            await self.app(scope, receive, send)
            return
        if self.open >= self.limit:
            await send_error(
                send,
                503,
                f"too many open event streams (limit {self.limit}); try again later",
                "busy",
                headers=[("Retry-After", "5")],
            )
            return
        self.open += 1  # one event loop: no lock needed
        try:
            await self.app(scope, receive, send)
        finally:
            self.open -= 1
