"""NUL (U+0000) in any text, one rule on both backends: refused with a 422 that names the field
and never repeats the value, nothing stored. PostgreSQL cannot store NUL (it answered 503 with
its internals and part of the input in the body) and SQLite would (201); the Python API refuses
it too. A store written before the rule still migrates to PostgreSQL (NUL becomes U+FFFD).
A store that fails says so without its driver's message.
"""

from __future__ import annotations

from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest
from api_fixtures import STANDARD_KEYS, LiveServer, clean_env, start_server

import memoryd
from memoryd.errors import InvalidInput
from memoryd.migrate import NUL_REPLACEMENT, copy_store
from memoryd.operations.messages import STORE_FAILED
from memoryd.store import policy
from memoryd.store.base import Actor
from memoryd.store.postgres import PostgresStore
from memoryd.store.sqlite import SQLiteStore

MARK = "x\x00MARK"  # the marker must never come back in a response


@dataclass
class World:
    server: LiveServer
    backend: str
    memory_id: str = ""
    task_id: str = ""


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def world(request, shared_embedder, tmp_path_factory) -> Iterator[World]:
    base = tmp_path_factory.mktemp(f"nul-{request.param}")
    url, drop = None, None
    if request.param == "postgresql":
        pg = request.getfixturevalue("pg_server")
        url = pg.create_database()
        drop = lambda: pg.drop_database(url)  # noqa: E731
    with pytest.MonkeyPatch.context() as mp:
        clean_env(mp, base)
        server = start_server(base, shared_embedder, key_specs=STANDARD_KEYS, store_url=url)
        state = World(server, request.param)
        with server.client("admin") as admin:
            state.memory_id = admin.post("/api/v1/memories",
                                         json={"content": "The kiln fires at 1240 degrees"}
                                         ).json()["id"]
            state.task_id = admin.post("/api/v1/tasks", json={"name": "glaze"}).json()["task"]["id"]
        try:
            yield state
        finally:
            server.stop()
            if drop is not None:
                drop()


# (name, method, path, body or query, the field the error must name)
PROBES: list[tuple[str, str, str, Any, str]] = [
    ("content", "POST", "/api/v1/memories", {"content": MARK}, "content"),
    ("tag", "POST", "/api/v1/memories", {"content": "ok", "tags": ["a", MARK]}, "tags.1"),
    ("metadata key", "POST", "/api/v1/memories", {"content": "ok", "metadata": {MARK: 1}},
     "metadata[key 0]"),
    ("metadata value", "POST", "/api/v1/memories",
     {"content": "ok", "metadata": {"k": [MARK]}}, "metadata.k.0"),
    ("summary", "POST", "/api/v1/memories", {"content": "ok", "summary": MARK}, "summary"),
    ("session_id", "POST", "/api/v1/memories", {"content": "ok", "session_id": MARK},
     "session_id"),
    ("smart ingest item", "POST", "/api/v1/ingest", {"items": [{"content": MARK}]},
     "items.0.content"),
    ("update", "PATCH", "/api/v1/memories/{memory}", {"content": MARK}, "content"),
    ("promote reason", "POST", "/api/v1/memories/{memory}/promote", {"reason": MARK}, "reason"),
    ("graph node", "POST", "/api/v1/graph/write",
     {"graph": "user", "nodes": [{"name": "kiln", "type": "fact", "body": MARK}]},
     "nodes.0.body"),
    ("task name", "POST", "/api/v1/tasks", {"name": MARK}, "name"),
    ("task message", "PATCH", "/api/v1/tasks/{task}", {"message": MARK}, "message"),
    ("capture", "POST", "/capture",
     {"session_key": "s1", "messages": [{"role": "user", "content": MARK}]},
     "messages.0.content"),
    ("capture session", "POST", "/capture",
     {"session_key": MARK, "messages": [{"role": "user", "content": "hello"}]}, "session_key"),
    ("search query", "POST", "/api/v1/search", {"query": MARK}, "query"),
    ("recall prompt", "POST", "/api/v1/recall", {"prompt": MARK}, "prompt"),
    ("wait criteria", "POST", "/api/v1/waits",
     {"target": "file:/nonexistent.log", "criteria": MARK, "timeout_s": 5}, "criteria"),
    ("intention", "POST", "/intention",
     {"action": "set", "description": MARK, "trigger": {"type": "event", "event": "e"}},
     "description"),
    ("key label", "POST", "/api/v1/keys", {"label": MARK}, "label"),
    ("path id", "GET", "/api/v1/memories/x%00y", None, "id"),
    ("path id of history", "GET", "/api/v1/memories/x%00y/history", None, "id"),
    ("query parameter", "GET", "/api/v1/memories", {"session_id": MARK}, "session_id"),
    ("query list", "GET", "/api/v1/memories", {"tags": MARK}, "tags.0"),
]


def _counts(world: World) -> tuple[Any, ...]:
    engine = world.server.engine
    return (engine.store.count(), engine.stats().get("last_seq"), len(engine.tasks.list()),
            len(engine.store.keys.list_keys()), len(engine.tasks.list_intentions("all")))


