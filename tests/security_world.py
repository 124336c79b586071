"""A populated server for the security suites, on either backend, and the callers that use it.

``world(backend)`` starts one real uvicorn server (tests/api_fixtures.py) on SQLite or on a
fresh PostgreSQL database, with a key for every kind of caller the matrix covers and the
memories of *other* agents and scopes that bound callers must never see or change:

=============  ==========================================================================
caller         what it is
=============  ==========================================================================
none           no key at all
bad            a well-formed ``mk_`` key that was never issued
revoked        a key that was issued, then revoked
reader         scopes read
writer         scopes read, write
admin          scope admin
scoped         read, write; bound to memory scope ``project:x``
bot            read, write; bound to agent ``bot-1``
labeller       the writer key sending ``X-Agent-Id: helper-agent`` (a label, no key of its own)
=============  ==========================================================================
"""

from __future__ import annotations

import asyncio
import itertools
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import httpx
import httpx2
import pytest
from api_fixtures import LiveServer, clean_env, start_server
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


KEY_SPECS: dict[str, dict[str, Any]] = {
    "reader": {"scopes": ["read"]},
    "writer": {"scopes": ["read", "write"]},
    "admin": {"scopes": ["admin"]},
    "scoped": {"scopes": ["read", "write"], "memory_scope": "project:x"},
    "bot": {"scopes": ["read", "write"], "agent_id": "bot-1"},
    "bot2": {"scopes": ["read", "write"], "agent_id": "bot-2"},
    "yonly": {"scopes": ["read", "write"], "memory_scope": "project:y"},
    "revoked": {"scopes": ["admin"]},
}
CALLERS = ("none", "bad", "revoked", "reader", "writer", "admin", "scoped", "bot", "labeller")
BOUND = ("scoped", "bot")
UNAUTHENTICATED = ("none", "bad", "revoked")
SCOPES_OF: dict[str, frozenset[str]] = {
    "reader": frozenset({"read"}),
    "writer": frozenset({"read", "write"}),
    "labeller": frozenset({"read", "write"}),
    "admin": frozenset({"read", "write", "admin"}),
    "scoped": frozenset({"read", "write"}),
    "bot": frozenset({"read", "write"}),
}

# Memories bound callers must not reach: another agent's (in the shared user scope) and
# another project's. Each carries a marker no query and no other write contains, so a leak is
# found by the marker even where a response echoes the query.
FOREIGN_AGENT = "The staging deploy uses the cobalt release train on Thursdays (ref zqa4417)"
FOREIGN_SCOPE = "Project Y keeps its nightly artifacts in the vermilion bucket (ref zqs5521)"
FOREIGN_CODEBASE = "Use the walrus operator sparingly in the x codebase (ref zqc6630)"
FOREIGN_INTENTION = "Remind bot two to rotate the cobalt release credentials (ref zqi7742)"
MARKERS = {"agent": "zqa4417", "scope": "zqs5521", "codebase": "zqc6630", "intention": "zqi7742"}


def without_marker(text: str) -> str:
    """The foreign text as another writer might state it (no marker)."""
    return text.rsplit(" (ref ", 1)[0]

_WORDS = (
    "harbour lantern orchard glacier violin saffron quartz meadow canyon falcon "
    "tundra mosaic pepper comet ember lagoon basalt juniper marble sequoia cobweb "
    "prairie nebula anvil kelp monsoon pewter thistle quiver walnut"
).split()
_counter = itertools.count()


def unique_text(prefix: str = "note") -> str:
    """A sentence no other test writes (distinct words, so the gate creates, not merges)."""
    n = next(_counter)
    a, b, c = (_WORDS[(n * 7 + k * 11) % len(_WORDS)] for k in range(3))
    return f"{prefix} {n}: the {a} near the {b} holds a {c} ({secrets.token_hex(3)})"


