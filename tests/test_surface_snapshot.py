"""The public surface, pinned: the REST OpenAPI document and the MCP tool list.

A change to either shows up here as a diff against ``tests/snapshots/``. When the change is
intended, regenerate the files with ``MEMORYD_TEST_UPDATE_SNAPSHOTS=1 scripts/test
tests/test_surface_snapshot.py`` and commit them with the change that caused it.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
from mcp.client import Client

from memoryd.config import Settings
from memoryd.mcp.server import build_server
from memoryd.operations import Caller
from memoryd.serving.http import create_app

SNAPSHOTS = Path(__file__).parent / "snapshots"
UPDATE = os.environ.get("MEMORYD_TEST_UPDATE_SNAPSHOTS") == "1"


def _check(name: str, document: Any) -> None:
    path = SNAPSHOTS / name
    text = json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    if UPDATE or not path.exists():
        path.write_text(text)
        if not UPDATE:
            pytest.fail(f"{name} did not exist; it was written now: review and commit it")
        return
    assert text == path.read_text(), (
        f"{name} changed; if intended, regenerate with MEMORYD_TEST_UPDATE_SNAPSHOTS=1"
    )


def test_openapi_document_is_pinned() -> None:
    app = create_app(lambda: None, Settings())  # type: ignore[arg-type,return-value]
    _check("openapi.json", app.openapi())


def test_mcp_tool_list_is_pinned() -> None:
    server = build_server(lambda: None, lambda ctx: Caller.local())  # type: ignore[arg-type,return-value]

    async def tools() -> dict[str, Any]:
        async with Client(server) as client:
            listed = await client.list_tools()
        return listed.model_dump(mode="json", exclude_none=True)

    _check("mcp_tools.json", asyncio.run(tools()))
