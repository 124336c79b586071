"""The auth matrix: every REST route and every MCP tool, called by every kind of caller through
the real server (the real auth path), on both backends.

Each cell's expected outcome follows from three rules: no usable key (none, bad, revoked) is
401; a key without the operation's scope is 403; a key bound to a scope or agent is 403 on
operations that are not available to bound keys. Everything else succeeds. The isolation of
bound keys (what they may see and change) is tested in test_isolation.py.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from typing import Any, Iterator

import pytest
from security_world import (
    BOUND,
    CALLERS,
    SCOPES_OF,
    UNAUTHENTICATED,
    World,
    unique_text,
    world_fixture,
)

from memoryd.api.routes import BINDINGS
from memoryd.keys import grants
from memoryd.operations import tool_operations

WRITERS = ("writer", "admin", "scoped", "bot", "labeller")


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def world(request, shared_embedder, tmp_path_factory) -> Iterator[World]:
    yield from world_fixture(request, shared_embedder, tmp_path_factory)


@dataclass(frozen=True)
class Case:
    """One call: the route (or tool) and arguments, the scope it needs, where bound keys may go.

    Placeholders in paths and bodies: ``{own}`` a memory in the caller's view, ``{fresh}`` a new
    one of those (for destructive calls), ``{task}`` / ``{fresh_task}`` and ``{wait}`` /
    ``{fresh_wait}`` the same for tasks and waits, ``{node}`` / ``{node2}`` two nodes of the
    knowledge graph the caller writes to, ``{slug}`` a new node id, ``{domain}`` a domain
    that does not exist, ``{key}`` a new API key id,
    ``{text}`` new content.
    """

    name: str
    target: str  # "METHOD /path" or "tool:<name>"
    args: dict[str, Any] | None
    scope: str
    bound_ok: bool = True
    status: int = 200
    agent_ok: bool = True  # False: refused to a key bound to an agent (not to a scope)


def _messages() -> list[dict[str, str]]:
    return [{"role": "user", "content": "I prefer {text} for breakfast."}]


# A wait that never resolves on its own: this test process is the pid, and it outlives it.
WAIT_ARGS = {"target": f"pid:{os.getpid()}", "criteria": "exit", "timeout_s": 120}
GRAPH_FILE = ('{"format": "memoryd-knowledge-graph", "version": 1, '
              '"nodes": [{"id": "{slug}", "name": "{text}", "type": "fact", '
              '"created": "2026-01-02T00:00:00Z", "updated": "2026-01-02T00:00:00Z"}]}')

REST_CASES: list[Case] = [
    Case("bridge search", "POST /search", {"query": "release train"}, "read"),
    Case("bridge ingest", "POST /ingest", {"content": "{text}"}, "write"),
    Case("bridge smart_ingest", "POST /smart_ingest", {"content": "{text}"}, "write"),
    Case("smart ingest", "POST /api/v1/ingest", {"content": "{text}"}, "write"),
    Case("bridge promote", "POST /promote", {"id": "{own}"}, "write"),
    Case("bridge demote", "POST /demote", {"id": "{own}"}, "write"),
    Case("memory get", "POST /memory", {"action": "get", "id": "{own}"}, "read"),
    Case("memory state", "POST /memory", {"action": "state", "id": "{own}"}, "read"),
    Case("memory history", "POST /memory", {"action": "history", "id": "{own}"}, "read"),
    Case("memory versions", "POST /memory", {"action": "versions", "id": "{own}"}, "read"),
    Case("memory promote", "POST /memory", {"action": "promote", "id": "{own}"}, "write"),
    Case("memory demote", "POST /memory", {"action": "demote", "id": "{own}"}, "write"),
    Case("memory edit", "POST /memory", {"action": "edit", "id": "{own}", "tags": ["e"]}, "write"),
    Case("memory delete", "POST /memory", {"action": "delete", "id": "{fresh}"}, "write"),
    Case("memory purge", "POST /memory", {"action": "purge", "id": "{fresh}"}, "admin"),
    Case("codebase context", "POST /codebase", {"action": "get_context", "codebase": "x"}, "read"),
    # Codebase x is project:x: bot-1 is not among its writers (MEMORYD_PROJECT_WRITERS).
    Case(
        "codebase decision",
        "POST /codebase",
        {"action": "remember_decision", "codebase": "x", "decision": "{text}"},
        "write",
        agent_ok=False,
    ),
    Case(
        "codebase pattern",
        "POST /codebase",
        {"action": "remember_pattern", "codebase": "x", "name": "p", "description": "{text}"},
        "write",
        agent_ok=False,
    ),
    Case("intention list", "POST /intention", {"action": "list"}, "read"),
    Case("intention check", "POST /intention", {"action": "check", "context": {}}, "read"),
    Case(
        "intention set",
        "POST /intention",
        {"action": "set", "description": "{text}", "trigger": {"type": "event", "event": "e"}},
        "write",
    ),
    Case("recall", "POST /recall", {"prompt": "release train"}, "read"),
    Case("capture", "POST /capture", {"messages": "{messages}", "session_key": "{text}"}, "write"),
    Case("flush", "POST /flush", {"messages": "{messages}"}, "write"),
    Case("session warm", "POST /session/warm", {"session_key": "s"}, "read"),
    Case("create", "POST /api/v1/memories", {"content": "{text}"}, "write", status=201),
    Case("list", "GET /api/v1/memories", {"limit": 5}, "read"),
    Case("get", "GET /api/v1/memories/{own}", None, "read"),
    Case("patch", "PATCH /api/v1/memories/{own}", {"tags": ["p"]}, "write"),
    Case("delete", "DELETE /api/v1/memories/{fresh}", None, "write"),
    Case("delete purge", "DELETE /api/v1/memories/{fresh}", {"purge": True}, "admin"),
    Case("history", "GET /api/v1/memories/{own}/history", None, "read"),
    Case("neighbours", "GET /api/v1/memories/{own}/neighbours", None, "read"),
    Case("retention", "GET /api/v1/memories/{own}/retention", {"points": 5}, "read"),
    Case("link", "POST /api/v1/memories/{own}/links", {"target": "{fresh}"}, "write"),
    Case("promote", "POST /api/v1/memories/{own}/promote", {"reason": "r"}, "write"),
    Case("demote", "POST /api/v1/memories/{own}/demote", None, "write"),
    Case("search", "POST /api/v1/search", {"query": "release train"}, "read"),
    Case("api recall", "POST /api/v1/recall", {"prompt": "release train"}, "read"),
    Case("consolidate dry", "POST /api/v1/consolidate", {"dry_run": True}, "read", False),
    Case("gc dry", "POST /api/v1/gc", {}, "admin", False),
    Case("stats", "GET /api/v1/stats", None, "read", False),
    Case("journal", "GET /api/v1/journal", {"day": "2026-01-02"}, "read", False),
    Case("keys list", "GET /api/v1/keys", None, "admin", False),
    Case("keys create", "POST /api/v1/keys", {"label": "{text}"}, "admin", False, status=201),
    Case("keys revoke", "DELETE /api/v1/keys/{key}", None, "admin", False),
    Case("ledger", "GET /api/v1/ledger", {"limit": 3}, "admin", False),
    Case("ledger verify", "GET /api/v1/ledger/verify", None, "admin", False),
    Case("task register", "POST /api/v1/tasks", {"name": "{text}", "plan": ["a", "b"]}, "write",
         status=201),
    Case("task list", "GET /api/v1/tasks", None, "read"),
    Case("task get", "GET /api/v1/tasks/{task}", None, "read"),
    Case("task update", "PATCH /api/v1/tasks/{task}", {"message": "{text}", "step_done": 1},
         "write"),
    Case("task complete", "POST /api/v1/tasks/{fresh_task}/complete", {"outcome": "{text}"},
         "write"),
    Case("wait start", "POST /api/v1/waits", WAIT_ARGS, "write", status=202),
    Case("wait list", "GET /api/v1/waits", None, "read"),
    Case("wait status", "GET /api/v1/waits/{wait}", None, "read"),
    Case("wait cancel", "DELETE /api/v1/waits/{fresh_wait}", None, "write"),
    Case("graph core", "GET /api/v1/graph/core", None, "read"),
    Case("graph write", "POST /api/v1/graph/write", {"nodes": [{"name": "{text}"}]}, "write"),
    Case("graph link", "POST /api/v1/graph/link", {"source": "{node}", "target": "{node2}"},
         "write"),
    Case("graph search", "POST /api/v1/graph/search", {"query": "release train"}, "read"),
    Case("graph recall", "POST /api/v1/graph/nodes/{node}/recall", {}, "write"),
    Case("graph archive dry", "POST /api/v1/graph/archive", {"dry_run": True}, "write",
         agent_ok=False),
    Case("graph changes", "GET /api/v1/graph/changes", None, "read"),
    Case("graph ping", "GET /api/v1/graph/ping", None, "read"),
    Case("graph export", "GET /api/v1/graph/export", None, "read"),
    # A file names its nodes' ids: a key bound to an agent writes only ids of its own nodes.
    Case("graph import", "POST /api/v1/graph/import", {"text": GRAPH_FILE}, "write",
         agent_ok=False),
    Case("graph view", "GET /api/v1/graph/view", None, "read"),
    Case("graph list", "GET /api/v1/graph/list", None, "read"),
    Case("graph memories", "GET /api/v1/graph/memories", {"limit": 20}, "read"),
    Case("graph node archive", "POST /api/v1/graph/nodes/{node}/archive", {}, "write"),
    Case("changes", "GET /api/v1/changes", {"since": 0, "limit": 5}, "read"),
    Case("timeline", "GET /api/v1/timeline", {"days": 2}, "read"),
    Case("overview", "GET /api/v1/overview", None, "read"),
    Case("whoami", "GET /api/v1/whoami", None, "read"),
    # This store has no domains: lookups of one answer 404 once the caller is let through.
    Case("domains list", "GET /api/v1/domains", None, "read", False),
    Case("domain show", "GET /api/v1/domains/{domain}", None, "read", False, status=404),
    Case("domain proposals", "GET /api/v1/domains/proposals", None, "read", False),
    Case("domains discover", "POST /api/v1/domains/discover", {}, "admin", False),
    Case("domains merge", "POST /api/v1/domains/merge", {"ids": ["{domain}", "other"]},
         "admin", False, status=404),
    Case("domains threshold", "POST /api/v1/domains/threshold", {"threshold": 0.35}, "admin",
         False),
    Case("domain accept", "POST /api/v1/domains/proposals/{domain}/accept", None, "admin",
         False, status=404),
    Case("domain reject", "POST /api/v1/domains/proposals/{domain}/reject", None, "admin",
         False, status=404),
    Case("domain rename", "PATCH /api/v1/domains/{domain}", {"name": "renamed"}, "admin",
         False, status=404),
    Case("domain split", "POST /api/v1/domains/{domain}/split", None, "admin", False,
         status=404),
]

# The server of these tests offers `vestige,full`: every tool, with the Vestige-style
# search, smart_ingest, memory, codebase and intention (the action-style arguments).
TOOL_CASES: list[Case] = [
    Case("search", "tool:search", {"query": "release train"}, "read"),
    Case("recall", "tool:recall", {"prompt": "release train"}, "read"),
    Case("smart_ingest", "tool:smart_ingest", {"content": "{text}"}, "write"),
    Case("smart_ingest batch", "tool:smart_ingest", {"items": [{"content": "{text}"}]}, "write"),
    Case("memory get", "tool:memory", {"action": "get", "id": "{own}"}, "read"),
    Case("memory promote", "tool:memory", {"action": "promote", "id": "{own}"}, "write"),
    Case("memory delete", "tool:memory", {"action": "delete", "id": "{fresh}"}, "write"),
    Case("memory purge", "tool:memory", {"action": "purge", "id": "{fresh}"}, "admin"),
    Case("memory_feedback", "tool:memory_feedback", {"id": "{own}", "verdict": "helpful"},
         "write"),
    Case("memory_edit", "tool:memory_edit", {"id": "{own}", "tags": ["e"]}, "write"),
    Case("memory_delete", "tool:memory_delete", {"id": "{fresh}"}, "write"),
    Case("memory_delete purge", "tool:memory_delete", {"id": "{fresh}", "purge": True}, "admin"),
    Case("memory_store", "tool:memory_store", {"summary": "{text}"}, "write"),
    Case("memory_recall", "tool:memory_recall", {"query": "release train"}, "read"),
    Case("memory_search", "tool:memory_search", {"query": "release train"}, "read"),
    Case("memory_get", "tool:memory_get", {"path": "memoryd/{own}.md"}, "read"),
    Case("memory_forget", "tool:memory_forget", {"memoryId": "{fresh}"}, "write"),
    Case("codebase context", "tool:codebase", {"action": "get_context", "codebase": "x"}, "read"),
    Case("codebase decision", "tool:codebase",
         {"action": "remember_decision", "codebase": "x", "decision": "{text}"}, "write",
         agent_ok=False),
    Case("intention list", "tool:intention", {"action": "list"}, "read"),
    Case("intention set", "tool:intention", {"action": "set", "description": "{text}",
                                             "trigger": {"type": "event", "event": "e"}},
         "write"),
    Case("explore", "tool:explore", {"id": "{own}"}, "read"),
    Case("consolidate dry", "tool:consolidate", {"dry_run": True}, "read", False),
    Case("stats", "tool:stats", {}, "read", False),
    Case("health", "tool:health", {}, "read"),
    Case("task_register", "tool:task_register", {"name": "{text}"}, "write"),
    Case("task_update", "tool:task_update", {"id": "{task}", "message": "{text}"}, "write"),
    Case("task_get", "tool:task_get", {"id": "{task}"}, "read"),
    Case("task_list", "tool:task_list", {}, "read"),
    Case("task_complete", "tool:task_complete", {"id": "{fresh_task}"}, "write"),
    Case("smart_wait", "tool:smart_wait", WAIT_ARGS, "write"),
    Case("wait_status", "tool:wait_status", {"id": "{wait}"}, "read"),
    Case("wait_list", "tool:wait_list", {}, "read"),
    Case("wait_cancel", "tool:wait_cancel", {"id": "{fresh_wait}"}, "write"),
    Case("kg_read", "tool:kg_read", {}, "read"),
    Case("kg_write", "tool:kg_write", {"nodes": [{"name": "{text}"}]}, "write"),
    Case("kg_link", "tool:kg_link", {"source": "{node}", "target": "{node2}"}, "write"),
    Case("kg_search", "tool:kg_search", {"query": "release train"}, "read"),
    Case("kg_recall", "tool:kg_recall", {"id": "{node}"}, "write"),
    Case("kg_archive dry", "tool:kg_archive", {"dry_run": True}, "write", agent_ok=False),
    Case("kg_sync", "tool:kg_sync", {}, "read"),
    Case("kg_ping", "tool:kg_ping", {}, "read"),
    Case("domains", "tool:domains", {"action": "list"}, "read", False),
    Case("keys_create", "tool:keys_create", {"label": "{text}"}, "admin", False),
]


def expected(caller: str, case: Case) -> int:
    """The status (or, for tools, the status the tool error stands for) of one cell."""
    if caller in UNAUTHENTICATED:
        return 401
    if not grants(SCOPES_OF[caller], case.scope):
        return 403
    if caller in BOUND and not case.bound_ok:
        return 403
    if caller == "bot" and not case.agent_ok:
        return 403
    return case.status


PLACEHOLDER_ID = "00000000-0000-4000-8000-000000000000"


def _fill(value: Any, world: World, caller: str, real: bool = True) -> Any:
    """Replace the placeholders of a case with fresh text and ids: real ones when the call
    should succeed, a placeholder when it must be refused before any lookup."""
    if isinstance(value, dict):
        return {k: _fill(v, world, caller, real) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, world, caller, real) for v in value]
    if value == "{messages}":
        return _fill(_messages(), world, caller, real)
    if not isinstance(value, str):
        return value
    if not real:
        for name in ("{own}", "{fresh}", "{key}", "{fresh_task}", "{task}", "{fresh_wait}",
                     "{wait}"):
            value = value.replace(name, PLACEHOLDER_ID)
        value = value.replace("{node2}", "no-such-node").replace("{node}", "no-such-node")
    if "{own}" in value or "{fresh}" in value:
        author = caller if caller in WRITERS else "admin"
        value = value.replace("{own}", _own(world, caller, author))
        value = value.replace("{fresh}", world.create(author)["id"])
    if "{task}" in value or "{fresh_task}" in value or "{wait}" in value or "{fresh_wait}" in value:
        value = _fill_work(value, world, caller)
    if "{node}" in value or "{node2}" in value:
        first, second = _nodes(world, caller)
        value = value.replace("{node2}", second).replace("{node}", first)
    if "{key}" in value:
        with world.client("admin") as admin:
            made = admin.post("/api/v1/keys", json={"label": unique_text("k")[:100]})
        value = value.replace("{key}", made.json()["key"]["id"])
    value = value.replace("{slug}", f"imported-{uuid.uuid4().hex[:12]}")
    value = value.replace("{domain}", "no-such-domain")
    return value.replace("{text}", unique_text()[:100])


_OWN: dict[tuple[int, str], str] = {}


def _author(caller: str) -> str:
    return caller if caller in WRITERS else "admin"


def _new_task(world: World, caller: str) -> str:
    with world.client(_author(caller)) as client:
        made = client.post("/api/v1/tasks", json={"name": unique_text("task")[:100],
                                                    "plan": ["first", "second"]})
    assert made.status_code == 201, made.text
    return made.json()["task"]["id"]


def _new_wait(world: World, caller: str) -> str:
    with world.client(_author(caller)) as client:
        made = client.post("/api/v1/waits", json=WAIT_ARGS)
    assert made.status_code == 202, made.text
    return made.json()["id"]


def _fill_work(value: str, world: World, caller: str) -> str:
    """Tasks and waits in the caller's view: one kept per caller, or a new one."""
    for name, make in (("task", _new_task), ("wait", _new_wait)):
        if "{fresh_%s}" % name in value:
            value = value.replace("{fresh_%s}" % name, make(world, caller))
        if "{%s}" % name in value:
            key = (id(world), f"{caller}:{name}")
            if key not in _OWN:
                _OWN[key] = make(world, caller)
            value = value.replace("{%s}" % name, _OWN[key])
    return value


