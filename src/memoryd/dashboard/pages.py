"""Serving the dashboard: one page for every ``/dashboard/...`` address (the page's own
router shows the view the address names), and its files under ``/dashboard/static/``.

Nothing here needs a key: the page holds no data. It asks for a key and sends it with every
call to the REST API, which decides what that key may see and do.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import Response

from memoryd.dashboard.assets import Asset, assets, security_headers

PREFIX = "/dashboard"
INDEX = "index.html"


def _send(request: Request, asset: Asset, status: int = 200) -> Response:
    headers = {**security_headers(), "ETag": asset.etag, "Cache-Control": "no-cache"}
    if request.headers.get("if-none-match") == asset.etag:
        return Response(status_code=304, headers=headers)
    return Response(asset.body, status_code=status, media_type=asset.media_type,
                    headers=headers)


def page(request: Request) -> Response:
    """The dashboard page (every view's address serves it)."""
    return _send(request, assets()[INDEX])


def static_file(request: Request, path: str) -> Response:
    """A file of the dashboard, or 404 (only files that ship with memoryd exist here)."""
    asset = assets().get(path)
    if asset is None or path == INDEX:
        return Response("not found", status_code=404, media_type="text/plain",
                        headers=security_headers())
    return _send(request, asset)


def add_pages(app: FastAPI) -> None:
    """Attach the page and file routes (left out of the OpenAPI document: they are not API)."""
    app.add_api_route(f"{PREFIX}/static/{{path:path}}", static_file, methods=["GET"],
                      include_in_schema=False)
    app.add_api_route(PREFIX, page, methods=["GET"], include_in_schema=False)
    app.add_api_route(f"{PREFIX}/{{view:path}}", page, methods=["GET"], include_in_schema=False)
