"""Smart waits in the engine, on real stores: the host's runner resolves waits on real files
appended by other processes, records them in ``wait_jobs``, resumes them after a restart
(on both backends), hands over to a standing-by process, adopts waits that another process
recorded, keeps bound callers to their own waits, refuses bad requests with nothing
started, writes to the wait's task, and wakes a local gateway."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from test_waits_file import append_later
from waits_fixtures import json_answer, local_server, wait_until  # noqa: F401 - fixtures

from memoryd import Access, Actor, InvalidInput, TaskNotFound
from memoryd.engine.waits import service as wait_service
from memoryd.waits import InvalidWait, WaitNotFound


@pytest.fixture
def open_waits(open_mem, tmp_path):
    """``open_waits(url=None, start=True, **settings)``: an engine whose waits may watch
    files under tmp_path, running this host's waits when ``start``."""

    def make(url: str | None = None, start: bool = True, **settings):
        settings.setdefault("wait_allowed_roots", [str(tmp_path)])
        settings.setdefault("wait_runner", "test-host")
        engine = open_mem(url or f"sqlite:///{tmp_path / 'm.db'}", **settings)
        if start:
            engine.waits.start()
        return engine

    return make


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "build.log"
    path.write_text("BUILD OK from an earlier run\n")
    return path


def test_a_file_wait_resolves_and_is_recorded(open_waits, log) -> None:
    mem = open_waits()
    assert mem.waits.running
    job = mem.waits.watch(f"file:{log}", "BUILD OK", 30)
    assert job.status == "watching" and job.id.startswith("w_")
    assert job.runner == "test-host" and job.scope == "user"
    append_later(log, ["compiling", "BUILD OK in 12s"])
    done = mem.waits.status(job.id, block_s=20)
    assert done.status == "resolved" and done.result == "BUILD OK in 12s"
    assert done.message.startswith(f"[smart_wait] {job.id} resolved after ")
    row = mem.store.work.get_wait_job(job.id)
    assert row["status"] == "resolved" and row["owner"]["runner"] == "test-host"
    assert [w.id for w in mem.waits.list("resolved")] == [job.id]


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_restart_mid_wait_resumes_and_resolves(backend, open_waits, log, request) -> None:
    url = None if backend == "sqlite" else request.getfixturevalue("pg_database")()
    first = open_waits(url)
    job = first.waits.watch(f"file:{log}", "/DEPLOY (OK|FAILED)/", 60)
    append_later(log, ["step 1 of 2"], delay=0).wait()
    wait_until(lambda: first.waits.status(job.id).checks > 0)
    first.close()  # the server stops; the job stays watching with its cursor
    append_later(log, ["DEPLOY OK while memoryd was down"], delay=0).wait()
    second = open_waits(url)
    assert second.waits.running
    done = second.waits.status(job.id, block_s=20)
    assert done.status == "resolved" and done.result == "DEPLOY OK while memoryd was down"


def test_a_job_past_its_deadline_at_restart_times_out(open_waits, log) -> None:
    first = open_waits()
    job = first.waits.watch(f"file:{log}", "never printed", 1.5)
    first.close()
    time.sleep(1.6)
    second = open_waits()
    assert second.waits.status(job.id, block_s=5).status == "timeout"


def test_another_process_records_waits_that_the_runner_adopts(open_waits, log,
                                                              monkeypatch) -> None:
    monkeypatch.setattr(wait_service, "STANDBY_S", 0.2)
    runner = open_waits()
    client = open_waits()  # the same store, on the same host: it stands by
    assert runner.waits.running and not client.waits.running
    job = client.waits.watch(f"file:{log}", "READY", 30)
    wait_until(lambda: runner.waits.status(job.id).checks > 0, timeout=10)  # adopted
    append_later(log, ["service READY"], delay=0)
    assert client.waits.status(job.id, block_s=20).result == "service READY"
    other = client.waits.watch(f"file:{log}", "never", 30)
    wait_until(lambda: runner.waits.status(other.id).checks > 0, timeout=10)
    assert client.waits.cancel(other.id).status == "cancelled"
    wait_until(lambda: runner._waits._scheduler.get(other.id).status.value == "cancelled",
               timeout=10)  # the runner stopped watching it
    runner.close()
    wait_until(lambda: client.waits.running, timeout=10)  # the stand-by took over


