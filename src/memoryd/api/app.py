"""The REST app: REST routes, gateway routes, health, and the HTTP middleware.

The REST routes call the operation registry on ``app.state.engine``. The lifespan opens the
engine, refuses to start when no API key exists and anonymous access was not allowed
explicitly, starts the smart waits of this host, runs the consolidation schedule
(``consolidate_every_minutes``) and whatever else must run while the app serves
(``running``: the MCP session manager, when :mod:`memoryd.serving.http` adds MCP to this
app; a mounted app's own lifespan would never run). The full HTTP server (this app, MCP at
``/mcp`` and the dashboard) is composed by :mod:`memoryd.serving.http`.

Middleware, outermost first: the error barrier (a clean 500 that keeps the connection),
the Host/Origin guard (DNS rebinding, every route), the body size limit, the body read
timeout, the cap on open ``GET /mcp`` streams, CORS (only when configured) and
authentication. See :mod:`memoryd.api.guards`, :mod:`memoryd.api.limits` and
:mod:`memoryd.api.auth`.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Sequence

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from memoryd import __version__
from memoryd.api import access_log, errors, openapi
from memoryd.api.auth import AuthMiddleware
from memoryd.api.guards import ErrorBarrier, HostGuard
from memoryd.api.hosts import HostPolicy, host_policy
from memoryd.api.limits import BodyLimitMiddleware, BodyTimeoutMiddleware, StreamCapMiddleware
from memoryd.api.routes import add_routes, response_links
from memoryd.config import Settings
from memoryd.errors import MemorydError, NoKeysConfigured
from memoryd.operations import CALLER_SCOPE_KEY, Caller, health_report, invoke, is_ready
from memoryd.operations.admin import HealthOutput

if TYPE_CHECKING:
    from memoryd.engine import Engine


@dataclass(frozen=True)
class HttpLimits:
    """Limits of the HTTP face that are not settings (yet).

    body_timeout: seconds a request body may take to arrive (408 after that).
    max_event_streams: concurrently open ``GET /mcp`` event streams (503 past that).
    """

    body_timeout: float = 30.0
    max_event_streams: int = 32


Running = Callable[[], AbstractAsyncContextManager[object]]

DESCRIPTION = "Long-term memory for AI agents: REST and gateway recall/capture."


def create_rest_app(
    open_engine: Callable[[], Engine],
    settings: Settings | None = None,
    limits: HttpLimits | None = None,
    *,
    description: str = DESCRIPTION,
    running: Sequence[Running] = (),
) -> FastAPI:
    """The REST app. ``open_engine`` runs once, in the lifespan; the engine is closed on exit.
    Each of ``running`` is entered once the engine is open and left before it closes."""
    settings = settings or Settings()
    limits = limits or HttpLimits()
    policy = host_policy(settings)  # a bad MEMORYD_ALLOWED_HOSTS entry fails here, at start
    app = FastAPI(
        title="memoryd",
        version=__version__,
        description=description,
        lifespan=_lifespan(open_engine, settings, running),
    )
    _add_error_handlers(app)
    _add_health_routes(app)
    add_routes(app)
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    _add_middleware(app, settings, limits, policy)
    access_log.install()
    return app


def _lifespan(
    open_engine: Callable[[], Engine], settings: Settings, running: Sequence[Running]
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """Open the engine (refusing to start without a key unless anonymous access was allowed),
    run the consolidation schedule and ``running``, close everything on exit."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        engine = open_engine()
        schedule = None
        try:
            if not settings.allow_anonymous and not engine.admin.has_active_key():
                raise NoKeysConfigured()
            app.state.engine = engine
            engine.waits.start()  # this host's smart waits; stopped by engine.close()
            schedule = engine.admin.schedule_consolidation()
            async with AsyncExitStack() as stack:
                for run in running:
                    await stack.enter_async_context(run())
                yield
        finally:
            if schedule is not None:
                schedule.stop()
            engine.close()

    return lifespan


