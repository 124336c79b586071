"""Isolation of bound keys through indirect channels, on both backends: what another caller's
write does to the memories a bound key sees, the names domain errors give, and the paths
spreading activation takes. The world (keys, foreign memories) is security_world.py's."""

from __future__ import annotations

from typing import Iterator

import pytest
from security_world import World, world_fixture


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def world(request, shared_embedder, tmp_path_factory) -> Iterator[World]:
    yield from world_fixture(request, shared_embedder, tmp_path_factory)


def _search(world: World, caller: str, query: str, **extra) -> dict:
    with world.client(caller) as client:
        response = client.post("/api/v1/search", json={"query": query, **extra})
    assert response.status_code == 200, response.text
    return response.json()


# --- smart ingest by an unbound writer --------------------------------------------------------
@pytest.mark.parametrize("order", ["bot-first", "bot2-first"])
def test_an_unbound_writers_merge_does_not_fold_one_agents_memory_into_anothers(world, order):
    """Near-duplicates of bot-1 and bot-2 (both in the user scope) met by an unbound writer's
    smart ingest: neither agent's text ends up in a memory the other reads, and neither
    memory is superseded by one its agent cannot see (whichever is the closest)."""
    n = 1 if order == "bot-first" else 2
    texts = {"bot": f"The kiln in the pottery shed {n} is fired every second Friday (ref zqk{n}1)",
             "bot2": f"The kiln in the pottery shed {n} gets fired every second Friday "
                     f"(ref zqk{n}2)"}
    authors = ["bot", "bot2"] if order == "bot-first" else ["bot2", "bot"]
    made = {caller: world.create(caller, texts[caller]) for caller in authors}
    with world.client("writer") as client:
        response = client.post("/api/v1/ingest", json={
            "content": f"The kiln in the pottery shed {n} is fired every 2nd Friday"})
    assert response.status_code == 200, response.text
    for caller, other in (("bot", "bot2"), ("bot2", "bot")):
        marker = f"zqk{n}{1 if other == 'bot' else 2}"
        with world.client(caller) as client:
            listed = client.get("/api/v1/memories", params={"limit": 1000,
                                                           "include_superseded": True})
            found = client.post("/api/v1/search", json={"query": texts[other].split(" (ref")[0],
                                                       "limit": 50,
                                                       "detail_level": "full"})
        assert listed.status_code == 200 and found.status_code == 200
        assert marker not in listed.text and marker not in found.text, (caller, marker)
        mine = world.memory(made[caller]["id"])
        assert mine.superseded_by is None or \
            world.memory(mine.superseded_by).agent_id == mine.agent_id


# --- spreading activation ----------------------------------------------------------------------
def test_associations_do_not_walk_through_memories_the_key_cannot_see(world: World):
    """bot-1's memories A and B are linked only through bot-2's memory F (as an unbound
    writer's session or similarity edges link them): a search by bot-1 that finds A does not
    bring B along, as exploring from A does not reach it; the writer, who sees F, gets B."""
    a = world.create("bot", "The greenhouse orchid misting valve opens at dawn (ref zqv1)")
    b = world.create("bot", "Invoices from the timber yard are paid by bank transfer (ref zqv2)")
    f = world.create("bot2", "The rain barrel overflow drains towards the compost (ref zqv3)")
    for text in ("Seedlings in the potting room want more light in winter",
                 "The garden hose reel hangs behind the shed door",
                 "Ferns on the north windowsill are watered on Sundays"):
        world.create("bot", text)  # bot-1's memories besides A and B, none sharing a word
    world.server.engine.link(a["id"], f["id"], "related", 1.0)
    world.server.engine.link(f["id"], b["id"], "related", 1.0)
    query = "greenhouse orchid misting valve at dawn"

    def associations(caller: str) -> set[str]:
        # Keyword mode: A is the only direct hit, so whatever else comes back came by a link.
        results = _search(world, caller, query, limit=4, mode="keyword")["results"]
        assert results[0]["id"] == a["id"] and not results[0]["association"]
        return {r["id"] for r in results if r["association"]}

    assert b["id"] in associations("writer")  # reached through F
    assert not associations("bot") & {b["id"], f["id"]}, "reached through bot-2's memory"
    with world.client("bot") as client:
        hood = client.get(f"/api/v1/memories/{a['id']}/neighbours")
    assert hood.status_code == 200 and b["id"] not in hood.text


# --- knowledge-graph files ---------------------------------------------------------------------
def test_graph_file_merge_conflicts_show_no_foreign_node(world: World, tmp_path):
    """A project's graph file mirrors every agent's nodes. When a node written by another key
    was changed both in the file (a hand edit) and in the store since the last sync, the
    sync a bound key's kg_read triggers merges it, but the conflict it reports to that key
    must not carry the node's versions (bot-1 cannot read the node)."""
    root = tmp_path / "lighthouse"
    root.mkdir()
    with world.client("writer") as writer:
        made = writer.post("/api/v1/graph/write", json={"project": str(root), "nodes": [
            {"id": "vault", "name": "Vault note", "body": "The vault code is zqf1"}]})
        assert made.status_code == 200, made.text
        scope = made.json()["scope"]
        node = next(h for h in writer.post("/api/v1/graph/search", json={
            "query": "vault note", "project": str(root)}).json()["results"] if h["id"] == "vault")
        changed = writer.patch(f"/api/v1/memories/{node['memory_id']}",
                               json={"content": "Vault note\nThe vault code is zqf2"})
        assert changed.status_code == 200, changed.text
    graph_file = root / ".knowledge" / "graph.json"
    graph_file.write_text(graph_file.read_text().replace("zqf1", "zqf3"))
    with world.client("bot") as bot:  # by name: the file the store mirrors is synced
        core = bot.get("/api/v1/graph/core", params={"project": scope})
    assert core.status_code == 200, core.text
    assert scope in core.text
    assert not any(m in core.text for m in ("zqf1", "zqf2", "zqf3")), core.text


