"""Wake dispatch received by real local HTTP servers: the OpenClaw gateway call, the
signed webhook, retries with backoff, and every attempt recorded on the job."""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path

from waits_fixtures import json_answer, local_server, make_scheduler, wait_until  # noqa: F401

from memoryd.waits import JsonFileJobStore, WaitRequest, WaitStatus, WakeDispatcher, WakeSettings
from memoryd.waits.wake import SIGNATURE_HEADER


def fast(**kwargs) -> WakeSettings:
    return WakeSettings(backoff_s=0.05, **kwargs)


def test_openclaw_gateway_receives_the_wake(tmp_path: Path, local_server, make_scheduler) -> None:
    gateway = local_server(lambda m, p, b: json_answer(200, {"ok": True}))
    wake = WakeDispatcher(fast(openclaw_url=gateway.url, openclaw_token="gw-token-123"))
    sched = make_scheduler(wake=wake)
    log = tmp_path / "train.log"
    log.write_text("")
    job = sched.submit(WaitRequest(str(log), "re:epoch 3/3 loss=", timeout_s=20, task_id="t_9",
                                   wake={"to": "openclaw", "session_key": "agent:main:abc"}))
    with open(log, "a") as f:
        f.write("epoch 3/3 loss=0.041\n")
    wait_until(lambda: gateway.requests)
    request = gateway.requests[0]
    assert request["path"] == "/api/agent"
    assert request["headers"]["authorization"] == "Bearer gw-token-123"
    body = json.loads(request["body"])
    assert body["sessionKey"] == "agent:main:abc" and body["source"] == "system"
    assert body["message"].startswith(f"[smart_wait] {job.id} resolved after ")
    assert body["message"].endswith('showed "epoch 3/3 loss=0.041" (task t_9)')
    assert len(body["message"]) <= 400
    final = wait_until(lambda: (j := sched.status(job.id)).wake_attempts and j)
    assert final.wake_attempts[0].ok and final.wake_attempts[0].status == 200
    saved = {j.id: j for j in JsonFileJobStore(tmp_path / "jobs.json").load()}[job.id]
    assert saved.wake_attempts == final.wake_attempts  # recorded persistently


def test_webhook_is_signed_and_retried(tmp_path: Path, local_server, make_scheduler) -> None:
    answers = iter([503, 502, 200])
    hook = local_server(lambda m, p, b: json_answer(next(answers), {}))
    secret = "whsec-test-0123456789"
    sched = make_scheduler(wake=WakeDispatcher(fast(webhook_url=hook.url + "/hooks/memoryd",
                                                    webhook_secret=secret)))
    log = tmp_path / "x.log"
    log.write_text("")
    job = sched.submit(WaitRequest(str(log), "never", timeout_s=1, wake={"to": "webhook"}))
    final = wait_until(lambda: len((j := sched.status(job.id)).wake_attempts) == 3 and j, timeout=15)
    assert final.status is WaitStatus.TIMEOUT
    assert [a.status for a in final.wake_attempts] == [503, 502, 200]
    assert [a.ok for a in final.wake_attempts] == [False, False, True]
    for request in hook.requests:
        expected = "sha256=" + hmac.new(secret.encode(), request["body"], hashlib.sha256).hexdigest()
        assert request["headers"][SIGNATURE_HEADER.lower()] == expected
    body = json.loads(hook.requests[-1]["body"])
    assert body["event"] == "wait.timeout" and body["job"]["id"] == job.id
    assert "timed out after 1s" in body["message"]


def test_client_errors_are_not_retried(local_server) -> None:
    hook = local_server(lambda m, p, b: json_answer(401, {"error": "bad token"}))
    dispatcher = WakeDispatcher(fast(openclaw_url=hook.url))
    from memoryd.waits.model import WaitJob

    job = WaitJob("w_1", "pid:1", {"exits": True}, 10, 0, 10, status=WaitStatus.RESOLVED,
                  resolved_at=5, result="exited", wake={"to": "openclaw"})
    attempts = []
    assert dispatcher.deliver(job, attempts.append) is False
    dispatcher.close()
    assert len(attempts) == 1 and attempts[0].status == 401 and "bad token" in attempts[0].error


def test_unreachable_gateway_records_each_attempt(local_server) -> None:
    server = local_server(lambda m, p, b: json_answer(200, {}))
    url = server.url
    server.close()
    dispatcher = WakeDispatcher(fast(openclaw_url=url, attempts=3))
    from memoryd.waits.model import WaitJob

    job = WaitJob("w_2", "pid:1", {"exits": True}, 10, 0, 10, status=WaitStatus.ERROR,
                  resolved_at=5, result="boom", wake={"to": "openclaw"})
    attempts = []
    assert dispatcher.deliver(job, attempts.append) is False
    dispatcher.close()
    assert len(attempts) == 3 and all("ConnectError" in a.error for a in attempts)


def test_cancelled_jobs_wake_nobody(tmp_path: Path, local_server, make_scheduler) -> None:
    gateway = local_server(lambda m, p, b: json_answer(200, {}))
    sched = make_scheduler(wake=WakeDispatcher(fast(openclaw_url=gateway.url)))
    log = tmp_path / "c.log"
    log.write_text("")
    job = sched.submit(WaitRequest(str(log), "x", timeout_s=30, wake={"to": "openclaw"}))
    sched.cancel(job.id)
    sched.close()
    assert gateway.requests == []
