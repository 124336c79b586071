"""Tasks and smart waits through the real faces: REST and MCP (Streamable HTTP, the SDK's
client) on a real uvicorn server whose lifespan runs the host's waits. Waits resolve when
another process appends to a real file; bound keys see only their own waits and tasks; bad
input is refused with nothing started; the wake POST reaches a local gateway."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Iterator

import httpx2
import pytest
from api_fixtures import STANDARD_KEYS, LiveServer, clean_env, start_server
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from test_waits_file import append_later
from waits_fixtures import LocalServer, json_answer, wait_until

WAIT_TOOLS = {"smart_wait", "wait_status", "wait_list", "wait_cancel"}
TASK_TOOLS = {"task_register", "task_update", "task_get", "task_list", "task_complete"}


@pytest.fixture(scope="module")
def gateway() -> Iterator[LocalServer]:
    server = LocalServer(lambda m, p, b: json_answer(200, {"ok": True}))
    yield server
    server.close()


@pytest.fixture(scope="module")
def live(shared_embedder, tmp_path_factory, gateway) -> Iterator[LiveServer]:
    base = tmp_path_factory.mktemp("waits-live")
    with pytest.MonkeyPatch.context() as mp:
        clean_env(mp, base)
        # Not under the home (the server's data directory): memoryd's own files are never
        # watched.
        watched = tmp_path_factory.mktemp("waits-watched")
        server = start_server(base, shared_embedder, key_specs=STANDARD_KEYS,
                              wait_allowed_roots=[str(watched)], wait_runner="faces-host",
                              mcp_tools="memory,tasks",
                              wake_openclaw_url=gateway.url, wake_openclaw_token="gw-token")
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture
def log(live: LiveServer, request) -> Path:
    path = Path(live.settings.wait_allowed_roots[0]) / f"{request.node.name[:40]}.log"
    path.write_text("")
    return path


def _mcp(server: LiveServer, key: str, calls: list[tuple[str, dict[str, Any]]]):
    async def go():
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {server.keys[key]}"},
                                  timeout=120)
        async with Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as c:
            names = {t.name for t in (await c.list_tools()).tools}
            return names, [await c.call_tool(name, args) for name, args in calls]

    return asyncio.run(go())


def test_a_wait_started_over_rest_resolves_when_the_file_is_appended(live, log) -> None:
    with live.client("writer") as http:
        started = http.post("/api/v1/waits", json={"target": f"file:{log}",
                                                    "criteria": "/DEPLOY(ED| FAILED)/",
                                                    "timeout_s": 30})
        assert started.status_code == 202, started.text
        job = started.json()
        assert job["status"] == "watching" and job["runner"] == "faces-host"
        append_later(log, ["rolling out", "DEPLOYED v2.3.1 to prod"])
        done = http.get(f"/api/v1/waits/{job['id']}", params={"block_s": 20}).json()
        assert done["status"] == "resolved" and done["result"] == "DEPLOYED v2.3.1 to prod"
        listed = http.get("/api/v1/waits", params={"status": "resolved"}).json()["waits"]
        assert job["id"] in [w["id"] for w in listed]


def test_a_wait_started_over_mcp_resolves_and_long_polls(live, log) -> None:
    names, (started,) = _mcp(live, "writer", [("smart_wait", {
        "target": f"file:{log}", "criteria": {"regex": "epoch 3/3", "ignore_case": True},
        "timeout_s": 30})])
    assert WAIT_TOOLS | TASK_TOOLS <= names
    assert not started.is_error, started.content[0].text
    job_id = started.structured_content["id"]
    assert started.content[0].text.startswith(f"[smart_wait] {job_id} watching file:")
    append_later(log, ["EPOCH 3/3 loss=0.041"])
    _, (status,) = _mcp(live, "writer", [("wait_status", {"id": job_id, "block_s": 20})])
    assert status.structured_content["status"] == "resolved"
    assert status.content[0].text.endswith('showed "EPOCH 3/3 loss=0.041"')


def test_bound_keys_see_only_their_own_waits_and_tasks(live, log) -> None:
    with live.client("alpha") as alpha, live.client("bot") as bot, live.client("writer") as w:
        job = alpha.post("/api/v1/waits", json={"target": f"file:{log}", "criteria": "x",
                                                "timeout_s": 60}).json()
        task = alpha.post("/api/v1/tasks", json={"name": "Alpha's task", "plan": ["a"]}).json()
        assert job["scope"] == "project:alpha" and task["task"]["scope"] == "project:alpha"
        for method, path in (("GET", f"/api/v1/waits/{job['id']}"),
                             ("DELETE", f"/api/v1/waits/{job['id']}"),
                             ("GET", f"/api/v1/tasks/{task['task']['id']}"),
                             ("PATCH", f"/api/v1/tasks/{task['task']['id']}"),
                             ("POST", f"/api/v1/tasks/{task['task']['id']}/complete")):
            answer = bot.request(method, path, json={"message": "mine"} if method == "PATCH"
                                 else None)
            assert answer.status_code == 404, (method, path, answer.text)
        assert job["id"] not in [x["id"] for x in bot.get("/api/v1/waits").json()["waits"]]
        assert [t["id"] for t in bot.get("/api/v1/tasks").json()["tasks"]] == []
        attach = bot.post("/api/v1/waits", json={"target": f"file:{log}", "criteria": "x",
                                                 "timeout_s": 60, "task_id": task["task"]["id"]})
        assert attach.status_code == 404  # another scope's task: not found, nothing started
        assert w.get(f"/api/v1/waits/{job['id']}").json()["status"] == "watching"
        assert alpha.delete(f"/api/v1/waits/{job['id']}").json()["status"] == "cancelled"
    _, (seen,) = _mcp(live, "bot", [("wait_status", {"id": job["id"]})])
    assert seen.is_error and "no wait job" in seen.content[0].text


@pytest.mark.parametrize("body, status, words", [
    ({"target": "gopher:x", "criteria": "OK", "timeout_s": 30}, 422, "target"),
    ({"target": "file:{log}", "criteria": "/(unclosed/", "timeout_s": 30}, 422, "regex"),
    ({"target": "file:{log}", "criteria": "OK", "timeout_s": 0}, 422, "timeout_s"),
    ({"target": "file:{log}", "criteria": "OK", "timeout_s": 9e9}, 422, "timeout_s"),
    ({"target": "file:/etc/hostname", "criteria": "OK", "timeout_s": 30}, 422, "allowed roots"),
    ({"target": "ftp://example.com/", "criteria": "OK", "timeout_s": 30}, 422, "scheme"),
    ({"target": "http://169.254.169.254/", "criteria": "OK", "timeout_s": 30}, 422, "metadata"),
    ({"target": "command:rm -rf /tmp/x", "criteria": "exit", "timeout_s": 30}, 422, "spawn"),
    ({"target": "window:Installer", "criteria": "done", "timeout_s": 30}, 422, "display"),
    ({"target": "file:{log}", "criteria": "OK", "timeout_s": 30, "wake": {"to": "webhook"}},
     422, "not configured"),
    ({"target": "file:{log}", "criteria": "OK", "timeout_s": 30, "extra": 1}, 422, "extra"),
    ({"target": "file:{log}", "criteria": "OK"}, 422, "timeout_s"),
])
def test_bad_wait_requests_are_refused_and_nothing_starts(live, log, body, status, words) -> None:
    body = json.loads(json.dumps(body).replace("{log}", str(log)))
    with live.client("admin") as admin, live.client("writer") as http:
        before = admin.get("/api/v1/waits", params={"limit": 1000}).json()["waits"]
        answer = http.post("/api/v1/waits", json=body)
        assert answer.status_code == status, answer.text
        assert words in answer.text
        after = admin.get("/api/v1/waits", params={"limit": 1000}).json()["waits"]
    assert len(after) == len(before)


def test_no_wait_watches_memoryds_own_files(live, log) -> None:
    """The store's journal holds every agent's new memories: no key may tail it, not even
    through a symlink under an allowed root."""
    home = Path(live.settings.home)
    link = log.parent / "innocent.log"
    link.symlink_to(home / "memoryd.db-wal")
    with live.client("admin") as admin:
        for target in (home / "memoryd.db", home / "memoryd.db-wal", link):
            answer = admin.post("/api/v1/waits", json={"target": f"file:{target}",
                                                        "criteria": "/./", "timeout_s": 30})
            assert answer.status_code == 422, (target, answer.text)
            assert "memoryd's own files" in answer.json()["error"]


def test_bound_keys_watch_only_files_under_configured_roots_pids_and_public_urls(
        live, log, gateway) -> None:
    def start(client, target: str, criteria: str = "x"):
        return client.post("/api/v1/waits", json={"target": target, "criteria": criteria,
                                                   "timeout_s": 30})

    with live.client("bot") as bot, live.client("writer") as writer:
        refused = {
            "tmux:main:0.0": "not available to a key bound",
            f"{gateway.url}/status": "not a public address",
            "http://10.1.2.3/": "not a public address",
        }
        for target, words in refused.items():
            answer = start(bot, target, "status:200" if target.startswith("http") else "x")
            assert answer.status_code == 422 and words in answer.text, (target, answer.text)
        mine = start(bot, f"file:{log}")
        assert mine.status_code == 202, mine.text
        assert bot.delete(f"/api/v1/waits/{mine.json()['id']}").status_code == 200
        local = start(writer, f"{gateway.url}/status", "status:200")
        assert local.status_code == 202, local.text  # unbound keys may wait on local servers
        writer.delete(f"/api/v1/waits/{local.json()['id']}")


def test_a_read_key_cannot_start_a_wait(live, log) -> None:
    with live.client("reader") as http:
        answer = http.post("/api/v1/waits", json={"target": f"file:{log}", "criteria": "x",
                                                   "timeout_s": 5})
        assert answer.status_code == 403 and "write" in answer.json()["error"]
        assert http.get("/api/v1/waits").status_code == 200


def test_the_wake_post_is_received_by_a_local_gateway(live, log, gateway) -> None:
    with live.client("writer") as http:
        job = http.post("/api/v1/waits", json={
            "target": f"file:{log}", "criteria": "BUILD OK", "timeout_s": 30,
            "wake": {"to": "openclaw", "session_key": "agent:main:faces"}}).json()
        append_later(log, ["BUILD OK in 3m"])
        request = wait_until(lambda: next((r for r in gateway.requests
                                           if job["id"].encode() in r["body"]), None), timeout=20)
        assert request["path"] == "/api/agent"
        assert request["headers"]["authorization"] == "Bearer gw-token"
        body = json.loads(request["body"])
        assert body == {"sessionKey": "agent:main:faces", "source": "system",
                        "message": body["message"]}
        assert body["message"].endswith('showed "BUILD OK in 3m"')
        recorded = wait_until(lambda: http.get(f"/api/v1/waits/{job['id']}").json()[
            "wake_attempts"])
        assert recorded[0]["ok"] is True


def test_tasks_over_rest_and_mcp(live, log) -> None:
    with live.client("writer") as http:
        made = http.post("/api/v1/tasks", json={"name": "Ship the docs site",
                                                "plan": ["build", "upload", "announce"]})
        assert made.status_code == 201
        task_id = made.json()["task"]["id"]
        step = http.patch(f"/api/v1/tasks/{task_id}", json={
            "message": "Decided to host it on the existing bucket", "step_done": 1}).json()
        assert step["progress"] == "1 of 3 steps done" and step["current_step"] == "upload"
        bad = http.patch(f"/api/v1/tasks/{task_id}", json={"step_done": 9})
        assert bad.status_code == 422 and "step_done" in bad.text
        wait = http.post("/api/v1/waits", json={"target": f"file:{log}", "criteria": "UPLOADED",
                                                "timeout_s": 30, "task_id": task_id}).json()
    _, (report, listed) = _mcp(live, "writer", [("task_get", {"id": task_id}),
                                                ("task_list", {})])
    assert "Now: upload (next: announce)" in report.content[0].text
    assert "Decided to host it on the existing bucket" in report.content[0].text
    assert report.structured_content["waits"][0]["id"] == wait["id"]
    assert task_id in listed.content[0].text
    append_later(log, ["UPLOADED 212 files"])
    with live.client("writer") as http:
        assert http.get(f"/api/v1/waits/{wait['id']}", params={"block_s": 20}).json()[
            "status"] == "resolved"
        recent = wait_until(lambda: [m for m in http.get(f"/api/v1/tasks/{task_id}").json()[
            "recent"] if m["role"] == "system" and "smart_wait" in m["content"]])
        assert recent[0]["kind"] == "progress"
    _, (ended,) = _mcp(live, "writer", [("task_complete", {
        "id": task_id, "outcome": "The docs site is live", "learned": ["upload with --delete"]})])
    assert not ended.is_error, ended.content[0].text
    memory = ended.structured_content["memory"]["memory"]
    assert memory["category"] == "task.completed" and "The docs site is live" in memory["content"]


def test_no_wait_watches_a_project_graph_file(live, log) -> None:
    """A project's graph file (<root>/.knowledge/graph.json) mirrors every agent's nodes of
    the project, including those a bound key cannot read: like the store, no key may tail
    it, its temporary files or a symlink to it."""
    root = log.parent / "graphproj"
    root.mkdir()
    with live.client("writer") as writer:
        made = writer.post("/api/v1/graph/write", json={"project": str(root), "nodes": [
            {"id": "vault", "name": "Vault note", "body": "The vault code is zqw991"}]})
        assert made.status_code == 200, made.text
    graph_file = root / ".knowledge" / "graph.json"
    assert "zqw991" in graph_file.read_text()
    link = log.parent / "graph-notes.log"
    link.symlink_to(graph_file)
    for key in ("bot", "alpha", "writer", "admin"):
        with live.client(key) as client:
            for target in (graph_file, graph_file.with_name("graph.json.x1.tmp"), link):
                answer = client.post("/api/v1/waits", json={"target": f"file:{target}",
                                                             "criteria": "/zqw/",
                                                             "timeout_s": 30})
                assert answer.status_code == 422, (key, target, answer.text)
                assert "memoryd's own files" in answer.json()["error"]


def test_a_blank_outcome_or_lesson_does_not_end_a_task(live, log) -> None:
    # 'outcome': '   ' ended the task and stored the memory 'Task "..." completed: . Learned: ;.'
    with live.client("writer") as http:
        task_id = http.post("/api/v1/tasks", json={"name": "Blank ending", "plan": ["x"]}
                            ).json()["task"]["id"]
        before = http.get("/api/v1/stats").json()["memories"]
        for body, field in (({"outcome": "   "}, "outcome"), ({"learned": ["ok", "\t "]},
                                                               "learned.1")):
            refused = http.post(f"/api/v1/tasks/{task_id}/complete", json=body)
            assert refused.status_code == 422, refused.text
            assert refused.json()["error"].startswith(f"{field}: "), refused.text
        _, (over_mcp,) = _mcp(live, "writer", [("task_complete", {"id": task_id,
                                                                  "learned": [" "]})])
        assert over_mcp.is_error and "learned.0" in over_mcp.content[0].text
        assert http.get(f"/api/v1/tasks/{task_id}").json()["task"]["status"] == "active"
        assert http.get("/api/v1/stats").json()["memories"] == before
        ended = http.post(f"/api/v1/tasks/{task_id}/complete", json={"outcome": "Done."})
        assert ended.status_code == 200 and "Done." in ended.json()["memory"]["memory"]["content"]
