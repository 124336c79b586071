"""Task memory through the engine, on real stores with the real model: plans, messages,
where a task stands, the running summary (extractive, and by a chat model behind a local
server speaking the real chat-completions protocol), bound keys, secrets, bad input, and the
memory a finished task leaves."""

from __future__ import annotations

import json

import pytest
from waits_fixtures import json_answer, local_server  # noqa: F401 - fixtures

from memoryd import Access, Actor, Forbidden, InvalidInput, SecretDetected, TaskNotFound

GH_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


@pytest.fixture
def tmem(open_mem, store_url):
    return open_mem(store_url)


def test_a_task_answers_where_it_stands(tmem) -> None:
    task = tmem.tasks.register("Release 2.0", ["freeze the branch", "build", "publish"])
    assert task.id.startswith("t_") and task.status == "active" and task.scope == "user"
    tmem.tasks.update(task.id, message="Decided to skip the beta channel this time")
    tmem.tasks.update(task.id, step_done=1)
    report = tmem.tasks.update(task.id, message="The build is blocked: CI runner out of disk")
    assert report.progress == "1 of 3 steps done"
    assert report.current_step == "build" and report.next_steps == ["publish"]
    assert [b.content for b in report.blockers] == ["The build is blocked: CI runner out of disk"]
    assert [d.content for d in report.decisions] == ["Decided to skip the beta channel this time"]
    # Moving on closes the blocker; decisions stay.
    report = tmem.tasks.update(task.id, message="Cleaned the disk, the build passes", step_done=2)
    assert report.blockers == [] and report.current_step == "publish"
    assert len(report.decisions) == 1
    kinds = [(m.role, m.kind) for m in report.recent]
    assert kinds[:2] == [("system", "progress"), ("agent", "progress")]  # newest first
    assert report.recent[0].content == "Step 2 done: build"


def test_the_summary_is_distilled_every_n_messages_and_on_demand(open_mem, store_url) -> None:
    mem = open_mem(store_url, task_summary_every=3)
    task = mem.tasks.register("Index the wiki", ["crawl", "embed"])
    mem.tasks.update(task.id, message="Crawled 120 pages")
    assert mem.tasks.get(task.id).summary is None
    mem.tasks.update(task.id, message="Chose bge-small for the embeddings", step_done=1)
    summary = mem.tasks.get(task.id).summary  # 3 messages: the agent's two and "Step 1 done"
    assert summary is not None and summary.role == "distilled"
    assert summary.metadata["via"] == "extractive"
    assert "Index the wiki (active): 1 of 2 steps done." in summary.content
    assert "Now on step 2: embed." in summary.content
    assert "Decided: Chose bge-small for the embeddings." in summary.content
    mem.tasks.update(task.id, message="Embedding is slow on CPU", kind="blocker")
    assert mem.tasks.get(task.id).summary.id == summary.id  # one new message: not due yet
    fresh = mem.tasks.get(task.id, refresh=True).summary
    assert fresh.id > summary.id and "Blocked: Embedding is slow on CPU" in fresh.content


def test_the_summary_stays_within_its_token_budget(open_mem, store_url) -> None:
    from memoryd.graph.tokens import get_counter

    mem = open_mem(store_url, task_summary_tokens=60, task_summary_every=1)
    task = mem.tasks.register("Long task", [f"step {i}" for i in range(30)])
    for i in range(12):
        mem.tasks.update(task.id, message=f"Decided option {i}: " + "detail " * 30)
    text = mem.tasks.get(task.id).summary.content
    assert get_counter().count(text) <= 60
    assert text.startswith("Long task (active): 0 of 30 steps done. Now on step 1: step 0.")