def _nodes(world: World, caller: str) -> tuple[str, str]:
    """Two nodes, kept per caller, in the graph the caller writes to by default (its bound
    project, else the user graph)."""
    key = (id(world), f"{caller}:nodes")
    if key not in _OWN:
        with world.client(_author(caller)) as client:
            made = client.post("/api/v1/graph/write", json={"nodes": [
                {"name": unique_text("node")[:60]}, {"name": unique_text("node")[:60]}]})
        assert made.status_code == 200, made.text
        _OWN[key] = ",".join(made.json()["created"])
    first, second = _OWN[key].split(",")
    return first, second


def _own(world: World, caller: str, author: str) -> str:
    """One memory per caller and world, in the caller's view."""
    key = (id(world), caller)
    if key not in _OWN:
        _OWN[key] = world.create(author)["id"]
    return _OWN[key]


def test_the_matrix_covers_every_route_and_tool():
    routes = {f"{b.method} {b.path}" for b in BINDINGS}
    covered = {c.target.replace("{own}", "{id}").replace("{fresh}", "{id}") for c in REST_CASES}
    covered = {t.replace("/api/v1/keys/{key}", "/api/v1/keys/{id}") for t in covered}
    for name in ("{fresh_task}", "{task}", "{fresh_wait}", "{wait}", "{node}", "{domain}"):
        covered = {t.replace(name, "{id}") for t in covered}
    assert routes == covered
    assert {c.target.removeprefix("tool:") for c in TOOL_CASES} == set(tool_operations())


