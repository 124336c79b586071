"""The FastAPI application: health endpoints now; the REST and MCP routes mount here."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import AsyncIterator, Callable

from fastapi import FastAPI
from fastapi.responses import JSONResponse

from memoryd import __version__
from memoryd.engine import Engine
from memoryd.errors import MemorydError


def create_app(open_engine: Callable[[], Engine]) -> FastAPI:
    """An app whose lifespan opens the engine with ``open_engine`` and closes it on exit."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.engine = open_engine()
        try:
            yield
        finally:
            app.state.engine.close()

    app = FastAPI(title="memoryd", version=__version__, lifespan=lifespan)

    @app.get("/health", tags=["health"])
    def health() -> JSONResponse:
        """Deep health: the store answers a query; the embedder's state is reported."""
        engine: Engine = app.state.engine
        embedder = {"model_id": engine.embedder.model_id, "loaded": engine.embedder.loaded}
        try:
            store = engine.store.health()
        except MemorydError as exc:
            body = {"status": "unhealthy", "store": {"ok": False, "error": str(exc)},
                    "embedder": embedder}
            return JSONResponse(body, status_code=503)
        return JSONResponse({"status": "ok", "version": __version__, "store": store,
                             "embedder": embedder})

    return app
