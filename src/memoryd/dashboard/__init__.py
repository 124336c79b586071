"""The web dashboard: a page at ``/dashboard`` on the HTTP server's own port, for people to
look at a memory and fix it (memories, one memory, graphs, timeline, domains, tasks and
waits, health), live.

A face like the REST API and MCP: the page calls the REST API with the key the person logs
in with, so the key's scopes and bindings decide everything it shows and does. This package
serves the page and its files (:mod:`~memoryd.dashboard.pages`, with a strict
Content-Security-Policy, :mod:`~memoryd.dashboard.assets`) and the live change feed over a
WebSocket (:mod:`~memoryd.dashboard.live`). See docs/dashboard.md.
"""

from __future__ import annotations

from fastapi import FastAPI

from memoryd.dashboard.live import add_live
from memoryd.dashboard.pages import PREFIX, add_pages

__all__ = ["PREFIX", "mount"]


def mount(app: FastAPI, *, allow_anonymous: bool = False) -> None:
    """Serve the dashboard and the live change feed from ``app``."""
    add_live(app, allow_anonymous=allow_anonymous)
    add_pages(app)