@pytest.mark.parametrize("probe", PROBES, ids=[p[0] for p in PROBES])
def test_nul_is_refused_naming_the_field_and_stores_nothing(world: World, probe):
    name, method, path, given, field = probe
    path = path.replace("{memory}", world.memory_id).replace("{task}", world.task_id)
    before = _counts(world)
    with world.server.client("admin") as admin:
        if method == "GET":
            response = admin.get(path, params=given)
        else:
            response = admin.request(method, path, json=given)
    assert response.status_code == 422, response.text[:300]
    body = response.json()
    assert body["code"] == "invalid_input"
    assert body["error"].startswith(f"{field}: ") and "NUL" in body["error"], body["error"]
    assert "MARK" not in response.text
    assert _counts(world) == before


def test_the_python_api_refuses_nul_alike(world: World):
    engine = world.server.engine
    before = _counts(world)
    with pytest.raises(InvalidInput, match="NUL"):
        engine.add(MARK)
    with pytest.raises(InvalidInput, match="NUL"):
        engine.promote(world.memory_id, reason=MARK)
    with pytest.raises(InvalidInput, match="NUL"):
        engine.get("x\x00y")
    assert _counts(world) == before


def test_a_store_that_fails_says_so_without_its_internals(world: World):
    """A driver error (a table gone) is a 503 whose body names neither SQL nor the input."""
    store = world.server.engine.store
    if world.backend == "postgresql":
        import psycopg

        table = f'"{store.schema}".task_messages'
        connect = lambda: psycopg.connect(store.url, autocommit=True)  # noqa: E731
    else:
        import sqlite3

        table = "task_messages"
        connect = lambda: closing(sqlite3.connect(store.path, isolation_level=None))  # noqa: E731
    with connect() as conn:
        conn.execute(f"ALTER TABLE {table} RENAME TO task_messages_gone")
    try:
        with world.server.client("admin") as admin:
            response = admin.patch(f"/api/v1/tasks/{world.task_id}",
                                   json={"message": "fired the kiln SECRETWORD"})
    finally:
        with connect() as conn:
            conn.execute(f"ALTER TABLE {table.replace('task_messages', 'task_messages_gone')} "
                         "RENAME TO task_messages")
    assert response.status_code == 503
    assert response.json()["error"] == STORE_FAILED
    for leak in ("task_messages", "SECRETWORD", "psycopg", "relation", "SQL"):
        assert leak not in response.text


# --- migration of a store written before the rule --------------------------------------------
def _legacy_sqlite(path: Path, embedder: Any) -> str:
    """A SQLite store holding NUL in a memory's content, tags and metadata, and in a history
    row, written as older versions wrote them: by the backend's own write hooks, which keep the
    keyword index in step (the contract methods now refuse NUL before reaching them)."""
    with memoryd.open(f"sqlite:///{path}", embedder=embedder) as mem:
        kept = mem.add("The glaze cracks above 1250 degrees")
        mem.add("An untouched memory")
    store = SQLiteStore(path)
    try:
        fields = {"content": "The glaze\x00cracks above 1250 degrees", "tags": ["gl\x00aze"],
                  "metadata": {"no\x00te": "o\x00k", "big": 4.4640585951849544e16,
                               "bigger": 6.7328534396002112e16}}
        store._update(policy.Change(kept.id, fields, None, "update", None), Actor("old"))
        state = store.get(kept.id).state  # type: ignore[union-attr]
        store._update_states({kept.id: state}, "promote", Actor("old"), {"reason": "a\x00b"})
    finally:
        store.close()
    return kept.id


def test_migrate_copies_rows_with_nul_and_counts_them(tmp_path, pg_url, shared_embedder):
    memory_id = _legacy_sqlite(tmp_path / "old.db", shared_embedder)
    source = SQLiteStore(str(tmp_path / "old.db"))
    target = PostgresStore(pg_url)
    try:
        report = copy_store(source, target)
        assert report.verified, [c for c in report.checks if not c.ok]
        assert report.cleaned == {"memories": 1, "history": 1}
        copied = target.get(memory_id)
        assert copied is not None
        assert copied.content == f"The glaze{NUL_REPLACEMENT}cracks above 1250 degrees"
        assert copied.tags == [f"gl{NUL_REPLACEMENT}aze"]
        # jsonb hands a float with no fraction back as an int in its shortest decimal form:
        # the same JSON number, which verification must see as such
        assert copied.metadata == {f"no{NUL_REPLACEMENT}te": f"o{NUL_REPLACEMENT}k",
                                   "big": 44640585951849544, "bigger": 67328534396002110}
        assert target.count() == source.count() == 2
        again = copy_store(source, target)  # a finished copy copies nothing twice
        assert again.verified and sum(again.copied.values()) == 0
    finally:
        source.close()
        target.close()


def test_values_passed_over_hold_no_text_and_text_beside_them_is_still_checked() -> None:
    """``policy.TEXTLESS`` lets the check skip hundreds of scheduling states at once; it
    stays right only while those hold numbers and times alone."""
    from datetime import datetime

    from memoryd.models import SchedulingState

    for name, field in SchedulingState.model_fields.items():
        assert field.annotation in (int, float, datetime | None), name
    states = {f"m{i}": SchedulingState() for i in range(300)}
    policy.refuse_nul((states, {"session": "s"}))  # no text with NUL: passes
    with pytest.raises(InvalidInput):
        policy.refuse_nul(({**states, MARK: SchedulingState()},))  # a key beside them
    with pytest.raises(InvalidInput):
        policy.refuse_nul(([*states.values(), [1, 2.0, None, MARK]],))
