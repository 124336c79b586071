"""Authentication and request limits, as ASGI middleware (they also guard the /mcp mount).

Every request except the public paths must carry ``Authorization: Bearer <key>`` or
``X-API-Key: <key>``. The verified caller (scopes, bound scope/agent, ``X-Agent-Id``) is
put in the request scope under ``memoryd.caller`` for the routes and MCP tools to read.
Without a key, requests are refused unless the server was started with
``MEMORYD_ALLOW_ANONYMOUS=true``. A key that is presented is always checked, even then.
"""

from __future__ import annotations

import json
import re

import anyio.to_thread
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memoryd.errors import Forbidden, InvalidInput, InvalidKey
from memoryd.keys import touch_due
from memoryd.operations import CALLER_SCOPE_KEY, Caller

PUBLIC_PATHS = frozenset(
    {"/health", "/readyz", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"}
)
_AGENT_ID = re.compile(r"^[\x21-\x7e][\x20-\x7e]{0,255}$")


async def _reject(send: Send, status: int, message: str, code: str) -> None:
    body = json.dumps({"success": False, "data": None, "error": message, "code": code}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _presented_key(headers: dict[bytes, bytes]) -> str | None:
    auth = headers.get(b"authorization", b"").decode("latin-1").strip()
    if auth:
        scheme, _, value = auth.partition(" ")
        return value.strip() if scheme.lower() == "bearer" else auth
    key = headers.get(b"x-api-key", b"").decode("latin-1").strip()
    return key or None


class AuthMiddleware:
    """Resolve the caller of every non-public HTTP request, or answer 401/403."""

    def __init__(self, app: ASGIApp, *, allow_anonymous: bool) -> None:
        self.app = app
        self.allow_anonymous = allow_anonymous

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in PUBLIC_PATHS:
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        agent = headers.get(b"x-agent-id", b"").decode("latin-1").strip() or None
        if agent is not None and not _AGENT_ID.match(agent):
            await _reject(
                send, 400, "X-Agent-Id must be 1-256 printable ASCII characters", "bad_agent_id"
            )
            return
        presented = _presented_key(headers)
        domain = headers.get(b"x-memoryd-domain", b"").decode("latin-1").strip() or None
        engine = scope["app"].state.engine
        try:
            if presented is not None:
                key = engine.verify_key(presented)
                caller = Caller.from_key(key, agent, domain)
                if touch_due(key):  # a write, at most once a minute: off the event loop
                    await anyio.to_thread.run_sync(engine.touch_key, key)
            elif self.allow_anonymous:
                caller = Caller.anonymous(agent, domain)
            else:
                await _reject(
                    send,
                    401,
                    "missing API key: send 'Authorization: Bearer <key>' or 'X-API-Key: <key>'",
                    "unauthorized",
                )
                return
            if caller.bound_agent is None and agent is not None:
                engine.labelled(agent)  # Forbidden: that agent has a key of its own
        except InvalidKey as exc:
            await _reject(send, 401, str(exc), "unauthorized")
            return
        except Forbidden as exc:
            await _reject(send, 403, str(exc), "forbidden")
            return
        except InvalidInput as exc:  # a malformed X-Memoryd-Domain
            await _reject(send, 400, str(exc), "bad_domain")
            return
        scope[CALLER_SCOPE_KEY] = caller
        await self.app(scope, receive, send)


class BodyTooLarge(HTTPException):
    """Raised while reading a streamed body past the limit (FastAPI re-raises HTTPException)."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body over {limit} bytes (MEMORYD_MAX_BODY_BYTES)")


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
                await _reject(send, 400, "invalid Content-Length", "bad_request")
                return
            if too_big:
                await _reject(
                    send,
                    413,
                    f"request body over {self.limit} bytes (MEMORYD_MAX_BODY_BYTES)",
                    "too_large",
                )
                return
        seen = 0
        started = False

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise BodyTooLarge(self.limit)
            return message

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counted, tracked)
        except BodyTooLarge:
            if not started:
                await _reject(
                    send,
                    413,
                    f"request body over {self.limit} bytes (MEMORYD_MAX_BODY_BYTES)",
                    "too_large",
                )
