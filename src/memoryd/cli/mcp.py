"""``memoryd mcp``: the MCP server on stdio (for `claude mcp add memoryd -- memoryd mcp`)."""

from __future__ import annotations

from typing import Optional

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

    prefer_single_thread_inference()
    from memoryd.serving.stdio import serve_mcp_stdio

    serve_mcp_stdio((ctx.obj or {}).get("store"), agent_id=agent_id, tools=tools)


def register(app: typer.Typer) -> None:
    """Attach this command to the app."""
    app.command()(mcp)
