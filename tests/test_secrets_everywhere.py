"""Secrets in every field of every write path, through the real server on both backends: each
write that carries a credential anywhere (content, summary, tags, metadata keys and values,
source, category, codebase and intention text, captured messages) is refused with a message
that names the kind and the field and never repeats the secret, and nothing is stored.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any, Iterator

import pytest
from api_fixtures import STANDARD_KEYS, LiveServer, clean_env, start_server

MEMORIES = "/api/v1/memories"


def memoryd_key() -> str:
    return "mk_" + secrets.token_urlsafe(32)


def github_token() -> str:
    while True:  # the format needs letters and digits
        value = secrets.token_hex(18)
        if any(c.isalpha() for c in value) and any(c.isdigit() for c in value):
            return "ghp_" + value


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def server(request, shared_embedder, tmp_path_factory) -> Iterator[LiveServer]:
    base = tmp_path_factory.mktemp(f"secrets-{request.param}")
    url, drop = None, None
    if request.param == "postgresql":
        pg = request.getfixturevalue("pg_server")
        url = pg.create_database()
        drop = lambda: pg.drop_database(url)  # noqa: E731
    with pytest.MonkeyPatch.context() as mp:
        clean_env(mp, base)
        live = start_server(base, shared_embedder, key_specs=STANDARD_KEYS, store_url=url,
                            mcp_tools="vestige,full")
        with live.client("admin") as admin:
            live.keys["memory"] = admin.post(
                MEMORIES, json={"content": "The observatory dome opens at dusk"}
            ).json()["id"]
        try:
            yield live
        finally:
            live.stop()
            if drop is not None:
                drop()


@dataclass(frozen=True)
class Leak:
    """A write with ``{secret}`` somewhere; ``names`` are the field names a refusal may use."""

    name: str
    method: str
    path: str
    body: dict[str, Any]
    names: tuple[str, ...]


LEAKS: list[Leak] = [
    Leak("create content", "POST", MEMORIES, {"content": "key {secret}"}, ("content",)),
    Leak("create summary", "POST", MEMORIES, {"content": "a", "summary": "{secret}"}, ("summary",)),
    Leak("create tags", "POST", MEMORIES, {"content": "a", "tags": ["ok", "{secret}"]}, ("tags",)),
    Leak("create metadata value", "POST", MEMORIES,
         {"content": "a", "metadata": {"ci": {"token": "{secret}"}}}, ("metadata",)),
    Leak("create metadata key", "POST", MEMORIES,
         {"content": "a", "metadata": {"{secret}": 1}}, ("metadata",)),
    Leak("create source", "POST", MEMORIES, {"content": "a", "source": "{secret}"}, ("source",)),
    Leak("create category", "POST", MEMORIES, {"content": "a", "category": "{secret}"},
         ("category",)),
    Leak("create subcategory", "POST", MEMORIES, {"content": "a", "subcategory": "{secret}"},
         ("subcategory",)),
    Leak("ingest content", "POST", "/smart_ingest", {"content": "use {secret}"}, ("content",)),
    Leak("ingest summary", "POST", "/smart_ingest", {"content": "a", "summary": "{secret}"},
         ("summary",)),
    Leak("ingest tags", "POST", "/smart_ingest", {"content": "a", "tags": ["{secret}"]}, ("tags",)),
    Leak("ingest metadata", "POST", "/smart_ingest",
         {"content": "a", "metadata": {"auth": "{secret}"}}, ("metadata",)),
    Leak("ingest source", "POST", "/smart_ingest", {"content": "a", "source": "{secret}"},
         ("source",)),
    Leak("ingest items", "POST", "/ingest", {"items": [{"content": "b", "tags": ["{secret}"]}]},
         ("tags",)),
    Leak("patch content", "PATCH", "{memory}", {"content": "now {secret}"}, ("content",)),
    Leak("patch summary", "PATCH", "{memory}", {"summary": "{secret}"}, ("summary",)),
    Leak("patch tags", "PATCH", "{memory}", {"tags": ["{secret}"]}, ("tags",)),
    Leak("patch metadata", "PATCH", "{memory}", {"metadata": {"k": "{secret}"}}, ("metadata",)),
    Leak("patch source", "PATCH", "{memory}", {"source": "{secret}"}, ("source",)),
    Leak("edit content", "POST", "/memory",
         {"action": "edit", "id": "{memory_id}", "content": "{secret}"}, ("content",)),
    Leak("edit tags", "POST", "/memory",
         {"action": "edit", "id": "{memory_id}", "tags": ["{secret}"]}, ("tags",)),
    Leak("codebase decision", "POST", "/codebase",
         {"action": "remember_decision", "codebase": "c", "decision": "use {secret}"},
         ("decision", "content")),
    Leak("codebase rationale", "POST", "/codebase",
         {"action": "remember_decision", "codebase": "c", "decision": "d", "rationale": "{secret}"},
         ("rationale", "content")),
    Leak("codebase files", "POST", "/codebase",
         {"action": "remember_pattern", "codebase": "c", "name": "n", "description": "d",
          "files": ["{secret}"]}, ("files",)),
    Leak("codebase pattern name", "POST", "/codebase",
         {"action": "remember_pattern", "codebase": "c", "name": "{secret}", "description": "d"},
         ("name", "summary", "content")),
    Leak("intention description", "POST", "/intention",
         {"action": "set", "description": "rotate {secret}",
          "trigger": {"type": "event", "event": "e"}}, ("description",)),
    Leak("intention trigger", "POST", "/intention",
         {"action": "set", "description": "d", "trigger": {"type": "context", "topic": "{secret}"}},
         ("trigger",)),
]


def _fill(value: Any, secret: str, memory_id: str) -> Any:
    if isinstance(value, dict):
        return {_fill(k, secret, memory_id): _fill(v, secret, memory_id) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, secret, memory_id) for v in value]
    if isinstance(value, str):
        return value.replace("{secret}", secret).replace("{memory_id}", memory_id)
    return value


def _state(server: LiveServer) -> tuple[Any, ...]:
    engine = server.engine
    return (
        engine.store.count(),
        engine.get(server.keys["memory"]).model_dump_json(),
        len(engine.tasks.list_intentions("all")),
    )


@pytest.mark.parametrize(
    "leak",
    [pytest.param(x) for x in LEAKS],
    ids=[x.name for x in LEAKS],
)
@pytest.mark.parametrize("make", [memoryd_key, github_token], ids=["memoryd_key", "github_token"])
def test_a_secret_in_any_field_is_refused_by_kind_and_field(server: LiveServer, leak, make):
    secret = make()
    kind = make.__name__
    memory_id = server.keys["memory"]
    path = leak.path.replace("{memory}", f"{MEMORIES}/{memory_id}")
    before = _state(server)
    with server.client("admin") as admin:
        response = admin.request(leak.method, path, json=_fill(leak.body, secret, memory_id))
    assert response.status_code == 422, response.text[:300]
    message = response.json()["error"]
    assert kind in message and any(name in message for name in leak.names), message
    assert secret not in response.text
    assert _state(server) == before


def test_memory_store_screens_every_field(server: LiveServer):
    """The MCP memory_store tool: summary, detail, category and tags."""
    import asyncio

    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    secret = memoryd_key()
    calls = [
        {"summary": f"deploy with {secret}"},
        {"summary": "s", "detail": f"the key is {secret}"},
    ]

    async def go() -> list[Any]:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {server.keys['admin']}"})
        async with Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as c:
            return [await c.call_tool("memory_store", args) for args in calls]

    before = _state(server)
    for result in asyncio.run(go()):
        text = result.content[0].text
        assert result.is_error and "memoryd_key" in text and secret not in text
    assert _state(server) == before


@pytest.mark.parametrize("field", ["category", "tags"])
def test_memory_store_screens_category_and_tags(server: LiveServer, field: str):
    import asyncio

    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    secret = memoryd_key()
    args = {"summary": "s", field: secret if field == "category" else [secret]}

    async def go() -> Any:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {server.keys['admin']}"})
        async with Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as c:
            return await c.call_tool("memory_store", args)

    before = _state(server)
    result = asyncio.run(go())
    assert result.is_error and "memoryd_key" in result.content[0].text
    assert secret not in result.content[0].text
    assert _state(server) == before


def test_capture_does_not_echo_a_refused_secret(server: LiveServer):
    secret = memoryd_key()
    messages = [{"role": "user", "content": f"I always deploy with the key {secret} by hand."}]
    before = _state(server)
    with server.client("admin") as admin:
        response = admin.post("/capture", json={"messages": messages, "session_key": "leaky"})
    assert response.status_code == 200
    assert secret not in response.text
    assert response.json()["skipped"] and response.json()["stored"] == []
    assert _state(server) == before