def test_a_bound_key_cannot_have_a_project_graph_written_where_it_says(world: World, tmp_path):
    """Naming a directory as a project root has memoryd write the project's file (every
    agent's nodes) there: a key bound to an agent or scope may not (403 whether the directory
    exists or not), and nothing is written."""
    chosen = tmp_path / "lighthouse"
    chosen.mkdir()
    for caller in ("bot", "scoped"):
        with world.client(caller) as client:
            for path in (chosen, tmp_path / "missing" / "lighthouse"):
                read = client.get("/api/v1/graph/core", params={"project": str(path)})
                wrote = client.post("/api/v1/graph/write", json={
                    "project": str(path), "nodes": [{"name": "Bound note"}]})
                assert read.status_code == wrote.status_code == 403, (caller, read.text)
                assert "MEMORYD_KG_ALLOWED_ROOTS" in read.json()["error"]
    assert not (chosen / ".knowledge").exists()


# --- consolidation (last: it changes the whole store) -----------------------------------------
def test_consolidation_merges_and_links_within_one_agent(world: World):
    """Copies of one fact written without an agent label (by the writer) and by bot-1 and
    bot-2: consolidation folds copies of the same scope and agent only, so neither bot's
    memory ends up superseded by (and pointing to) a memory outside its view, and links
    none of them to another agent's."""
    fact = "The lighthouse lens is polished with chamois leather every third Tuesday morning"
    made = {caller: world.create(caller, fact) for caller in ("writer", "bot", "bot2")}
    with world.client("writer") as client:
        response = client.post("/api/v1/consolidate", json={})
    assert response.status_code == 200, response.text
    for caller in ("bot", "bot2"):
        mine = world.memory(made[caller]["id"])
        assert mine.superseded_by is None, (caller, response.text)
        with world.client(caller) as client:
            listed = client.get("/api/v1/memories", params={"limit": 1000}).text
        assert made[caller]["id"] in listed
        edges = world.server.engine.store.edges_of([mine.id])
        others = {e.target_id if e.source_id == mine.id else e.source_id for e in edges}
        assert all(world.memory(o).agent_id == mine.agent_id for o in others), caller


# --- task memory --------------------------------------------------------------------------------
def test_completing_another_agents_task_writes_no_memory_in_its_name(world: World):
    """bot-2 registers a task in project:x; the key bound to project:x sees it and may complete
    it, but the memory of the task it leaves is not written as bot-2 (who has a key of its
    own: only that key writes in its name), so it does not land in bot-2's view as bot-2's."""
    with world.client("bot2") as bot2:
        task = bot2.post("/api/v1/tasks", json={"name": "Rotate the harbour keys",
                                                "scope": "project:x"})
        assert task.status_code == 201, task.text
    task_id = task.json()["task"]["id"]
    with world.client("scoped") as scoped:
        done = scoped.post(f"/api/v1/tasks/{task_id}/complete", json={
            "outcome": "Rotated; bot two must now trust the key at zqt404"})
        assert done.status_code == 200, done.text
    memory_id = done.json()["task"]["memory_id"]
    assert world.memory(memory_id).agent_id != "bot-2"
    with world.client("bot2") as bot2:
        listed = bot2.get("/api/v1/memories", params={"limit": 1000})
    assert listed.status_code == 200 and "zqt404" not in listed.text


def test_a_link_to_a_foreign_node_does_not_name_it_to_the_bound_key(world: World):
    """An unbound writer links bot-1's user-graph node to bot-2's (the writer sees both): the
    edge's record on bot-1's node, in bot-1's change feed and history, must not carry the id
    of bot-2's node (a slug of its name)."""
    with world.client("bot") as bot:
        (kettle,) = bot.post("/api/v1/graph/write", json={"graph": "user", "nodes": [
            {"name": "Kettle descaling", "body": "Monthly"}]}).json()["created"]
    with world.client("bot2") as bot2:
        (lawyer,) = bot2.post("/api/v1/graph/write", json={"graph": "user", "nodes": [
            {"name": "Zqn divorce lawyer", "body": "Call Tuesday"}]}).json()["created"]
    with world.client("writer") as writer:
        linked = writer.post("/api/v1/graph/link", json={
            "graph": "user", "source": kettle, "target": lawyer})
        assert linked.status_code == 200, linked.text
    with world.client("bot") as bot:
        feed = bot.get("/api/v1/graph/changes", params={"since": 0, "limit": 1000})
        node = bot.post("/api/v1/graph/search", json={"query": "kettle descaling",
                                                      "graph": "user"}).json()["results"][0]
        history = bot.get(f"/api/v1/memories/{node['memory_id']}/history")
    assert feed.status_code == 200 and history.status_code == 200
    assert "zqn" not in feed.text, feed.text
    assert "zqn" not in history.text, history.text