@dataclass
class World:
    """The server, the secrets of its keys, and the ids of the foreign memories."""

    server: LiveServer
    backend: str
    foreign: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return self.server.url

    def headers(self, caller: str) -> dict[str, str]:
        """The headers a caller sends (none, a bad key, a revoked key, a real one)."""
        if caller == "none":
            return {}
        if caller == "bad":
            return {"Authorization": "Bearer mk_" + secrets.token_urlsafe(32)}
        if caller == "labeller":
            return {"Authorization": f"Bearer {self.server.keys['writer']}", "X-Agent-Id": "helper-agent"}
        return {"Authorization": f"Bearer {self.server.keys[caller]}"}

    def client(self, caller: str) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=self.headers(caller), timeout=120)

    def create(self, caller: str, content: str | None = None, **fields: Any) -> dict[str, Any]:
        """A memory written through the API by ``caller`` (so it lands in its view)."""
        with self.client(caller) as client:
            response = client.post(
                "/api/v1/memories", json={"content": content or unique_text(), **fields}
            )
        assert response.status_code == 201, response.text
        return response.json()

    def memory(self, memory_id: str) -> Any:
        """A memory as stored (read through the engine, not through any key)."""
        return self.server.engine.get(memory_id)

    def fingerprint(self, memory_id: str) -> tuple[Any, ...]:
        """Everything a write could change about a memory."""
        m = self.memory(memory_id)
        history = self.server.engine.history(memory_id)
        return (
            m.content, m.summary, tuple(m.tags), m.metadata, m.importance, m.superseded_by,
            m.updated_at, m.state.reps, m.state.lapses, m.state.storage_strength, len(history),
        )

    def mcp(
        self, caller: str, calls: list[tuple[str, dict[str, Any]]]
    ) -> tuple[list[int], list[Any], BaseException | None]:
        """Call MCP tools over Streamable HTTP with the SDK client, as ``caller``.

        Returns the HTTP statuses the client saw, the tool results, and the error that
        stopped the session (None if it ran).
        """
        statuses: list[int] = []

        async def record(response: Any) -> None:
            statuses.append(response.status_code)

        async def go() -> list[Any]:
            http = httpx2.AsyncClient(
                headers=self.headers(caller), timeout=120, event_hooks={"response": [record]}
            )
            async with Client(streamable_http_client(f"{self.url}/mcp", http_client=http)) as c:
                return [await c.call_tool(name, args) for name, args in calls]

        try:
            return statuses, asyncio.run(go()), None
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            return statuses, [], exc


def _seed(world: World) -> None:
    server = world.server
    world.foreign["agent"] = world.create("bot2", FOREIGN_AGENT, tags=["cobalt"])
    world.foreign["scope"] = world.create("yonly", FOREIGN_SCOPE, tags=["vermilion"])
    with world.client("bot2") as bot2:
        decision = bot2.post(
            "/codebase",
            json={"action": "remember_decision", "codebase": "x", "decision": FOREIGN_CODEBASE},
        )
        assert decision.status_code == 200, decision.text
        world.foreign["codebase"] = decision.json()["data"]["memory"]
        intention = bot2.post(
            "/intention",
            json={
                "action": "set",
                "description": FOREIGN_INTENTION,
                "trigger": {"type": "context", "codebase": "x"},
            },
        )
        assert intention.status_code == 200, intention.text
        world.foreign["intention"] = intention.json()["data"]["intention"]
    record = next(k for k in server.engine.admin.list_keys() if k.label == "revoked")
    server.engine.admin.revoke_key(record.id)


def world_fixture(
    request: pytest.FixtureRequest,
    shared_embedder: Any,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[World]:
    """Body of a module-scoped, backend-parametrised ``world`` fixture."""
    backend = request.param
    base: Path = tmp_path_factory.mktemp(f"world-{backend}")
    drop: Callable[[], None] | None = None
    store_url = None
    if backend == "postgresql":
        pg = request.getfixturevalue("pg_server")
        store_url = pg.create_database()
        drop = lambda: pg.drop_database(store_url)  # noqa: E731
    with pytest.MonkeyPatch.context() as mp:
        clean_env(mp, base)
        # bot-2 may write into project x (its codebase decision below); bot-1 may not.
        server = start_server(base, shared_embedder, key_specs=KEY_SPECS, store_url=store_url,
                              mcp_tools="vestige,full", project_writers={"x": ["bot-2"]})
        world = World(server, backend)
        try:
            _seed(world)
            yield world
        finally:
            server.stop()  # the lifespan closes the engine
            if drop is not None:
                drop()
