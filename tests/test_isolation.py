"""Isolation of bound keys through every face, on both backends: a key bound to ``project:x``
(``scoped``) or to agent ``bot-1`` (``bot``) never sees, and never changes, a memory outside
its view, whatever route or MCP tool it uses; its writes are stamped with its binding.

The foreign memories (another agent's, another project's, another agent's codebase decision
and intention) are seeded by security_world.py. The engine applies the bindings (Access), so
the smart-ingest gate never chooses a neighbour outside the caller's view either.
"""

from __future__ import annotations

from datetime import datetime, timezone

import json
from typing import Any, Iterator

import pytest
from security_world import (
    FOREIGN_AGENT,
    MARKERS,
    World,
    unique_text,
    without_marker,
    world_fixture,
)



@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def world(request, shared_embedder, tmp_path_factory) -> Iterator[World]:
    yield from world_fixture(request, shared_embedder, tmp_path_factory)


def visible_to(caller: str, memory: dict[str, Any]) -> bool:
    if caller == "scoped":
        return memory["scope"] == "project:x"
    return memory.get("agent_id") == "bot-1"


def foreign_of(world: World, caller: str) -> list[Any]:
    """The foreign memories as stored now (contents may have been changed by a hole)."""
    out = []
    for key in ("agent", "scope", "codebase"):
        seed = world.foreign[key]
        if not visible_to(caller, seed):
            out.append(world.memory(seed["id"]))
    return out


def leaks(world: World, caller: str, text: str, *, ids: bool = True) -> list[str]:
    """Foreign ids (unless the caller sent them) or foreign markers in a response."""
    found = []
    for key in ("agent", "scope", "codebase"):
        seed = world.foreign[key]
        if visible_to(caller, seed):
            continue
        if ids and seed["id"] in text:
            found.append(f"the id of the {key} memory")
        if MARKERS[key] in text:
            found.append(f"the content of the {key} memory")
    if MARKERS["intention"] in text:  # bot-2's, in the user scope: foreign to both
        found.append("another agent's intention")
    return found


CALLERS = ["scoped", "bot"]


# --- reads ----------------------------------------------------------------------------------
def _read_requests() -> list[tuple[str, str, dict[str, Any] | None]]:
    queries = [
        without_marker(FOREIGN_AGENT),
        "Project Y nightly artifacts vermilion bucket",
        "walrus operator",
        "cobalt release credentials",
    ]
    out: list[tuple[str, str, dict[str, Any] | None]] = []
    for q in queries:
        for mode in ("hybrid", "keyword", "vector"):
            out.append(("POST", "/api/v1/search", {"query": q, "mode": mode, "limit": 50,
                                                  "detail_level": "full"}))
        out.append(("POST", "/search", {"query": q, "limit": 50}))
        out.append(("POST", "/recall", {"prompt": q, "max_items": 20}))
        out.append(("POST", "/api/v1/recall", {"prompt": q}))
    out += [
        ("GET", "/api/v1/memories", {"limit": 1000}),
        ("GET", "/api/v1/memories", {"limit": 1000, "include_superseded": True}),
        ("GET", "/api/v1/memories", {"limit": 1000, "tags": ["cobalt", "vermilion"]}),
        ("POST", "/intention", {"action": "list", "status": "all"}),
        ("POST", "/intention", {"action": "check", "context": {"codebase": "x"}}),
        ("POST", "/session/warm", {"session_key": "iso"}),
        ("GET", "/api/v1/changes", {"since": 0, "limit": 1000}),
        ("GET", "/api/v1/timeline", {"days": 3, "day": _today()}),
        ("GET", "/api/v1/overview", None),
        ("GET", "/api/v1/graph/memories", {"limit": 5000, "include_superseded": True}),
        ("GET", "/api/v1/graph/view", None),
        ("GET", "/api/v1/graph/list", None),
    ]
    return out


def _today() -> str:
    return datetime.now(timezone.utc).date().isoformat()


@pytest.mark.parametrize("caller", CALLERS)
def test_no_read_route_returns_a_foreign_memory(world: World, caller: str):
    found = []
    with world.client(caller) as client:
        for method, path, args in _read_requests():
            if method == "GET":
                response = client.get(path, params=args)
            else:
                response = client.request(method, path, json=args)
            assert response.status_code == 200, (path, args, response.text)
            found += [f"{path} {args}: {leak}" for leak in leaks(world, caller, response.text)]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("caller", CALLERS)
