"""The poison corpus: inputs that once answered 500, stored what they should not, or left the
store unreadable. Each must get a 4xx with a message that says what is wrong and leave nothing
behind; afterwards list, search, smart ingest, ``memoryd export`` and a restart all still work.
Run on both backends.

The engine's models refuse some (dates at the edges, PATCH nulls, invisible content,
valid_from after valid_until, ...); the HTTP face refuses the rest (strict JSON, 64-bit
numbers).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import httpx
import httpx2
import pytest
from api_fixtures import STANDARD_KEYS, LiveServer, clean_env, start_server
from conftest import MEMORYD_BIN
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

JSON = {"content-type": "application/json"}


@dataclass
class Poisoned:
    """A module's server and where its store lives (to export and restart it)."""

    server: LiveServer
    store_url: str
    base: Path
    memory_id: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def poisoned(request, shared_embedder, tmp_path_factory) -> Iterator[Poisoned]:
    base = tmp_path_factory.mktemp(f"poison-{request.param}")
    drop = None
    url = f"sqlite:///{base / 'memoryd.db'}"
    if request.param == "postgresql":
        pg = request.getfixturevalue("pg_server")
        url = pg.create_database()
        drop = lambda: pg.drop_database(url)  # noqa: E731
    with pytest.MonkeyPatch.context() as mp:
        clean_env(mp, base)
        server = start_server(base, shared_embedder, key_specs=STANDARD_KEYS, store_url=url)
        state = Poisoned(server, url, base)
        with server.client("admin") as admin:
            state.memory_id = admin.post(
                "/api/v1/memories", json={"content": "The kiln fires at 1240 degrees"}
            ).json()["id"]
        try:
            yield state
        finally:
            state.server.stop()
            if drop is not None:
                drop()


@dataclass(frozen=True)
class Poison:
    name: str
    method: str
    path: str
    body: bytes | None = None
    params: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    status: int = 422
    says: str = ""  # a word the error message must contain


def _deep(levels: int) -> str:
    return '{"a":' * levels + "1" + "}" * levels


def _body(text: str) -> bytes:
    return text.encode("utf-8")


MEMORIES = "/api/v1/memories"
HTTP_POISON: list[Poison] = [
    Poison("invalid json", "POST", MEMORIES, b'{"content":', says="invalid JSON"),
    Poison("byte order mark", "POST", MEMORIES, b'\xef\xbb\xbf{"content":"bom"}',
           says="byte order mark"),
    Poison("invalid utf-8", "POST", MEMORIES, b'{"content":"caf\xe9"}', says="UTF-8"),
    Poison("NaN", "POST", MEMORIES, b'{"content":"n","importance":NaN}', says="NaN"),
    Poison("Infinity", "POST", MEMORIES, b'{"content":"i","metadata":{"x":Infinity}}',
           says="Infinity"),
    Poison("-Infinity", "POST", "/smart_ingest", b'{"content":"i","importance":-Infinity}',
           says="Infinity"),
    Poison("1e400", "POST", MEMORIES, b'{"content":"e","importance":1e400}', says="1e400"),
    # A repeated key: which value counts differs between parsers (the last one was stored).
    Poison("repeated key", "POST", MEMORIES, b'{"content":"first","content":"second"}',
           says="'content' is repeated"),
    Poison("repeated key in metadata", "POST", "/smart_ingest",
           b'{"content":"r","metadata":{"owner":"a","owner":"b"}}', says="'owner' is repeated"),
    Poison("-1e400 in metadata", "POST", MEMORIES, b'{"content":"e","metadata":{"v":-1e400}}',
           says="out of range"),
    Poison("integer past 64 bits", "POST", MEMORIES,
           b'{"content":"b","metadata":{"v":18446744073709551616}}', says="64-bit"),
    Poison("integer of 5000 digits", "POST", MEMORIES,
           _body('{"content":"b","metadata":{"v":' + "9" * 5000 + "}}"), says="64-bit"),
    Poison("ledger after 2^63", "GET", "/api/v1/ledger",
           params={"after": "9223372036854775808"}, says="after"),
    Poison("offset 10^20", "GET", MEMORIES, params={"offset": "100000000000000000000"},
           says="offset"),
    Poison("limit NaN", "GET", MEMORIES, params={"limit": "nan"}, says="limit"),
    Poison("gc min_retention 1e400", "POST", "/api/v1/gc", b'{"min_retention":1e400}',
           says="1e400"),
    Poison("metadata 300 deep", "POST", MEMORIES,
           _body('{"content":"d","metadata":' + _deep(300) + "}"), says="nested deeper"),
    Poison("metadata 999 deep", "POST", "/smart_ingest",
           _body('{"content":"d","metadata":' + _deep(999) + "}"), says="nested deeper"),
    Poison("arrays 200k deep", "POST", MEMORIES, b"[" * 200_000, says="nested deeper"),
    Poison("lone surrogate", "POST", MEMORIES, b'{"content":"x\\ud800y"}', says="content"),
    Poison("content over the limit", "POST", MEMORIES,
           _body(json.dumps({"content": "x" * 70_000})), says="content"),
    Poison("body over the limit", "POST", MEMORIES, _body(json.dumps({"content": "x" * 1_100_000})),
           status=413, says="MEMORYD_MAX_BODY_BYTES"),
    Poison("65 tags", "POST", MEMORIES,
           _body(json.dumps({"content": "t", "tags": [f"t{i}" for i in range(65)]})), says="tags"),
    Poison("wrong type", "POST", MEMORIES, b'{"content":123}', says="content"),
    Poison("array body", "POST", MEMORIES, b'[{"content":"a"}]', says="body"),
    Poison("unknown field", "POST", MEMORIES, b'{"content":"u","colour":"red"}', says="colour"),
    Poison("text/plain body", "POST", MEMORIES, b"just text",
           headers={"content-type": "text/plain"}),
    Poison("bad X-Agent-Id", "POST", MEMORIES, b'{"content":"a"}',
           headers={"x-agent-id": "bad\tagent"}, status=400, says="X-Agent-Id"),
]