def test_a_chat_model_can_write_the_summary(open_mem, store_url, local_server) -> None:
    first = ("On step 2 (deploy); waiting for the staging database; decided to use blue-green "
             "deploys.")
    replies = iter([first, None])

    def respond(method, path, body):
        reply = next(replies)
        if reply is None:
            return json_answer(500, {"error": {"message": "model overloaded"}})
        return json_answer(200, {"id": "c1", "object": "chat.completion", "choices": [
            {"index": 0, "finish_reason": "stop",
             "message": {"role": "assistant", "content": reply}}]})

    chat = local_server(respond)
    mem = open_mem(store_url, task_distiller="llm", llm_url=chat.url + "/v1",
                   llm_model="local-model", task_summary_every=2)
    task = mem.tasks.register("Deploy", ["build", "deploy"])
    mem.tasks.update(task.id, message="Decided to use blue-green deploys", step_done=1)
    summary = mem.tasks.get(task.id).summary
    assert summary.metadata["via"] == "llm"
    assert summary.content.startswith("On step 2 (deploy)")
    request = chat.requests[0]
    assert request["path"] == "/v1/chat/completions"
    body = json.loads(request["body"])
    assert body["model"] == "local-model" and body["messages"][0]["role"] == "system"
    assert "[x] 1. build" in body["messages"][1]["content"]
    assert "[agent/decision] Decided to use blue-green deploys" in body["messages"][1]["content"]
    # A failing model leaves the extractive summary in its place, and says so.
    mem.tasks.update(task.id, message="Staging database is up")
    mem.tasks.update(task.id, message="Smoke tests pass")
    fallback = mem.tasks.get(task.id).summary
    assert fallback.metadata["via"].startswith("extractive (the model failed")
    assert "Deploy (active): 1 of 2 steps done." in fallback.content


def test_the_llm_distiller_needs_a_model() -> None:
    from memoryd import Settings

    with pytest.raises(ValueError, match="needs llm_url and llm_model"):
        Settings(task_distiller="llm")


def test_completing_a_task_leaves_a_memory_that_search_finds(tmem) -> None:
    task = tmem.tasks.register("Move CI to GitHub Actions", ["port the jobs", "cache the venv"])
    tmem.tasks.update(task.id, message="Decided to drop the Windows runners", step_done=1)
    tmem.tasks.update(task.id, step_done=2)
    outcome = tmem.tasks.complete(task.id, outcome="CI runs on Actions in 6 minutes",
                                  learned=["caching the venv saves 4 minutes per run"])
    assert outcome.task.status == "completed" and outcome.task.memory_id == outcome.memory.memory_id
    memory = outcome.memory.memory
    assert memory.node_type == "task" and memory.category == "task.completed"
    assert memory.metadata["task_id"] == task.id and "Decided: Decided to drop" in memory.content
    hits = tmem.search("how long does our CI take and what speeds it up?", limit=3)
    assert hits[0].memory.id == memory.id
    assert outcome.summary.startswith("Move CI to GitHub Actions (completed): 2 of 2 steps done.")
    with pytest.raises(InvalidInput, match="already ended"):
        tmem.tasks.update(task.id, message="one more thing")
    assert [t.id for t in tmem.tasks.list()] == []
    assert [t.id for t in tmem.tasks.list("completed")] == [task.id]


def test_a_failed_task_says_what_was_left(tmem) -> None:
    task = tmem.tasks.register("Upgrade Postgres", ["dump", "upgrade", "restore"])
    tmem.tasks.update(task.id, step_done=1)
    outcome = tmem.tasks.complete(task.id, status="failed",
                                  outcome="pg_upgrade lacks the extension")
    assert outcome.memory.memory.category == "task.failed"
    assert "Not done: upgrade; restore." in outcome.memory.memory.content


def test_bound_callers_see_only_their_own_tasks(tmem) -> None:
    alpha = tmem.acting_as(Actor("key:alpha"), Access(scope="project:alpha"))
    bot = tmem.acting_as(Actor("key:bot", agent_id="bot-1"), Access(agent_id="bot-1"))
    mine = alpha.tasks.register("Alpha work", ["a"])
    assert mine.scope == "project:alpha"
    theirs = bot.tasks.register("Bot work")
    assert theirs.agent_id == "bot-1" and theirs.scope == "user"
    for caller, other in ((alpha, theirs), (bot, mine)):
        with pytest.raises(TaskNotFound):
            caller.tasks.get(other.id)
        with pytest.raises(TaskNotFound):
            caller.tasks.update(other.id, message="mine now")
        with pytest.raises(TaskNotFound):
            caller.tasks.complete(other.id)
    assert [t.id for t in alpha.tasks.list()] == [mine.id]
    assert [t.id for t in bot.tasks.list()] == [theirs.id]
    assert {t.id for t in tmem.tasks.list()} == {mine.id, theirs.id}  # unbound sees all
    with pytest.raises(Forbidden, match="project:alpha"):
        alpha.tasks.register("Elsewhere", scope="project:beta")
    assert tmem.tasks.get(theirs.id).recent == []  # nothing was written by the refusals


