"""``memoryd mcp``: the MCP server over stdio, for Claude Code, Claude Desktop and friends.

Start-up is kept fast because clients start MCP servers per session and wait for them:
nothing heavy happens before ``initialize`` and ``tools/list`` are answered. The store is
opened on first use, and once the client has listed the tools a background thread opens
it and loads the embedding model, so the first real call rarely waits.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable

from memoryd.operations import Caller

if TYPE_CHECKING:
    from memoryd.engine import Engine


class LazyEngine:
    """Open the engine on first use (thread-safe); ``warm()`` does it in the background.

    The warm-up thread is waited for on :meth:`close` (and is not a daemon, so the
    interpreter waits for it too): a thread still inside the model runtime's native code when
    Python finalizes is stopped by force, which ONNX Runtime answers with "terminate called
    without an active exception" (SIGABRT). Loading takes a bounded time; once closing has
    begun, a warm-up that has not reached the model yet skips it.
    """

    def __init__(self, open_engine: Callable[[], Engine]) -> None:
        self._open = open_engine
        self._engine: Engine | None = None
        self._lock = threading.Lock()
        self._warmer: threading.Thread | None = None
        self._closing = threading.Event()

    def __call__(self) -> Engine:
        if self._engine is None:
            with self._lock:
                if self._engine is None:
                    self._engine = self._open()
        return self._engine

    def warm(self) -> None:
        """Open the store and load the embedding model on a background thread (once)."""
        if self._warmer is not None or self._closing.is_set():
            return
        self._warmer = threading.Thread(target=self._warm, name="memoryd-warm")
        self._warmer.start()

    def _warm(self) -> None:
        try:
            engine = self()
            if not self._closing.is_set():
                engine.embedder.load()
        except Exception:  # noqa: BLE001 - a failed warm-up resurfaces on first real use
            pass

    def close(self) -> None:
        """Wait for a running warm-up, then close the engine (if it was opened)."""
        self._closing.set()
        if self._warmer is not None:
            self._warmer.join()
        with self._lock:
            if self._engine is not None:
                self._engine.close()
                self._engine = None


def serve_stdio(
    open_engine: Callable[[], Engine], *, agent_id: str | None = None, warm: bool = True,
    tools: str | None = None,
) -> None:
    """Serve the registry's tools over stdin/stdout until the client disconnects."""
    from memoryd.mcp.server import build_server

    engine = LazyEngine(open_engine)
    caller = Caller.local("mcp-stdio", agent_id=agent_id)

    async def warm_after_listing(ctx: Any, call_next: Any) -> Any:
        result = await call_next(ctx)
        if warm and ctx.method == "tools/list":
            engine.warm()
        return result

    server = build_server(engine, lambda ctx: caller, tools=tools, middleware=[warm_after_listing])
    try:
        server.run("stdio")
    finally:
        engine.close()