def test_no_tool_returns_a_foreign_memory(world: World, caller: str):
    calls = [
        ("search", {"query": without_marker(FOREIGN_AGENT), "limit": 50, "detail_level": "full"}),
        ("search", {"query": "Project Y nightly artifacts", "mode": "keyword"}),
        ("recall", {"prompt": without_marker(FOREIGN_AGENT), "max_items": 20}),
        ("memory_recall", {"query": without_marker(FOREIGN_AGENT), "limit": 50}),
        ("intention", {"action": "list", "status": "all"}),
        ("intention", {"action": "check", "context": {"codebase": "x"}}),
    ]
    statuses, results, error = world.mcp(caller, calls)
    assert error is None, repr(error)
    found = []
    for (name, _), result in zip(calls, results):
        assert not result.is_error, (name, result.content)
        text = result.content[0].text + json.dumps(result.structured_content)
        found += [f"{name}: {leak}" for leak in leaks(world, caller, text)]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("caller", [pytest.param(c) for c in CALLERS])
def test_codebase_context_shows_no_foreign_memory_or_intention(world: World, caller: str):
    """get_context lists the intentions due for a codebase; bot-2's (user scope) must not
    reach a key bound to project:x or to bot-1 (they are filtered for the intention tool)."""
    args = {"action": "get_context", "codebase": "x", "limit": 200}
    with world.client(caller) as client:
        response = client.post("/codebase", json=args)
    _, (tool,), error = world.mcp(caller, [("codebase", args)])
    assert response.status_code == 200 and error is None and not tool.is_error
    assert not leaks(world, caller, response.text)
    assert not leaks(world, caller, tool.content[0].text + json.dumps(tool.structured_content))


@pytest.mark.parametrize("caller", CALLERS)
def test_a_key_cannot_ask_for_another_view(world: World, caller: str):
    other = {"scoped": {"scope": "project:y"}, "bot": {"agent_id": "bot-2"}}[caller]
    with world.client(caller) as client:
        for method, path, body in (
            ("POST", "/search", {"query": "release", **other}),
            ("POST", "/api/v1/search", {"query": "release", **other}),
            ("GET", "/api/v1/memories", other),
        ):
            if method == "GET":
                response = client.get(path, params=body)
            else:
                response = client.post(path, json=body)
            assert response.status_code == 403, (path, response.text)


# --- writes on foreign ids ------------------------------------------------------------------
FOREIGN_WRITES: list[tuple[str, str, dict[str, Any] | None]] = [
    ("POST", "/promote", {"id": "{id}"}),
    ("POST", "/demote", {"id": "{id}"}),
    ("POST", "/memory", {"action": "get", "id": "{id}"}),
    ("POST", "/memory", {"action": "state", "id": "{id}"}),
    ("POST", "/memory", {"action": "history", "id": "{id}"}),
    ("POST", "/memory", {"action": "versions", "id": "{id}"}),
    ("POST", "/memory", {"action": "promote", "id": "{id}"}),
    ("POST", "/memory", {"action": "demote", "id": "{id}"}),
    ("POST", "/memory", {"action": "edit", "id": "{id}", "content": "hijacked"}),
    ("POST", "/memory", {"action": "delete", "id": "{id}"}),
    ("GET", "/api/v1/memories/{id}", None),
    ("GET", "/api/v1/memories/{id}/history", None),
    ("GET", "/api/v1/memories/{id}/neighbours", None),
    ("PATCH", "/api/v1/memories/{id}", {"content": "hijacked", "tags": ["x"]}),
    ("DELETE", "/api/v1/memories/{id}", None),
    ("POST", "/api/v1/memories/{id}/promote", None),
    ("POST", "/api/v1/memories/{id}/demote", None),
]


def _with_id(value: Any, memory_id: str) -> Any:
    if isinstance(value, dict):
        return {k: _with_id(v, memory_id) for k, v in value.items()}
    return value.replace("{id}", memory_id) if isinstance(value, str) else value


