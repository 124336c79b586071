"""The outermost ASGI middleware: the Host/Origin check and the error barrier.

* :class:`HostGuard` applies :class:`~memoryd.api.hosts.HostPolicy` to every HTTP and
  WebSocket request, public paths and anonymous mode included: 400 for a malformed Host,
  421 for a Host this server does not answer to, 403 for a foreign Origin.
* :class:`ErrorBarrier` turns any exception that escapes the app into a clean 500 (the
  error envelope, logged with its traceback). Starlette's own last-resort handler re-raises
  after answering, and uvicorn then closes the connection, so the client's next request on
  that keep-alive connection was reset; here the exception stops, and the connection stays
  usable. If the response had already started, nothing can repair it: uvicorn closes it.
"""

from __future__ import annotations

import logging

from starlette.types import ASGIApp, Receive, Scope, Send

from memoryd.api.errors import StartTracker, send_error
from memoryd.api.hosts import HostPolicy, HostRejected

log = logging.getLogger("memoryd.api")
_REFUSALS = {
    "malformed": (400, "bad_request"),
    "host": (421, "bad_host"),
    "origin": (403, "forbidden"),
}


class HostGuard:
    """Refuse requests whose Host or Origin the policy does not allow."""

    def __init__(self, app: ASGIApp, *, policy: HostPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        hosts = [v for k, v in scope["headers"] if k == b"host"]
        origins = [v for k, v in scope["headers"] if k == b"origin"]
        try:
            if len(hosts) > 1 or len(origins) > 1:
                raise HostRejected("repeated Host or Origin header", reason="malformed")
            self.policy.check_host(hosts[0].decode("latin-1") if hosts else None)
            self.policy.check_origin(origins[0].decode("latin-1") if origins else None)
        except HostRejected as exc:
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            status, code = _REFUSALS[exc.reason]
            await send_error(send, status, str(exc), code, headers=[("Connection", "close")])
            return
        await self.app(scope, receive, send)


class ErrorBarrier:
    """Answer 500 for an exception that escaped the app, without re-raising it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        tracked = StartTracker(send)
        try:
            await self.app(scope, receive, tracked)
        except Exception:
            log.exception("unhandled error on %s %s", scope.get("method"), scope.get("path"))
            if not tracked.started:
                await send_error(send, 500, "internal error", "internal")