@pytest.mark.parametrize("caller", CALLERS)
def test_every_route_answers_each_caller_as_expected(world: World, caller: str):
    wrong = []
    for case in REST_CASES:
        method, path = case.target.split(" ", 1)
        want = expected(caller, case)
        path = _fill(path, world, caller, want < 300)
        args = _fill(case.args, world, caller, want < 300)
        with world.client(caller) as client:
            if method in ("GET", "DELETE"):
                response = client.request(method, path, params=args)
            else:
                response = client.request(method, path, json=args)
        body = response.json()
        code = body.get("code") if isinstance(body, dict) else None
        want_code = {401: "unauthorized", 403: "forbidden"}.get(want)
        if response.status_code != want or (want_code and code != want_code):
            wrong.append(f"{case.name}: {response.status_code} (want {want}) {response.text[:200]}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("caller", [c for c in CALLERS if c not in UNAUTHENTICATED])
def test_every_tool_answers_each_caller_as_expected(world: World, caller: str):
    calls = [
        (c.target.removeprefix("tool:"), _fill(c.args, world, caller, expected(caller, c) < 300))
        for c in TOOL_CASES
    ]
    statuses, results, error = world.mcp(caller, calls)
    assert error is None, repr(error)
    assert statuses and set(statuses) == {200}
    wrong = []
    for case, result in zip(TOOL_CASES, results):
        want = expected(caller, case)
        text = result.content[0].text if result.content else ""
        if want == 403:
            denied = result.is_error and (
                "needs the" in text or "not available to a key bound" in text
            )
            if not denied:
                wrong.append(f"{case.name}: not refused: {text[:200]}")
        elif result.is_error or not result.structured_content:
            wrong.append(f"{case.name}: failed: {text[:200]}")
        else:
            json.dumps(result.structured_content)  # structured, serialisable
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("caller", UNAUTHENTICATED)
def test_mcp_without_a_usable_key_is_refused_with_401(world: World, caller: str):
    statuses, results, error = world.mcp(caller, [("search", {"query": "x"})])
    assert error is not None and results == []
    assert statuses and set(statuses) == {401}, statuses
    with world.client(caller) as client:
        raw = client.post(
            "/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"Accept": "application/json, text/event-stream"},
        )
    assert raw.status_code == 401 and raw.headers["www-authenticate"] == "Bearer"
    assert ("revoked" in raw.json()["error"]) == (caller == "revoked")


def test_denied_writes_store_nothing(world: World):
    """The 401 and 403 cells of write routes changed nothing (counted by the engine)."""
    engine = world.server.engine
    writes = [
        (*case.target.split(" ", 1), _fill(case.args, world, "admin"))
        for case in REST_CASES
        if case.scope != "read" and "{" not in case.target
    ]
    before = engine.store.count()
    for caller in ("none", "bad", "revoked", "reader"):
        with world.client(caller) as client:
            for method, path, args in writes:
                assert client.request(method, path, json=args).status_code in (401, 403)
    assert engine.store.count() == before