@pytest.mark.parametrize("caller", CALLERS)
def test_foreign_ids_are_not_found_and_not_changed(world: World, caller: str):
    wrong = []
    with world.client(caller) as client:
        for memory in foreign_of(world, caller):
            before = world.fingerprint(memory.id)
            for method, path, body in FOREIGN_WRITES:
                response = client.request(
                    method, _with_id(path, memory.id), json=_with_id(body, memory.id)
                )
                if response.status_code != 404 or response.json()["code"] != "not_found":
                    wrong.append(f"{method} {path}: {response.status_code} {response.text[:120]}")
                wrong += [
                    f"{method} {path}: {x}"
                    for x in leaks(world, caller, response.text, ids=False)
                ]
            if world.fingerprint(memory.id) != before:
                wrong.append(f"{memory.content[:40]!r} was changed")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("caller", CALLERS)
def test_foreign_ids_through_the_memory_and_explore_tools(world: World, caller: str):
    foreign = foreign_of(world, caller)
    before = {m.id: world.fingerprint(m.id) for m in foreign}
    calls = []
    for memory in foreign:
        calls += [
            ("memory", {"action": action, "id": memory.id, "reason": "r"})
            for action in ("get", "state", "history", "versions", "promote", "demote", "delete")
        ]
        calls.append(("memory", {"action": "edit", "id": memory.id, "tags": ["hijacked"]}))
        calls.append(("explore", {"id": memory.id}))
    _, results, error = world.mcp(caller, calls)
    assert error is None, repr(error)
    for (name, args), result in zip(calls, results):
        assert result.is_error and "no memory with id" in result.content[0].text, (name, args)
    assert {m.id: world.fingerprint(m.id) for m in foreign} == before


def test_another_agents_intention_cannot_be_updated(world: World):
    intention = world.foreign["intention"]
    with world.client("bot") as bot:
        response = bot.post(
            "/intention", json={"action": "update", "id": intention["id"], "status": "cancel"}
        )
    assert response.status_code == 404 and "no intention" in response.json()["error"]
    with world.client("bot2") as owner:
        listed = owner.post("/intention", json={"action": "list", "status": "all"}).json()
    (same,) = [i for i in listed["data"]["intentions"] if i["id"] == intention["id"]]
    assert same["status"] == intention["status"]


# --- neighbours through edges ---------------------------------------------------------------
@pytest.mark.parametrize("caller", CALLERS)
def test_links_to_foreign_memories_are_not_followed(world: World, caller: str):
    """A memory of the caller's that is close to a foreign one gets linked to it on write;
    explore, and the associations recall adds, must still not show the foreign one."""
    own = world.create(caller, without_marker(FOREIGN_AGENT) + " at dawn")
    with world.client(caller) as client:
        hood = client.get(f"/api/v1/memories/{own['id']}/neighbours", params={"depth": 3})
        recall = client.post("/recall", json={"prompt": "cobalt release train", "max_items": 20})
    _, (explored,), error = world.mcp(caller, [("explore", {"id": own["id"], "depth": 3})])
    assert error is None and not explored.is_error
    texts = [hood.text, recall.text, explored.content[0].text]
    assert hood.status_code == recall.status_code == 200
    assert not [leak for text in texts for leak in leaks(world, caller, text)]


# --- writes are stamped with the binding ----------------------------------------------------
def test_writes_carry_the_binding(world: World):
    scoped = world.create("scoped")
    assert scoped["scope"] == "project:x"
    bot = world.create("bot")
    assert bot["agent_id"] == "bot-1" and bot["scope"] == "user"
    with world.client("bot") as client:  # bot-1 is no writer of project z (test_write_scopes)
        planted = client.post("/api/v1/memories", json={"content": "x", "scope": "project:z"})
        assert planted.status_code == 403
    with world.client("scoped") as client:
        refused = client.post("/api/v1/memories", json={"content": "x", "scope": "project:y"})
        assert refused.status_code == 403
    with world.client("bot") as client:
        posing = client.post("/api/v1/memories", json={"content": "x"},
                             headers={"X-Agent-Id": "bot-2"})
        assert posing.status_code == 403
        capture = client.post("/capture", json={"messages": [], "session_key": "s",
                                                "agent_id": "bot-2"})
        assert capture.status_code == 403
    _, (stored,), error = world.mcp("bot", [("memory_store", {"summary": unique_text()})])
    assert error is None and not stored.is_error
    assert world.memory(stored.structured_content["memory_id"]).agent_id == "bot-1"