def test_without_a_runner_a_wait_is_refused(open_waits, log) -> None:
    mem = open_waits(start=False)
    with pytest.raises(wait_service.WaitsNotRunning, match="memoryd serve"):
        mem.waits.watch(f"file:{log}", "OK", 30)
    assert mem.waits.list() == []


def test_bound_callers_see_only_their_own_waits(open_waits, log) -> None:
    mem = open_waits()
    alpha = mem.acting_as(Actor("key:alpha"), Access(scope="project:alpha"))
    bot = mem.acting_as(Actor("key:bot", agent_id="bot-1"), Access(agent_id="bot-1"))
    mine = alpha.waits.watch(f"file:{log}", "alpha", 30)
    theirs = bot.waits.watch(f"file:{log}", "bot", 30)
    assert (mine.scope, theirs.agent_id) == ("project:alpha", "bot-1")
    for caller, other in ((alpha, theirs), (bot, mine)):
        with pytest.raises(WaitNotFound):
            caller.waits.status(other.id)
        with pytest.raises(WaitNotFound):
            caller.waits.cancel(other.id)
    assert [w.id for w in alpha.waits.list()] == [mine.id]
    assert [w.id for w in bot.waits.list()] == [theirs.id]
    assert {w.id for w in mem.waits.list()} == {mine.id, theirs.id}
    assert mem.waits.status(theirs.id).status == "watching"  # nothing was cancelled
    bots_task = bot.tasks.register("Bot work")
    with pytest.raises(TaskNotFound):
        alpha.waits.watch(f"file:{log}", "x", 30, task_id=bots_task.id)
    assert len(mem.waits.list()) == 2


@pytest.mark.parametrize("target, criteria, timeout, error", [
    ("ftp://example.com/x", "OK", 30, "scheme"),
    ("gopher:whatever", "OK", 30, "target"),
    ("file:{log}", "/unclosed(/", 30, "regex"),
    ("file:{log}", "OK", 0, "timeout_s"),
    ("file:{log}", "OK", 8 * 24 * 3600, "timeout_s"),
    ("file:/etc/passwd", "root", 30, "allowed roots"),
    ("command:make test", "exit", 30, "allow_spawn"),
    ("http://169.254.169.254/latest/meta-data/", "status:200", 30, "metadata"),
    ("window:Some Title", "done", 30, "display"),
    ("pid:{log}", "exit", 30, "pid"),
])
def test_bad_requests_are_refused_and_nothing_starts(open_waits, log, target, criteria,
                                                     timeout, error) -> None:
    mem = open_waits()
    with pytest.raises(InvalidInput, match=error):
        mem.waits.watch(target.format(log=log), criteria, timeout)
    with pytest.raises(InvalidWait, match="wake"):
        mem.waits.watch(f"file:{log}", "OK", 30, wake={"to": "openclaw"})
    with pytest.raises(TaskNotFound):
        mem.waits.watch(f"file:{log}", "OK", 30, task_id="t_missing")
    assert mem.waits.list() == [] and mem.store.work.list_wait_jobs() == []


def test_a_wait_that_ends_writes_to_its_task(open_waits, log) -> None:
    mem = open_waits()
    task = mem.tasks.register("Deploy", ["build", "deploy"])
    job = mem.waits.watch(f"file:{log}", "BUILD OK", 30, task_id=task.id)
    quiet = mem.waits.watch(f"file:{log}", "never", 1, task_id=task.id)
    assert [w.id for w in mem.tasks.get(task.id).waits] == [quiet.id, job.id]
    append_later(log, ["BUILD OK"], delay=0)
    assert mem.waits.status(job.id, block_s=20).status == "resolved"
    assert mem.waits.status(quiet.id, block_s=20).status == "timeout"
    report = wait_until(lambda: (r := mem.tasks.get(task.id)) and len(r.recent) == 2 and r)
    by_wait = {m.metadata["wait_id"]: m for m in report.recent}
    assert by_wait[job.id].role == "system" and by_wait[job.id].kind == "progress"
    assert by_wait[job.id].content.endswith(f'showed "BUILD OK" (task {task.id})')
    assert by_wait[quiet.id].kind == "blocker"  # a wait that timed out holds the task up
    assert [b.metadata["wait_id"] for b in report.blockers] == [quiet.id]