def test_secrets_in_task_text_are_refused_and_nothing_is_stored(tmem, open_mem, tmp_path) -> None:
    with pytest.raises(SecretDetected, match="name"):
        tmem.tasks.register(f"Rotate {GH_TOKEN}")
    with pytest.raises(SecretDetected, match=r"plan\[1\]"):
        tmem.tasks.register("Rotate the token", ["find it", f"replace {GH_TOKEN}"])
    assert tmem.tasks.list("all") == []
    task = tmem.tasks.register("Rotate the token", ["find it"])
    with pytest.raises(SecretDetected, match="message"):
        tmem.tasks.update(task.id, message=f"the token is {GH_TOKEN}", step_done=1)
    report = tmem.tasks.get(task.id)
    assert report.recent == [] and report.progress == "0 of 1 step done"
    redacting = open_mem(f"sqlite:///{tmp_path}/r.db", secrets_mode="redact")
    kept = redacting.tasks.register("Rotate the token", ["find it"])
    text = redacting.tasks.update(kept.id, message=f"old token {GH_TOKEN}").recent[0].content
    assert "ghp_" not in text and "[REDACTED:" in text


@pytest.mark.parametrize("bad, message", [
    ({"name": ""}, "name"),
    ({"name": "x", "plan": ["ok", ""]}, "plan.1"),
    ({"name": "x", "scope": "team:x"}, "scope"),
    ({"name": "x", "surprise": 1}, "surprise"),
    ({"name": "x" * 201}, "name"),
])
def test_bad_registrations_are_refused(tmem, bad, message) -> None:
    from memoryd.engine.tasks import lifecycle as tasks

    with pytest.raises(InvalidInput, match=message):
        tasks.register_task(tmem.context, bad)
    assert tmem.tasks.list("all") == []


def test_bad_updates_are_refused_and_change_nothing(tmem) -> None:
    task = tmem.tasks.register("T", ["one"])
    for kwargs, message in (({}, "nothing to update"), ({"step_done": 2}, "from 1 to 1"),
                            ({"step_done": 0}, "from 1 to 1"), ({"kind": "rant", "message": "x"},
                                                                 "kind must be"),
                            ({"status": "completed"}, "task_complete"),
                            ({"message": "   "}, "message is empty")):
        with pytest.raises(InvalidInput, match=message):
            tmem.tasks.update(task.id, **kwargs)
    assert tmem.tasks.get(task.id).recent == []
    with pytest.raises(TaskNotFound):
        tmem.tasks.update("t_nope", message="hello")
    with pytest.raises(InvalidInput, match="completed or failed"):
        tmem.tasks.complete(task.id, status="paused")
    before = tmem.store.count()
    for kwargs, field in (({"outcome": " \t"}, "outcome"), ({"learned": ["ok", "  "]}, "learned.1")):
        with pytest.raises(InvalidInput, match=f"^{field}: is blank"):
            tmem.tasks.complete(task.id, **kwargs)
    assert tmem.tasks.get(task.id).task.status == "active" and tmem.store.count() == before
    with pytest.raises(InvalidInput, match="status must be"):
        tmem.tasks.list("sleeping")


def test_pause_and_resume_and_steps_added_later(tmem) -> None:
    task = tmem.tasks.register("Refactor", [])
    report = tmem.tasks.update(task.id, add_steps=["split module", "add tests"], step_done=2)
    assert report.progress == "1 of 2 steps done" and report.current_step == "split module"
    report = tmem.tasks.update(task.id, status="paused")
    assert report.task.status == "paused" and report.recent[0].content == "Task paused"
    assert [t.id for t in tmem.tasks.list("paused")] == [task.id]
    assert tmem.tasks.update(task.id, status="active").recent[0].content == "Task resumed"


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_the_whole_flow_on_both_backends(backend, open_mem, store_url, request) -> None:
    url = store_url if backend == "sqlite" else request.getfixturevalue("pg_database")()
    mem = open_mem(url, task_summary_every=2)
    task = mem.tasks.register("Both backends", ["one", "two"])
    mem.tasks.update(task.id, message="Decided to run it twice", step_done=1)
    report = mem.tasks.get(task.id)
    assert report.summary is not None and report.decisions[0].content == "Decided to run it twice"
    outcome = mem.tasks.complete(task.id, outcome="It ran on both")
    assert mem.get(outcome.memory.memory_id).metadata["task_id"] == task.id