def test_an_unbound_keys_agent_header_labels_writes_and_does_not_narrow_reads(world: World):
    labelled = world.create("labeller")
    assert labelled["agent_id"] == "helper-agent"
    history = world.server.engine.history(labelled["id"])
    assert history[0].actor == "key:writer" and history[0].agent_id == "helper-agent"
    bots = world.create("bot", "The labeller check finds the heron in the reeds")
    with world.client("labeller") as client:
        hits = client.post("/api/v1/search", json={"query": "heron in the reeds"}).json()
    assert bots["id"] in [h["id"] for h in hits["results"]]


def test_an_unbound_key_cannot_label_writes_as_an_agent_that_has_its_own_key(world: World):
    """bot-2 has a key of its own: a writer naming it would forge bot-2's writes."""
    with world.client("writer") as client:
        forged = client.post("/api/v1/memories", json={"content": unique_text()},
                             headers={"X-Agent-Id": "bot-2"})
    assert forged.status_code == 403
    assert "bot-2" in forged.json()["error"]


# --- smart ingest near foreign memories ------------------------------------------------------
# One distinct fact per case, so that no case's memories are near another's: (text, a word,
# the word that contradicts it).
FACTS = [
    ("The billing service retries failed invoices three times", "three", "five"),
    ("Alice's laptop runs Arch Linux with the i3 window manager", "i3", "sway"),
    ("The greenhouse sprinklers switch on at six every morning", "six", "seven"),
    ("Our choir rehearses the Brahms requiem in the old chapel", "chapel", "gymnasium"),
    ("The payroll export is written as CSV to the finance share", "CSV", "JSON"),
    ("The cat is fed salmon pate from the blue tin at noon", "blue", "green"),
    ("The telescope mirror was recoated with aluminium in March", "March", "October"),
    ("Grandpa's sourdough starter is fed with rye flour on Sundays", "rye", "spelt"),
    ("The robotics club meets in room 214 on Wednesday evenings", "214", "118"),
    ("The ferry to the island leaves from pier four at dawn", "four", "nine"),
    ("The bakery orders oat milk from the Hillside dairy", "Hillside", "Riverbend"),
    ("The tennis ladder is kept on a shared spreadsheet by Priya", "Priya", "Tomas"),
    ("The aquarium heater keeps the tank at 26 degrees", "26", "24"),
    ("The band tunes half a step down for the encore", "half", "a whole"),
]
UPDATE_TAIL = " and every change is also noted in the shared logbook afterwards"


def _variant(fact: tuple[str, str, str], variant: str) -> str:
    text, old, new = fact
    return {
        "reinforce": text,
        "update": text + UPDATE_TAIL,
        "supersede": text.replace(old, new),
    }[variant]


def _near_cases() -> list[Any]:
    cases = [("/smart_ingest", variant) for variant in ("reinforce", "update", "supersede")]
    cases += [
        (p, "reinforce") for p in ("/ingest", "/capture", "mcp smart_ingest", "mcp memory_store")
    ]
    out = []
    for n, (caller, (path, variant)) in enumerate(
        (c, case) for c in CALLERS for case in cases
    ):
        marks: list[Any] = []
        out.append(
            pytest.param(caller, path, variant, n, marks=marks, id=f"{caller}-{path}-{variant}")
        )
    return out


def _ingest(world: World, caller: str, path: str, text: str) -> tuple[str, list[str]]:
    """Send ``text`` through one write path; return the response text and the new ids."""
    if path.startswith("mcp "):
        tool = path.removeprefix("mcp ")
        args = {"content": text} if tool == "smart_ingest" else {"summary": text}
        _, (result,), error = world.mcp(caller, [(tool, args)])
        assert error is None and not result.is_error, result.content
        data = result.structured_content
        return result.content[0].text + json.dumps(data), [r["memory_id"] for r in data["results"]]
    with world.client(caller) as client:
        if path == "/capture":
            body: dict[str, Any] = {
                "messages": [{"role": "user", "content": f"Remember that {text}."}],
                "session_key": unique_text("s"),
            }
        elif path == "/ingest":
            body = {"items": [{"content": text}]}
        else:
            body = {"content": text}
        response = client.post(path, json=body)
    assert response.status_code == 200, response.text
    data = response.json()
    results = data["stored"] if path == "/capture" else data["data"]["results"]
    return response.text, [r["memory_id"] for r in results]