def test_the_wake_post_reaches_a_local_gateway(open_waits, log, local_server) -> None:
    gateway = local_server(lambda m, p, b: json_answer(200, {"ok": True}))
    mem = open_waits(wake_openclaw_url=gateway.url, wake_openclaw_token="gw-secret-token",
                     wake_openclaw_session_key="agent:main:test")
    job = mem.waits.watch(f"file:{log}", "TESTS PASSED", 30, wake={"to": "openclaw"})
    append_later(log, ["412 TESTS PASSED"], delay=0)
    wait_until(lambda: gateway.requests, timeout=20)
    request = gateway.requests[0]
    assert request["path"] == "/api/agent"
    assert request["headers"]["authorization"] == "Bearer gw-secret-token"
    assert b'"sessionKey": "agent:main:test"' in request["body"]
    attempts = wait_until(lambda: mem.waits.status(job.id).wake_attempts)
    assert attempts[0]["ok"] and attempts[0]["status"] == 200
    stored = wait_until(lambda: mem.store.work.get_wait_job(job.id)["wake_attempts"])
    assert stored[0]["status"] == 200  # every attempt is recorded in the store


def test_long_polls_beyond_the_limit_answer_at_once(open_waits, log) -> None:
    mem = open_waits(wait_max_blocking=1)
    job = mem.waits.watch(f"file:{log}", "never", 30)
    blocker = threading.Thread(target=mem.waits.status, args=(job.id, 3.0))
    blocker.start()
    time.sleep(0.3)
    started = time.monotonic()
    assert mem.waits.status(job.id, block_s=3.0).status == "watching"
    assert time.monotonic() - started < 2.5  # the second long-poll did not block
    blocker.join()
    with pytest.raises(InvalidInput, match="block_s"):
        mem.waits.status(job.id, block_s=301)


def test_what_a_wait_saw_is_kept_without_credentials(open_waits, log) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    mem = open_waits()
    task = mem.tasks.register("Publish")
    job = mem.waits.watch(f"file:{log}", "/published with token/", 30, task_id=task.id)
    append_later(log, [f"published with token {token}"], delay=0)
    done = mem.waits.status(job.id, block_s=20)
    assert done.status == "resolved"  # the criteria matched the line as it was written
    assert done.result == "published with token [REDACTED:github_token]"
    assert token not in str(mem.store.work.get_wait_job(job.id))
    note = wait_until(lambda: [m for m in mem.tasks.get(task.id).recent if m.role == "system"])
    assert token not in note[0].content and "[REDACTED:github_token]" in note[0].content


def test_wait_settings_are_off_by_default_and_read_from_the_environment(monkeypatch) -> None:
    from memoryd import Settings
    from memoryd.engine.waits.setup import (
        activity_settings,
        frame_judge,
        wait_policy,
        wake_dispatcher,
    )

    quiet = Settings()
    policy = wait_policy(quiet)
    assert policy.allowed_roots == (Path.home(),)
    assert (policy.allow_spawn, policy.allow_link_local, policy.display, policy.vision) == \
        (False, False, None, False)
    assert wake_dispatcher(quiet) is None and frame_judge(quiet) is None
    assert activity_settings(quiet).build_sources() == []
    monkeypatch.setenv("MEMORYD_WAIT_ALLOWED_ROOTS", "/srv/builds,~/proj")
    monkeypatch.setenv("MEMORYD_ACTIVITY_LOG_FILES", "/var/log/app.log")
    monkeypatch.setenv("MEMORYD_WAKE_WEBHOOK_URL", "http://127.0.0.1:9/hook")
    loud = Settings()
    assert wait_policy(loud).allowed_roots == (Path("/srv/builds"), Path.home() / "proj")
    assert activity_settings(loud).log_files == ("/var/log/app.log",)
    dispatcher = wake_dispatcher(loud)
    assert dispatcher is not None and dispatcher.settings.routes == ("webhook",)
    dispatcher.close()
    with pytest.raises(ValueError, match="scope"):
        Settings(activity_scope="everyone")
