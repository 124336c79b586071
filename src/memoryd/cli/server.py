"""The ``serve`` command: the HTTP server on the embedded default store."""

from __future__ import annotations

from typing import Optional

import typer

from memoryd.cli.common import console
from memoryd.config import Settings


def serve(
    ctx: typer.Context,
    host: Optional[str] = typer.Option(None, help="Address to bind (default 127.0.0.1)."),
    port: Optional[int] = typer.Option(None, help="Port (default 8765)."),
) -> None:
    """Run the HTTP server (health, REST and MCP over Streamable HTTP)."""
    import uvicorn

    from memoryd.api.app import create_app
    from memoryd.opening import open as open_memory

    settings = Settings()
    store = (ctx.obj or {}).get("store")
    app = create_app(lambda: open_memory(store, settings=settings))
    bind_host = host or settings.host
    bind_port = port or settings.port
    console.print(f"memoryd serving on http://{bind_host}:{bind_port}")
    uvicorn.run(app, host=bind_host, port=bind_port, log_level="info")


def register(app: typer.Typer) -> None:
    """Attach this command to the app."""
    app.command()(serve)
