"""Live changes over a WebSocket: ``/api/v1/changes/live``.

One :class:`ChangeWatch` per server process watches the store's change sequence number
(``engine.views.last_change()``, one cheap query every ``interval`` seconds, and only while
someone listens). The sequence lives in the store, so changes made by any process sharing it
(another ``memoryd serve``, the CLI, an MCP server; SQLite or PostgreSQL) are seen. When it
moves, each connection asks the ``changes`` operation, with its own key, for what it may
see after its cursor, and sends that: the key's scopes and bindings apply as on every route.

Protocol (JSON text frames). A browser cannot set headers on a WebSocket, so the client's
first frame carries the key: ``{"key": "mk_...", "since": 123}`` (``since`` optional:
default the newest change). The server answers ``{"type": "hello", "head": N, "caller":
...}``, then ``{"type": "changes", ...}`` frames (a ``ChangeFeed``) as changes happen.
A bad key closes the connection with code 4401, a key that may not read with 4403, a
revoked key later with 4401; a store that does not answer with 1011 (the page retries). When the server shuts down, uvicorn closes every connection
(1012): the page reconnects, sending the last ``next`` it saw, and misses nothing.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anyio.to_thread
from fastapi import FastAPI, WebSocket, WebSocketDisconnect

from memoryd.errors import ApiKeyError, Forbidden, InvalidKey, MemorydError
from memoryd.operations import Caller, invoke

PATH = "/api/v1/changes/live"
AUTH_TIMEOUT = 10.0
MAX_CONNECTIONS = 64
PAGE = 200


class ChangeWatch:
    """Wakes every waiting connection when the store's change sequence number moves."""

    def __init__(self, app: FastAPI, interval: float = 0.5) -> None:
        self.app = app
        self.interval = interval
        self.head = -1
        self.listeners = 0
        self._moved = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None

    async def read_head(self) -> int:
        """The store's newest change sequence number (off the event loop)."""
        return await anyio.to_thread.run_sync(self.app.state.engine.views.last_change)

    async def wait_beyond(self, seq: int) -> int:
        """Wait until the store has a change after ``seq``; return the new head."""
        self.listeners += 1
        try:
            if self._task is None or self._task.done():
                self._task = asyncio.get_running_loop().create_task(self._watch())
            async with self._moved:
                await self._moved.wait_for(lambda: self.head > seq)
                return self.head
        finally:
            self.listeners -= 1

    async def _watch(self) -> None:
        while self.listeners > 0:
            try:
                head = await self.read_head()
            except MemorydError:  # the store does not answer now: try again later
                head = self.head
            if head != self.head:
                async with self._moved:
                    self.head = head
                    self._moved.notify_all()
            await asyncio.sleep(self.interval)


async def _caller(websocket: WebSocket, first: dict[str, Any]) -> Caller:
    """The caller the first frame's key stands for (the same rules as the HTTP routes)."""
    engine = websocket.app.state.engine
    secret = _secret(first)
    if secret is None:
        if websocket.app.state.dashboard_anonymous:
            return Caller.anonymous()
        raise InvalidKey("missing API key: send {\"key\": \"<key>\"} first")
    verified = await anyio.to_thread.run_sync(engine.admin.verify_key, secret)
    return Caller.from_key(verified)


def _secret(first: dict[str, Any]) -> str | None:
    key = first.get("key")
    return key.strip() if isinstance(key, str) and key.strip() else None


async def _refused(websocket: WebSocket, exc: MemorydError) -> None:
    """Close with 4401 (key refused) or 4403 (not allowed): the page logs out; any other
    error (the store does not answer) closes with 1011, and the page reconnects."""
    code = 4403 if isinstance(exc, Forbidden) else 4401 if isinstance(exc, ApiKeyError) else 1011
    await websocket.send_text(json.dumps({"type": "error", "message": str(exc)}))
    await websocket.close(code=code, reason=type(exc).__name__)


async def live(websocket: WebSocket) -> None:
    """Send the caller's changes as they happen (see the module docstring)."""
    state = websocket.app.state
    if state.dashboard_connections >= MAX_CONNECTIONS:
        await websocket.close(code=1013, reason="too many live connections")
        return
    state.dashboard_connections += 1
    try:
        await websocket.accept()
        await _serve(websocket)
    except WebSocketDisconnect:
        pass
    finally:
        state.dashboard_connections -= 1


async def _serve(websocket: WebSocket) -> None:
    try:
        first = json.loads(await asyncio.wait_for(websocket.receive_text(), AUTH_TIMEOUT))
        if not isinstance(first, dict):
            raise ValueError("not an object")
    except (asyncio.TimeoutError, ValueError):
        await websocket.close(code=4400, reason="send {\"key\": ...} first")
        return
    try:
        caller = await _caller(websocket, first)
        cursor = await _hello(websocket, caller, first.get("since"))
    except MemorydError as exc:
        await _refused(websocket, exc)
        return
    listening = asyncio.ensure_future(_until_closed(websocket))
    try:
        await _stream(websocket, caller, cursor, first, listening)
    finally:
        listening.cancel()


async def _hello(websocket: WebSocket, caller: Caller, since: Any) -> int:
    watch: ChangeWatch = websocket.app.state.change_watch
    head = await watch.read_head()
    who = await anyio.to_thread.run_sync(invoke, websocket.app.state.engine, "whoami", {},
                                         caller)
    await websocket.send_text(json.dumps({"type": "hello", "head": head,
                                          "caller": who.model_dump(mode="json")}))
    if isinstance(since, int) and not isinstance(since, bool) and 0 <= since <= head:
        return since
    return head


async def _until_closed(websocket: WebSocket) -> None:
    """Read (and ignore) frames until the client goes away."""
    while True:
        message = await websocket.receive()
        if message["type"] == "websocket.disconnect":
            return


async def _stream(websocket: WebSocket, caller: Caller, cursor: int, first: dict[str, Any],
                  listening: asyncio.Future[None]) -> None:
    watch: ChangeWatch = websocket.app.state.change_watch
    engine = websocket.app.state.engine
    while True:
        waiting = asyncio.ensure_future(watch.wait_beyond(cursor))
        done, _ = await asyncio.wait({waiting, listening}, return_when=asyncio.FIRST_COMPLETED)
        if listening in done:
            waiting.cancel()
            return
        try:
            await _recheck(websocket, _secret(first))
            while True:
                feed = await anyio.to_thread.run_sync(
                    invoke, engine, "changes", {"since": cursor, "limit": PAGE}, caller)
                cursor = feed.next
                if feed.changes or not feed.more:
                    await websocket.send_text(feed.model_dump_json())
                if not feed.more:
                    break
        except MemorydError as exc:
            await _refused(websocket, exc)
            return


async def _recheck(websocket: WebSocket, secret: str | None) -> None:
    """A key revoked while its connection is open stops receiving (InvalidKey)."""
    if secret is not None:
        await anyio.to_thread.run_sync(websocket.app.state.engine.admin.verify_key, secret)


def add_live(app: FastAPI, *, allow_anonymous: bool = False) -> None:
    """Attach the WebSocket route and the process's change watch."""
    app.state.change_watch = ChangeWatch(app)
    app.state.dashboard_connections = 0
    app.state.dashboard_anonymous = allow_anonymous
    app.add_api_websocket_route(PATH, live)