def _add_error_handlers(app: FastAPI) -> None:
    """Every error answers with the JSON error envelope."""
    app.add_exception_handler(MemorydError, errors.memoryd_error)
    app.add_exception_handler(RequestValidationError, errors.validation_error)
    app.add_exception_handler(StarletteHTTPException, errors.http_error)
    app.add_exception_handler(UnicodeError, errors.unicode_error)
    app.add_exception_handler(Exception, errors.unexpected_error)


def _add_middleware(
    app: FastAPI, settings: Settings, limits: HttpLimits, policy: HostPolicy
) -> None:
    """Innermost first (each add wraps the ones before it)."""
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
    app.add_middleware(StreamCapMiddleware, limit=limits.max_event_streams)
    app.add_middleware(BodyTimeoutMiddleware, timeout=limits.body_timeout)
    app.add_middleware(BodyLimitMiddleware, limit=settings.max_body_bytes)
    app.add_middleware(HostGuard, policy=policy)
    app.add_middleware(ErrorBarrier)


_HEALTH_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"description": "Malformed Host header", "model": errors.ErrorEnvelope},
    403: {"description": "The Origin is not allowed", "model": errors.ErrorEnvelope},
    421: {"description": "A Host this server does not answer to", "model": errors.ErrorEnvelope},
    500: {"description": "Internal error", "model": errors.ErrorEnvelope},
    503: {"description": "Starting, or the store does not answer"},
}


def _add_health_routes(app: FastAPI) -> None:
    @app.get("/health", tags=["health"], response_model=None, responses=_HEALTH_RESPONSES)
    def health(request: Request) -> JSONResponse:
        """Deep health: the store answers a query; 503 if not. Without a key only
        ``{"status": ...}``; with any valid key also the version, the store's details
        (path, counts) and the embedder's state."""
        engine: Engine | None = getattr(app.state, "engine", None)
        if engine is None:
            return JSONResponse({"status": "starting"}, status_code=503)
        caller = request.scope.get(CALLER_SCOPE_KEY)
        keyed = isinstance(caller, Caller) and caller.key_id is not None
        report = invoke(engine, "health", {}, caller) if keyed else health_report(engine)
        assert isinstance(report, HealthOutput)
        status = 200 if report.status == "ok" else 503
        if keyed:
            return JSONResponse(report.model_dump(mode="json"), status_code=status)
        return JSONResponse({"status": report.status}, status_code=status)

    @app.get("/readyz", tags=["health"], response_model=None, responses=_HEALTH_RESPONSES)
    def readyz() -> JSONResponse:
        """``{"ready": true}`` once the engine is open, its store answers, its vector index
        is loaded and its embedding model too (a search would not wait); 503 otherwise."""
        engine: Engine | None = getattr(app.state, "engine", None)
        if engine is None or not is_ready(engine):
            return JSONResponse({"ready": False}, status_code=503)
        return JSONResponse({"ready": True})


def _openapi(app: FastAPI) -> dict[str, Any]:
    """The generated schema plus the two ways to present a key and the links from created
    resources to the routes that take their ids."""
    if app.openapi_schema:
        return app.openapi_schema
    from fastapi.openapi.utils import get_openapi

    schema = get_openapi(
        title=app.title, version=app.version, description=app.description + openapi.RULES,
        routes=app.routes,
    )
    openapi.add_rules(schema)
    schema.setdefault("components", {})["securitySchemes"] = {
        "bearer": {"type": "http", "scheme": "bearer"},
        "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
    }
    links = response_links()
    for path, item in schema.get("paths", {}).items():
        for operation in item.values():
            for status, response in operation.get("responses", {}).items():
                if status.startswith("2") and operation.get("operationId") in links:
                    response["links"] = links[operation["operationId"]]
            if path not in ("/health", "/readyz"):
                operation["security"] = [{"bearer": []}, {"apiKey": []}]
    app.openapi_schema = schema
    return schema
