"""Process and HTTP waits against real processes and a real local HTTP server."""

from __future__ import annotations

import subprocess
import sys

import psutil
import pytest
from waits_fixtures import json_answer, local_server, make_scheduler, wait_until  # noqa: F401

from memoryd.waits import TargetNotFound, WaitRequest, WaitStatus
from memoryd.waits.criteria import parse_criteria
from memoryd.waits.watchers.http import HttpWatcher


def test_pid_exit_is_seen_at_once(make_scheduler) -> None:
    sched = make_scheduler()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.0)"])
    job = sched.submit(WaitRequest(f"pid:{child.pid}", "exit", timeout_s=20))
    child.wait()  # the test process is the parent: reap it so the pid really goes away
    done = sched.status(job.id, block_s=10)
    assert done.status is WaitStatus.RESOLVED
    assert done.result == "exited"
    assert done.last_observation.detail["exit_code"] is None  # not memoryd's child


def test_missing_pid_is_refused(make_scheduler) -> None:
    sched = make_scheduler()
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    with pytest.raises(TargetNotFound, match=f"no process with pid {child.pid}"):
        sched.submit(WaitRequest(f"pid:{child.pid}", "exit", timeout_s=5))
    assert sched.list() == []


def test_command_exit_code(make_scheduler) -> None:
    sched = make_scheduler()
    ok = sched.submit(WaitRequest("command:sh -c 'sleep 0.3; exit 0'", "exit:0", timeout_s=10))
    bad = sched.submit(WaitRequest("command:sh -c 'exit 2'", "exit:0", timeout_s=10))
    done = sched.status(ok.id, block_s=8)
    assert done.status is WaitStatus.RESOLVED and done.result == "exited with code 0"
    failed = sched.status(bad.id, block_s=8)
    assert failed.status is WaitStatus.ERROR
    assert failed.result == "process exited with code 2, expected 0"


def test_cancel_stops_a_started_command(make_scheduler, tmp_path) -> None:
    sched = make_scheduler()
    marker = tmp_path / "still-running"
    job = sched.submit(WaitRequest(f"command:sh -c 'sleep 5; touch {marker}'", "exit",
                                   timeout_s=30))
    pid = sched.status(job.id).cursor["pid"]
    assert psutil.pid_exists(pid)
    sched.cancel(job.id)
    wait_until(lambda: not psutil.pid_exists(pid), timeout=8)  # stopped and reaped
    assert not marker.exists()


def test_http_waits_for_status_then_body(local_server, make_scheduler) -> None:
    hits = {"n": 0}

    def respond(method, path, body):
        hits["n"] += 1
        if hits["n"] < 3:
            return json_answer(503, {"status": "starting"})
        return json_answer(200, {"status": "ready", "version": "2.4.1"})

    server = local_server(respond)
    sched = make_scheduler()
    job = sched.submit(WaitRequest(f"{server.url}/health",
                                   {"status": 200, "regex": r'"status": "ready"'}, timeout_s=30))
    done = sched.status(job.id, block_s=20)
    assert done.status is WaitStatus.RESOLVED
    assert done.result.startswith("HTTP 200:")
    assert hits["n"] == 3  # 503, 503, then 200


def test_http_server_not_up_yet_is_not_an_error(local_server) -> None:
    server = local_server(lambda m, p, b: json_answer(200, {}))
    url = server.url
    server.close()  # nothing listens there now
    watcher = HttpWatcher(url, parse_criteria("status:200"))
    obs = watcher.check()
    watcher.close()
    assert not obs.matched and not obs.ended
    assert "ConnectError" in obs.seen


def test_http_redirect_is_not_followed(local_server) -> None:
    server = local_server(lambda m, p, b: (302, {"location": "http://169.254.169.254/"}, b""))
    watcher = HttpWatcher(server.url, parse_criteria("status:200"))
    obs = watcher.check()
    watcher.close()
    assert not obs.matched and obs.detail["status"] == 302
