"""Starting the HTTP app the way ``memoryd serve`` does: the host policy checked before
anything runs, then the port listened on at once while the app is built.

Importing FastAPI and the MCP SDK and building the app takes a second or more, so the socket
is served at once by a :class:`~memoryd.serving.starting.StartingApp` (which answers
``/health`` and ``/readyz`` with 503 meanwhile) and the app of :mod:`memoryd.serving.http`
is built on its worker thread. This module imports neither FastAPI nor a face's routes.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memoryd.api.hosts import host_policy
from memoryd.config import Settings
from memoryd.serving.starting import StartingApp

if TYPE_CHECKING:
    from memoryd.engine import Engine


def check_hosts(settings: Settings) -> None:
    """Refuse a bad ``MEMORYD_ALLOWED_HOSTS`` entry (InvalidInput) before anything runs:
    the app would refuse it when built."""
    host_policy(settings)


def run_listening_first(
    engine: Engine, settings: Settings, sock: socket.socket,
    on_started: Callable[[], None] | None = None,
) -> BaseException | None:
    """Serve on ``sock`` at once while the app is built on a worker thread, until the server
    stops; the error that kept the app from being built or started, if any. ``on_started``
    is called once the app has started. The engine is closed on the way out."""
    import uvicorn

    lifespan_ran: list[bool] = []
    failures: list[BaseException] = []

    def opened() -> Engine:
        lifespan_ran.append(True)  # from here on the app's lifespan closes the engine
        return engine

    def build() -> Any:
        from memoryd.serving.http import create_app

        return create_app(opened, settings)

    def failed(exc: BaseException) -> None:
        failures.append(exc)
        server.should_exit = True

    app = StartingApp(build, on_failure=failed, on_started=on_started)
    server = uvicorn.Server(uvicorn.Config(app, log_level="info"))
    try:  # uvicorn shuts down gracefully on SIGINT/SIGTERM, then re-raises the signal
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass  # Ctrl-C after a clean shutdown: exit 0, as `uvicorn.run` does
    finally:
        if not lifespan_ran:
            engine.close()
    return failures[0] if failures else None