ENGINE_POISON: list[Poison] = [
    Poison("created_at 9999-12-31", "POST", MEMORIES,
           b'{"content":"late","created_at":"9999-12-31T23:59:59Z"}', says="created_at"),
    Poison("created_at 0001-01-01+14:00", "POST", MEMORIES,
           b'{"content":"early","created_at":"0001-01-01T00:00:00+14:00"}', says="created_at"),
    Poison("valid_from after valid_until", "POST", MEMORIES,
           b'{"content":"v","valid_from":"2026-02-01T00:00:00Z",'
           b'"valid_until":"2026-01-01T00:00:00Z"}', says="valid_from"),
    Poison("zero-width content", "POST", MEMORIES, _body('{"content":"\\u200b\\u200c\\u2060"}'),
           says="content"),
    Poison("in_minutes 1e308", "POST", "/intention",
           b'{"action":"set","description":"x","trigger":{"type":"time","in_minutes":1e308}}',
           says="in_minutes"),
    Poison("PATCH importance null", "PATCH", "{memory}", b'{"importance":null}',
           says="importance"),
    Poison("PATCH node_type null", "PATCH", "{memory}", b'{"node_type":null}', says="node_type"),
    Poison("PATCH tags null", "PATCH", "{memory}", b'{"tags":null}', says="tags"),
    Poison("PATCH metadata null", "PATCH", "{memory}", b'{"metadata":null}', says="metadata"),
    Poison("summary of 500 KB", "POST", MEMORIES,
           _body(json.dumps({"content": "s", "summary": "s" * 500_000})), says="summary"),
]


def _send(state: Poisoned, poison: Poison) -> httpx.Response:
    path = poison.path.replace("{memory}", f"{MEMORIES}/{state.memory_id}")
    with state.server.client("admin") as admin:
        return admin.request(
            poison.method, path, content=poison.body, params=poison.params,
            headers={**JSON, **poison.headers},
        )


def _check(state: Poisoned, poison: Poison) -> None:
    engine = state.server.engine
    before = (engine.store.count(), engine.get(state.memory_id).model_dump_json())
    response = _send(state, poison)
    assert response.status_code == poison.status, response.text[:300]
    body = response.json()
    assert body["success"] is False and body["error"] and body["code"]
    assert poison.says.lower() in body["error"].lower(), body["error"]
    assert (engine.store.count(), engine.get(state.memory_id).model_dump_json()) == before


@pytest.mark.parametrize("poison", HTTP_POISON, ids=[p.name for p in HTTP_POISON])
def test_bad_http_input_is_refused_and_stores_nothing(poisoned: Poisoned, poison: Poison):
    _check(poisoned, poison)


