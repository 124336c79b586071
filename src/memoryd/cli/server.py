"""The ``serve`` command: REST, gateway routes and MCP (Streamable HTTP at /mcp) in one process."""

from __future__ import annotations

import os
from typing import Optional

import typer

from memoryd.cli.common import console
from memoryd.config import Settings

_LOOPBACK = {"127.0.0.1", "localhost", "::1"}
_ANY_ADDRESS = {"0.0.0.0", "::", ""}


def prefer_single_thread_inference() -> None:
    """One torch thread per inference unless OMP_NUM_THREADS says otherwise.

    A server embeds one short query per request. With two threads on a busy small machine
    each forward pass waits for its second thread at every layer: bench/results/throughput.md
    measured a search from one client at p50 531 ms with two threads and 31 ms with one (the
    throughput under 20 clients is about the same either way). Must run before torch loads.
    """
    os.environ.setdefault("OMP_NUM_THREADS", "1")


def with_bound_host(settings: Settings, bind_host: str) -> Settings:
    """Settings that also accept the address the server was bound to as a Host.

    Binding to one address is an explicit choice of the name clients use; a wildcard
    address (0.0.0.0, ::) names no host, so nothing is added for it.
    """
    if bind_host in _ANY_ADDRESS or bind_host in _LOOPBACK:
        return settings
    entry = f"[{bind_host}]" if ":" in bind_host and not bind_host.startswith("[") else bind_host
    return settings.model_copy(update={"allowed_hosts": [*settings.allowed_hosts, entry]})


def serve(
    ctx: typer.Context,
    host: Optional[str] = typer.Option(None, help="Address to bind (default 127.0.0.1)."),
    port: Optional[int] = typer.Option(None, help="Port (default 8765)."),
    tools: Optional[str] = typer.Option(
        None, "--tools", help="MCP tool profiles and names at /mcp, comma-separated (default: "
        "memory; see `memoryd mcp --help`)."
    ),
) -> None:
    """Run the HTTP server: REST API, gateway recall/capture, and MCP at /mcp."""
    import threading

    prefer_single_thread_inference()
    import uvicorn

    from memoryd.api.app import create_app
    from memoryd.errors import NoKeysConfigured
    from memoryd.opening import open as open_memory

    settings = Settings(**({"mcp_tools": tools} if tools else {}))
    engine = open_memory((ctx.obj or {}).get("store"), settings=settings)
    if not settings.allow_anonymous and not engine.has_active_key():
        engine.close()
        raise NoKeysConfigured()
    bind_host = host or settings.host
    bind_port = port or settings.port
    if bind_host not in _LOOPBACK:
        console.print(
            f"[yellow]warning:[/] listening on {bind_host}, reachable from other "
            "machines; requests must name an allowed host: add the names clients use "
            "to MEMORYD_ALLOWED_HOSTS"
        )
        settings = with_bound_host(settings, bind_host)
    if settings.allow_anonymous:
        console.print(
            "[yellow]warning:[/] MEMORYD_ALLOW_ANONYMOUS=true: requests without a key "
            "may read and write memories"
        )
    # Load the embedding model in the background: the first search then need not wait ~6 s.
    threading.Thread(target=engine.warm, name="memoryd-warm", daemon=True).start()
    app = create_app(lambda: engine, settings)
    console.print(f"memoryd serving on http://{bind_host}:{bind_port} (MCP at /mcp)")
    uvicorn.run(app, host=bind_host, port=bind_port, log_level="info")


def register(app: typer.Typer) -> None:
    """Attach this command to the app."""
    app.command()(serve)
