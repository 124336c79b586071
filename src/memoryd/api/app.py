"""The FastAPI application: REST routes, gateway routes and MCP over Streamable HTTP at /mcp.

One process, one engine: the REST routes and the MCP tools both call the operation
registry on ``app.state.engine``. The lifespan opens the engine, refuses to start when
no API key exists and anonymous access was not allowed explicitly, starts the smart waits
of this host, and runs the MCP session manager (a mounted app's own lifespan would never
run).
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from mcp.server.transport_security import TransportSecuritySettings
from starlette.exceptions import HTTPException as StarletteHTTPException

from memoryd import __version__
from memoryd.api import errors
from memoryd.api.auth import AuthMiddleware, BodyLimitMiddleware
from memoryd.api.routes import add_routes
from memoryd.config import Settings
from memoryd.errors import MemorydError, NoKeysConfigured
from memoryd.mcp.server import build_server, http_caller
from memoryd.operations import health_report

if TYPE_CHECKING:
    from memoryd.engine import Engine

LOOPBACK_HOSTS = ["127.0.0.1", "127.0.0.1:*", "localhost", "localhost:*", "[::1]", "[::1]:*"]
LOOPBACK_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]


def transport_security(settings: Settings) -> TransportSecuritySettings:
    """DNS-rebinding protection for /mcp: loopback names plus MEMORYD_ALLOWED_HOSTS."""
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=LOOPBACK_HOSTS + list(settings.allowed_hosts),
        allowed_origins=LOOPBACK_ORIGINS + list(settings.allowed_origins),
    )


def create_app(open_engine: Callable[[], Engine], settings: Settings | None = None) -> FastAPI:
    """The HTTP app. ``open_engine`` runs once, in the lifespan; the engine is closed on exit."""
    settings = settings or Settings()
    holder: dict[str, Engine] = {}
    mcp = build_server(lambda: holder["engine"], http_caller)
    mcp_app = mcp.streamable_http_app(
        streamable_http_path="/mcp",
        stateless_http=True,
        json_response=True,
        transport_security=transport_security(settings),
        max_request_body_size=settings.max_body_bytes,
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        engine = open_engine()
        try:
            if not settings.allow_anonymous and not engine.has_active_key():
                raise NoKeysConfigured()
            holder["engine"] = app.state.engine = engine
            engine.start_waits()  # this host's smart waits; stopped by engine.close()
            async with mcp.session_manager.run():
                yield
        finally:
            engine.close()

    app = FastAPI(
        title="memoryd",
        version=__version__,
        description="Long-term memory for AI agents: REST, gateway recall/capture, MCP at /mcp.",
        lifespan=lifespan,
    )
    app.add_exception_handler(MemorydError, errors.memoryd_error)
    app.add_exception_handler(RequestValidationError, errors.validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(UnicodeError, errors.unicode_error)
    app.add_exception_handler(Exception, errors.unexpected_error)

    @app.get("/health", tags=["health"], response_model=None)
    def health() -> JSONResponse:
        """Deep health: the store answers a query; the embedder's state is reported. 503 if not."""
        engine: Engine | None = getattr(app.state, "engine", None)
        if engine is None:
            return JSONResponse({"status": "starting"}, status_code=503)
        report = health_report(engine)
        return JSONResponse(
            report.model_dump(mode="json"), status_code=200 if report.status == "ok" else 503
        )

    @app.get("/readyz", tags=["health"], response_model=None)
    def readyz() -> JSONResponse:
        """``{"ready": true}`` once the engine is open and its store answers; 503 otherwise."""
        engine: Engine | None = getattr(app.state, "engine", None)
        if engine is None or health_report(engine).status != "ok":
            return JSONResponse({"ready": False}, status_code=503)
        return JSONResponse({"ready": True})

    add_routes(app)
    for route in mcp_app.routes:  # /mcp itself (a Mount would redirect /mcp to /mcp/)
        app.router.routes.append(route)
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]

    # Outermost last: body limit, then (optional) CORS, then auth.
    app.add_middleware(AuthMiddleware, allow_anonymous=settings.allow_anonymous)
    if settings.cors_origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_origins),
            allow_methods=["GET", "POST", "PATCH", "DELETE"],
            allow_headers=[
                "Authorization",
                "X-API-Key",
                "X-Agent-Id",
                "Content-Type",
                "Mcp-Session-Id",
                "Mcp-Protocol-Version",
            ],
        )
    app.add_middleware(BodyLimitMiddleware, limit=settings.max_body_bytes)
    return app


async def _http_error(request: Any, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    code = {400: "bad_request", 404: "not_found", 405: "method_not_allowed", 413: "too_large"}.get(
        exc.status_code, "error"
    )
    return errors.error_response(exc.status_code, str(exc.detail), code)


def _openapi(app: FastAPI) -> dict[str, Any]:
    """The generated schema plus the two ways to present a key."""
    if app.openapi_schema:
        return app.openapi_schema
    from fastapi.openapi.utils import get_openapi

    schema = get_openapi(
        title=app.title, version=app.version, description=app.description, routes=app.routes
    )
    schema.setdefault("components", {})["securitySchemes"] = {
        "bearer": {"type": "http", "scheme": "bearer"},
        "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
    }
    for path, item in schema.get("paths", {}).items():
        if path in ("/health", "/readyz"):
            continue
        for operation in item.values():
            operation["security"] = [{"bearer": []}, {"apiKey": []}]
    app.openapi_schema = schema
    return schema
