"""The HTTP app: REST and gateway routes, MCP over Streamable HTTP at /mcp, the dashboard.

One process, one engine: the REST routes (:mod:`memoryd.api.app`), the MCP tools
(:mod:`memoryd.mcp.server`) and the dashboard's live feed (:mod:`memoryd.dashboard`) all
call the operation registry on ``app.state.engine``, which the REST app's lifespan opens;
that lifespan also runs the MCP session manager. The middleware of the REST app (Host and
Origin guard, limits, authentication) covers every route, ``/mcp`` and ``/dashboard``
included.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from fastapi import FastAPI

from memoryd.api.app import HttpLimits, create_rest_app
from memoryd.config import Settings
from memoryd.dashboard import mount as mount_dashboard
from memoryd.mcp.server import build_server, http_caller, http_routes

if TYPE_CHECKING:
    from memoryd.engine import Engine

__all__ = ["DESCRIPTION", "HttpLimits", "create_app"]

DESCRIPTION = "Long-term memory for AI agents: REST, gateway recall/capture, MCP at /mcp."


def create_app(
    open_engine: Callable[[], Engine],
    settings: Settings | None = None,
    limits: HttpLimits | None = None,
) -> FastAPI:
    """The HTTP app. ``open_engine`` runs once, in the lifespan; the engine is closed on exit."""
    settings = settings or Settings()
    # The tools reach the engine the lifespan opened; they are called only once it serves.
    mcp = build_server(lambda: app.state.engine, http_caller, tools=settings.mcp_tools)
    app = create_rest_app(open_engine, settings, limits, description=DESCRIPTION,
                          running=[lambda: mcp.session_manager.run()])
    mount_dashboard(app, allow_anonymous=settings.allow_anonymous)  # /dashboard, live feed
    app.router.routes.extend(http_routes(mcp, max_body_bytes=settings.max_body_bytes))
    return app
