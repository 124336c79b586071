"""``memoryd mcp``: the MCP server on stdio (for `claude mcp add memoryd -- memoryd mcp`)."""

from __future__ import annotations

from typing import Any, Optional

import typer


def mcp(
    ctx: typer.Context,
    agent_id: Optional[str] = typer.Option(
        None, "--agent-id", envvar="MEMORYD_AGENT_ID", help="Recorded as the agent of every change."
    ),
    tools: Optional[str] = typer.Option(
        None, "--tools", help="Tool profiles and names, comma-separated: memory (default), kg, "
        "tasks, admin, openclaw, vestige, full (overrides MEMORYD_MCP_TOOLS)."
    ),
) -> None:
    """Serve MCP over stdio (stdout carries the protocol; logs go to stderr)."""
    from memoryd.cli.server import prefer_single_thread_inference
    from memoryd.config import Settings
    from memoryd.mcp.stdio import serve_stdio

    prefer_single_thread_inference()
    from memoryd.opening import open as open_memory

    settings = Settings()
    if "keyword_while_model_loads" not in settings.model_fields_set:
        settings = settings.model_copy(update={"keyword_while_model_loads": True})
    store = (ctx.obj or {}).get("store")

    def open_with_waits() -> Any:
        engine = open_memory(store, settings=settings)
        engine.waits.start()  # run this host's waits unless a server already does
        return engine

    serve_stdio(open_with_waits, agent_id=agent_id, warm=settings.mcp_warm,
                tools=tools or settings.mcp_tools)


def register(app: typer.Typer) -> None:
    """Attach this command to the app."""
    app.command()(mcp)
