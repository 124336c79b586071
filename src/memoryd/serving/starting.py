"""Listening before the HTTP app is built: an ASGI app that answers while the real one starts.

Importing FastAPI and the MCP SDK and building the app (its REST routes, the MCP server, the
dashboard) takes a second or more; the vector index and the embedding model load meanwhile
on threads of their own. ``memoryd serve`` therefore listens at once with a
:class:`StartingApp`, which builds the real app on a worker thread and then runs its
lifespan. Until that is done:

* ``GET /health`` answers 503 ``{"status": "starting"}`` and ``GET /readyz`` 503
  ``{"ready": false}``, at once (what the real app answers while its engine is not open);
* every other request waits for the real app, at most ``wait_seconds``, and then gets 503
  with ``Retry-After`` (a WebSocket is closed with 1013, "try again later"); never a 500.

When the real app has started, ``on_started`` is told (``memoryd serve`` then turns the
garbage collector back on). When building or starting the real app fails, every request gets
that 503 and ``on_failure`` is told (``memoryd serve`` then stops and exits 1 with the
error). This module imports nothing but the standard library, so it costs nothing before the
port listens.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Awaitable, Callable

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

_STARTING = {"/health": {"status": "starting"}, "/readyz": {"ready": False}}


class StartingApp:
    """An ASGI app that builds ``build()`` (on a worker thread) once the server runs, then
    hands every request to it."""

    def __init__(self, build: Callable[[], App], *, wait_seconds: float = 30.0,
                 on_failure: Callable[[BaseException], None] | None = None,
                 on_started: Callable[[], None] | None = None) -> None:
        self._build = build
        self._wait_seconds = wait_seconds
        self._on_failure = on_failure
        self._on_started = on_started
        self._app: App | None = None
        self._failure: BaseException | None = None
        self._settled: asyncio.Event | None = None
        self._starting: asyncio.Task[None] | None = None
        self._lifespan_inbox: asyncio.Queue[dict[str, Any]] | None = None
        self._lifespan_task: asyncio.Task[None] | None = None

    @property
    def started(self) -> bool:
        """Whether the real app is built and its lifespan has started."""
        return self._app is not None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if self._app is None:
            if scope["type"] == "http" and scope.get("path") in _STARTING:
                await _json(send, 503, _STARTING[scope["path"]])
                return
            if not await self._wait():
                await _unavailable(scope, send, self._failure)
                return
        assert self._app is not None
        await self._app(scope, receive, send)

    async def _wait(self) -> bool:
        settled = self._settled
        if settled is None:  # no lifespan ran (a server with lifespan="off")
            return False
        try:
            await asyncio.wait_for(settled.wait(), self._wait_seconds)
        except asyncio.TimeoutError:
            return False
        return self._app is not None

    # --- the server's lifespan, and the real app's inside it -----------------
    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self._settled = asyncio.Event()
                self._starting = asyncio.create_task(self._start())
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self._stop()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _start(self) -> None:
        assert self._settled is not None
        try:
            app = await asyncio.to_thread(self._build)
            await self._start_lifespan(app)
            self._app = app
            if self._on_started is not None:
                self._on_started()
        except BaseException as exc:  # noqa: BLE001 - reported, then the server stops
            self._failure = exc
            if self._on_failure is not None:
                self._on_failure(exc)
        finally:
            self._settled.set()

    async def _start_lifespan(self, app: App) -> None:
        """Run ``app``'s lifespan (ASGI lifespan protocol) until its startup completes."""
        inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        started: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "lifespan.startup.complete" and not started.done():
                started.set_result(None)
            elif message["type"] == "lifespan.startup.failed" and not started.done():
                started.set_exception(RuntimeError(message.get("message") or "startup failed"))

        scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"},
                 "state": {}}
        task = asyncio.create_task(app(scope, inbox.get, send))
        await inbox.put({"type": "lifespan.startup"})
        await asyncio.wait({task, started}, return_when=asyncio.FIRST_COMPLETED)
        if not started.done():  # the lifespan ended without starting: its error, if any
            task.result()
            raise RuntimeError("the app's lifespan ended before it started")
        try:
            started.result()
        except RuntimeError:
            if task.done() and task.exception() is not None:
                raise task.exception() from None  # type: ignore[misc]
            raise
        self._lifespan_inbox, self._lifespan_task = inbox, task

    async def _stop(self) -> None:
        if self._starting is not None:
            await asyncio.shield(self._starting)  # a build under way finishes first
        if self._lifespan_inbox is not None and self._lifespan_task is not None:
            await self._lifespan_inbox.put({"type": "lifespan.shutdown"})
            await self._lifespan_task


async def _json(send: Send, status: int, body: dict[str, Any],
                headers: list[tuple[bytes, bytes]] = ()) -> None:  # type: ignore[assignment]
    payload = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(payload)).encode()), *headers]})
    await send({"type": "http.response.body", "body": payload})


async def _unavailable(scope: Scope, send: Send, failure: BaseException | None) -> None:
    """503 with Retry-After (or a WebSocket closed with 1013): the app is not started."""
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1013})
        return
    message = ("the server failed to start" if failure is not None
               else "the server is starting; retry shortly")
    await _json(send, 503, {"success": False, "data": None, "error": message,
                            "code": "starting"}, [(b"retry-after", b"2")])