# --- afterwards -----------------------------------------------------------------------------
def _still_works(state: Poisoned) -> None:
    with state.server.client("admin") as admin:
        listed = admin.get(MEMORIES, params={"limit": 1000})
        assert listed.status_code == 200 and listed.json()["total"] >= 1
        found = admin.post("/api/v1/search", json={"query": "kiln", "detail_level": "full"})
        assert found.status_code == 200 and found.json()["results"][0]["id"] == state.memory_id
        again = admin.post("/smart_ingest", json={"content": "The kiln fires at 1240 degrees"})
        assert again.status_code == 200 and again.json()["data"]["memory_id"] == state.memory_id
    env = {"MEMORYD_STORE_URL": state.store_url, "HOME": str(state.base), "PATH": "/usr/bin:/bin"}
    exported = subprocess.run(
        [str(MEMORYD_BIN), "export"], capture_output=True, text=True, env=env, timeout=300
    )
    assert exported.returncode == 0, exported.stderr[-2000:]
    lines = [json.loads(line) for line in exported.stdout.splitlines()]
    assert state.memory_id in {line["id"] for line in lines}


def _restart(state: Poisoned, embedder: Any) -> None:
    keys = state.server.keys
    state.server.stop()
    state.server = start_server(state.base, embedder, store_url=state.store_url)
    state.server.keys.update(keys)


def test_after_the_http_poison_the_store_still_works_and_restarts(poisoned, shared_embedder):
    for poison in HTTP_POISON:
        _send(poisoned, poison)
    _still_works(poisoned)
    _restart(poisoned, shared_embedder)
    _still_works(poisoned)


def _rpc(state: Poisoned, name: str, raw_arguments: str) -> dict[str, Any]:
    """One JSON-RPC tools/call with the arguments as raw JSON text (NaN literals included:
    the SDK's client would turn them into null before they left)."""
    body = '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"%s","arguments":%s}}'
    response = httpx.post(
        f"{state.server.url}/mcp",
        content=(body % (name, raw_arguments)).encode(),
        headers={
            "Authorization": f"Bearer {state.server.keys['admin']}",
            "Accept": "application/json, text/event-stream",
            **JSON,
        },
        timeout=120,
    )
    assert response.status_code == 200, response.text
    return response.json()["result"]


MCP_POISON: list[tuple[str, str, str]] = [
    ("smart_ingest", '{"content": "nan", "importance": NaN}', "importance: must be a finite"),
    ("smart_ingest", '{"content": "inf", "metadata": {"x": Infinity}}', "metadata.x: must be"),
    ("smart_ingest", '{"content": "e", "metadata": {"x": [1, -1e400]}}', "metadata.x.1"),
    ("search", '{"query": "x", "limit": 1180591620717411303424}', "limit: integer out of range"),
    ("memory", '{"action": "edit", "id": "{memory}", "importance": -Infinity}', "importance"),
    ("smart_ingest", '{"content": "   "}', "content"),
]


def test_bad_tool_arguments_are_tool_errors_and_store_nothing(poisoned: Poisoned):
    engine = poisoned.server.engine
    before = (engine.store.count(), engine.get(poisoned.memory_id).model_dump_json())
    for name, raw, says in MCP_POISON:
        result = _rpc(poisoned, name, raw.replace("{memory}", poisoned.memory_id))
        assert result["isError"] is True and says in result["content"][0]["text"], (name, result)
    assert (engine.store.count(), engine.get(poisoned.memory_id).model_dump_json()) == before


# --- what the engine must refuse itself ---------------------------------------------------
@pytest.mark.parametrize(
    "poison", [pytest.param(p) for p in ENGINE_POISON],
    ids=[p.name for p in ENGINE_POISON],
)
def test_bad_values_are_refused_by_the_engine_and_store_nothing(poisoned, poison):
    _check(poisoned, poison)


def _mcp(state: Poisoned, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    headers = {"Authorization": f"Bearer {state.server.keys['admin']}"}

    async def go() -> list[Any]:
        http = httpx2.AsyncClient(headers=headers, timeout=120)
        async with Client(streamable_http_client(f"{state.server.url}/mcp", http_client=http)) as c:
            return [await c.call_tool(name, args) for name, args in calls]

    return asyncio.run(go())


def test_deep_metadata_through_mcp_is_refused(poisoned: Poisoned):
    """200 levels pass the MCP SDK's own parser (its limit is ~255); the engine must refuse."""
    deep: Any = 1
    for _ in range(200):
        deep = {"a": deep}
    before = poisoned.server.engine.store.count()
    (result,) = _mcp(poisoned, [("smart_ingest", {"content": "deep", "metadata": deep})])
    assert result.is_error and "metadata" in result.content[0].text
    assert poisoned.server.engine.store.count() == before


def test_after_the_engine_poison_the_store_still_works_and_restarts(poisoned, shared_embedder):
    for poison in ENGINE_POISON:
        response = _send(poisoned, poison)
        assert response.status_code < 500, (poison.name, response.text[:200])
    _still_works(poisoned)
    _restart(poisoned, shared_embedder)
    _still_works(poisoned)
