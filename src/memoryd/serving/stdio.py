"""MCP over stdio (``memoryd mcp``): the store opened on first use, this host's smart waits
run by the process, searches answered by keyword while the model loads (unless the
settings say otherwise)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memoryd.config import Settings
from memoryd.mcp.stdio import serve_stdio

if TYPE_CHECKING:
    from memoryd.engine import Engine


def serve_mcp_stdio(store: str | None, *, agent_id: str | None = None,
                    tools: str | None = None) -> None:
    """Serve the tools of ``tools`` (default: the settings') over stdin/stdout until the
    client disconnects; ``store`` as ``memoryd --store`` takes it."""
    from memoryd.opening import open as open_memory

    settings = Settings()
    if "keyword_while_model_loads" not in settings.model_fields_set:
        settings = settings.model_copy(update={"keyword_while_model_loads": True})

    def open_with_waits() -> Engine:
        engine = open_memory(store, settings=settings)
        engine.waits.start()  # run this host's waits unless a server already does
        return engine

    serve_stdio(open_with_waits, agent_id=agent_id, warm=settings.mcp_warm,
                tools=tools or settings.mcp_tools)