@pytest.mark.parametrize(("caller", "path", "variant", "n"), _near_cases())
def test_a_near_duplicate_of_a_foreign_memory_does_not_touch_it(world, caller, path, variant, n):
    marker = f"zqn{n:04d}"
    foreign = world.create("bot2", f"{FACTS[n][0]} (ref {marker})")
    before = world.fingerprint(foreign["id"])
    text, new_ids = _ingest(world, caller, path, _variant(FACTS[n], variant))
    assert new_ids and foreign["id"] not in new_ids
    assert world.fingerprint(foreign["id"]) == before
    assert foreign["id"] not in text and marker not in text
    for memory_id in new_ids:
        assert visible_to(caller, world.memory(memory_id).model_dump())


@pytest.mark.parametrize(
    ("caller", "topic"),
    [
        pytest.param("scoped", "lighthouse generator"),
        pytest.param("bot", "harbour crane"),
    ],
)
def test_near_duplicates_of_foreign_memories_are_not_merged(world: World, caller, topic):
    twins = [
        world.create("bot2", f"The {topic} is serviced every second Monday (ref zqm1)"),
        world.create("bot2", f"The {topic} gets serviced every second Monday (ref zqm2)"),
    ]
    before = [world.fingerprint(t["id"]) for t in twins]
    text, new_ids = _ingest(
        world, caller, "/smart_ingest", f"The {topic} is serviced every 2nd Monday"
    )
    assert not {t["id"] for t in twins} & set(new_ids)
    assert [world.fingerprint(t["id"]) for t in twins] == before
    assert not any(t["id"] in text for t in twins) and "(ref zqm" not in text


# --- knowledge graphs -----------------------------------------------------------------------
GRAPH_MARKERS = {"bot2": "zqg8813", "yonly": "zqp9924"}


def _foreign_nodes(world: World) -> dict[str, str]:
    """A user-graph node of bot-2's and a project:y node, each holding a marker."""
    made = {}
    for author, marker in GRAPH_MARKERS.items():
        with world.client(author) as client:
            response = client.post("/api/v1/graph/write", json={"nodes": [{
                "name": f"Cobalt graph note of {author}",
                "body": f"The release credentials rotate monthly ({marker})"}]})
        assert response.status_code == 200, response.text
        written = response.json()  # created by the first test, unchanged after
        (made[author],) = written["created"] + written["unchanged"]
    return made


@pytest.mark.parametrize("caller", CALLERS)
def test_graph_reads_and_writes_stay_inside_the_view(world: World, caller: str):
    """Neither bound key sees another agent's user-graph node or another project's node
    through the core, search, the change feed, export or ping, nor changes them by id."""
    nodes = _foreign_nodes(world)
    texts = []
    with world.client(caller) as client:
        for method, path, args in [
            ("GET", "/api/v1/graph/core", None),
            ("POST", "/api/v1/graph/search", {"query": "cobalt graph note credentials"}),
            ("GET", "/api/v1/graph/changes", {"since": 0, "limit": 1000}),
            ("GET", "/api/v1/graph/export", None),
            ("GET", "/api/v1/graph/ping", None),
            ("POST", "/api/v1/search", {"query": "cobalt graph note", "limit": 50}),
        ]:
            response = client.request(method, path, params=args if method == "GET" else None,
                                      json=args if method == "POST" else None)
            assert response.status_code == 200, (path, response.text)
            texts.append(response.text)
        for node in nodes.values():
            for path, body in [
                (f"/api/v1/graph/nodes/{node}/recall", {}),
                ("/api/v1/graph/write", {"nodes": [{"id": node, "body": "hijacked"}]}),
                ("/api/v1/graph/link", {"source": node, "target": node, "type": "relates_to"}),
            ]:
                response = client.post(path, json=body)
                assert response.status_code in (403, 404, 422), (path, response.text)
                texts.append(response.text)
    _, results, error = world.mcp(caller, [
        ("kg_read", {}), ("kg_search", {"query": "cobalt graph note credentials"}),
        ("kg_sync", {}), ("kg_ping", {}),
        *[("kg_recall", {"id": node}) for node in nodes.values()]])
    assert error is None, repr(error)
    texts += [r.content[0].text + json.dumps(r.structured_content) for r in results]
    leaked = [m for m in GRAPH_MARKERS.values() for text in texts if m in text]
    assert not leaked, leaked
    with world.client("admin") as admin:  # the foreign nodes are there, unchanged
        for author, marker in GRAPH_MARKERS.items():
            exported = admin.get("/api/v1/graph/export",
                                 params={"project": "y"} if author == "yonly" else None)
            assert exported.status_code == 200 and marker in exported.text
            assert "hijacked" not in exported.text
