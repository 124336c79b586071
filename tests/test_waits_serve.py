"""The real ``memoryd serve`` process runs the host's waits: a wait survives the server
being killed mid-wait and resolves after the restart, and the ``memoryd task`` / ``memoryd
wait`` commands work beside the running server (waits recorded by the CLI are adopted by
the server's scheduler)."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from api_fixtures import free_port
from conftest import MEMORYD_BIN
from test_waits_file import append_later
from waits_fixtures import wait_until


class Serve:
    """``memoryd serve`` as a child process, with a key made by ``memoryd keys create``."""

    def __init__(self, env: dict[str, str], run_cli) -> None:
        self.env, self.port = env, free_port()
        made = run_cli("keys", "create", "--label", "agent", "--json", env=env)
        assert made.returncode == 0, made.stderr
        self.key = json.loads(made.stdout)["key"]
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Serve:
        self.proc = subprocess.Popen([str(MEMORYD_BIN), "serve", "--port", str(self.port)],
                                     env=self.env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        wait_until(self._ready, timeout=60, step=0.2)
        return self

    def _ready(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            pytest.fail(f"memoryd serve exited: {self.proc.stderr.read().decode()[-2000:]}")
        try:
            return httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=60,
                            headers={"Authorization": f"Bearer {self.key}"})

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(30)


@pytest.fixture
def serve(cli_env, run_cli, tmp_path) -> Iterator[Serve]:
    env = {**cli_env, "MEMORYD_WAIT_ALLOWED_ROOTS": str(tmp_path),
           "MEMORYD_WAIT_RUNNER": "serve-test-host"}
    server = Serve(env, run_cli)
    yield server
    server.stop(signal.SIGKILL)


def test_a_killed_server_resumes_the_wait_after_restart(serve: Serve, tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("")
    serve.start()
    with serve.client() as http:
        job = http.post("/api/v1/waits", json={"target": f"file:{log}",
                                               "criteria": "/training (done|diverged)/",
                                               "timeout_s": 120}).json()
        append_later(log, ["epoch 1/3"], delay=0).wait()
        wait_until(lambda: http.get(f"/api/v1/waits/{job['id']}").json()["checks"] > 0)
    serve.stop(signal.SIGKILL)  # no clean shutdown: the job is left watching in the store
    append_later(log, ["epoch 3/3", "training done in 41m"], delay=0).wait()
    serve.start()
    with serve.client() as http:
        done = http.get(f"/api/v1/waits/{job['id']}", params={"block_s": 30}).json()
    assert done["status"] == "resolved" and done["result"] == "training done in 41m"


def test_the_cli_works_beside_the_running_server(serve: Serve, run_cli, tmp_path: Path) -> None:
    env = serve.env
    log = tmp_path / "release.log"
    log.write_text("")
    refused = run_cli("wait", "start", f"file:{log}", "PUBLISHED", "--timeout", "30", env=env)
    assert refused.returncode == 1 and "no memoryd process on this host runs waits" in \
        refused.stderr
    serve.start()
    made = run_cli("task", "register", "Publish 1.4", "--step", "tag", "--step", "publish",
                   "--json", env=env)
    task_id = json.loads(made.stdout)["task"]["id"]
    updated = run_cli("task", "update", task_id, "-m", "Decided to publish from CI", "--done",
                      "1", env=env)
    assert "1 of 2 steps done" in updated.stdout and "Now: publish" in updated.stdout
    follow = subprocess.Popen([str(MEMORYD_BIN), "wait", "start", f"file:{log}", "PUBLISHED",
                               "--timeout", "60", "--task", task_id, "--follow"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_until(lambda: json.loads(run_cli("wait", "list", "--json", env=env).stdout
                                  )["waits"], timeout=60)
    append_later(log, ["PUBLISHED memoryd 1.4.0"], delay=0)
    out, err = follow.communicate(timeout=90)
    assert follow.returncode == 0, err
    assert 'resolved after' in out and 'showed "PUBLISHED memoryd 1.4.0"' in out
    report = run_cli("task", "get", task_id, env=env)
    assert "smart_wait" in report.stdout  # the ended wait wrote to its task
    ended = run_cli("task", "complete", task_id, "--outcome", "1.4.0 is on PyPI", env=env)
    assert ended.returncode == 0 and "Remembered as" in ended.stdout
    listed = json.loads(run_cli("task", "list", "--status", "completed", "--json",
                                env=env).stdout)
    assert [t["id"] for t in listed["tasks"]] == [task_id]


def test_memoryd_mcp_over_stdio_runs_waits_when_no_server_does(cli_env, tmp_path: Path) -> None:
    import asyncio

    from mcp import Client, StdioServerParameters

    log = tmp_path / "stdio.log"
    log.write_text("")
    env = {**cli_env, "MEMORYD_MCP_WARM": "false", "MEMORYD_WAIT_ALLOWED_ROOTS": str(tmp_path),
           "MEMORYD_WAIT_RUNNER": "stdio-test-host"}
    params = StdioServerParameters(command=str(MEMORYD_BIN),
                                   args=["mcp", "--tools", "memory,tasks"], env=env)

    async def session():
        async with Client(params, mode="legacy") as client:
            task = await client.call_tool("task_register", {"name": "Watch the stdio log"})
            task_id = task.structured_content["task"]["id"]
            started = await client.call_tool("smart_wait", {
                "target": f"file:{log}", "criteria": "STDIO OK", "timeout_s": 30,
                "task_id": task_id})
            append_later(log, ["STDIO OK"])
            status = await client.call_tool("wait_status", {
                "id": started.structured_content["id"], "block_s": 20})
            report = await client.call_tool("task_get", {"id": task_id})
            return started, status, report

    started, status, report = asyncio.run(session())
    assert not started.is_error, started.content[0].text
    assert status.structured_content["status"] == "resolved"
    assert status.structured_content["runner"] == "stdio-test-host"
    assert report.structured_content["waits"][0]["status"] == "resolved"
