"""The real ``memoryd serve`` and ``memoryd mcp`` processes end cleanly on every path: a busy
port is one clear line and exit 1 before anything claims to serve; a client that closes stdin
at any moment (before initialize, while the model loads, during a search) gets exit 0 and no
"terminate called without an active exception" (SIGABRT from a model-runtime thread still
running when the interpreter finalizes)."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
from api_fixtures import free_port
from conftest import MEMORYD_BIN
from mcp import StdioServerParameters
from mcp.client.session import ClientSession
from mcp.client.stdio import stdio_client

ABORT = "terminate called"


# --------------------------------------------------------------------------- memoryd serve


def _keyed_env(cli_env: dict[str, str], run_cli) -> dict[str, str]:
    made = run_cli("keys", "create", "--label", "agent", "--json", env=cli_env)
    assert made.returncode == 0, made.stderr
    return cli_env


def test_serve_on_a_busy_port_says_so_in_one_line_and_exits_1(cli_env, run_cli) -> None:
    env = _keyed_env(cli_env, run_cli)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([str(MEMORYD_BIN), "serve", "--port", str(port)], env=env,
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines == [f"error: port {port} on 127.0.0.1 is in use (is another memoryd "
                     "running?); stop what listens there or choose another port with --port "
                     "or MEMORYD_PORT"]
    assert "serving on" not in done.stdout and "startup complete" not in done.stderr


def test_serve_on_an_address_of_another_machine_says_so(cli_env, run_cli) -> None:
    env = _keyed_env(cli_env, run_cli)
    done = subprocess.run([str(MEMORYD_BIN), "serve", "--host", "192.0.2.1", "--port", "8765"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.strip() == ("error: 192.0.2.1 is not an address of this machine; choose "
                                   "another with --host")


def _started_serve(env: dict[str, str], port: int) -> subprocess.Popen[str]:
    proc = subprocess.Popen([str(MEMORYD_BIN), "serve", "--port", str(port)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    for line in proc.stderr:  # uvicorn logs to stderr; the model is still loading now
        if "Application startup complete" in line:
            return proc
    proc.wait(30)
    pytest.fail(f"memoryd serve did not start (exit {proc.returncode})")


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 0), (signal.SIGTERM, -signal.SIGTERM)])
def test_serve_stopped_while_the_model_loads_shuts_down_cleanly(cli_env, run_cli, sig,
                                                                code) -> None:
    """uvicorn shuts down gracefully, then re-raises SIGTERM (the conventional status of a
    service stopped by SIGTERM); Ctrl-C ends with 0. Neither aborts."""
    env = _keyed_env(cli_env, run_cli)
    for _ in range(2):
        proc = _started_serve(env, free_port())
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == code, err
        assert ABORT not in err and "Application shutdown complete" in err


# --------------------------------------------------------------------------- memoryd mcp


def _message(method: str, params: dict | None = None, id: int | None = None) -> bytes:
    body: dict = {"jsonrpc": "2.0", "method": method}
    if id is not None:
        body["id"] = id
    if params is not None:
        body["params"] = params
    return (json.dumps(body) + "\n").encode()


INITIALIZE = _message("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                     "clientInfo": {"name": "test", "version": "0"}}, id=1)
SEARCH = _message("tools/call", {"name": "search", "arguments": {"query": "release train"}},
                  id=3)


def _talk_then_close(env: dict[str, str], moment: str, pause: float) -> tuple[int, str]:
    """Start ``memoryd mcp``, speak JSON-RPC up to ``moment``, wait ``pause`` s, close stdin."""
    proc = subprocess.Popen([str(MEMORYD_BIN), "mcp"], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    if moment != "before-initialize":
        proc.stdin.write(INITIALIZE)
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1
    if moment in ("after-tools-list", "during-search"):
        proc.stdin.write(_message("notifications/initialized") + _message("tools/list", id=2))
        proc.stdin.flush()
        assert "tools" in json.loads(proc.stdout.readline())["result"]
    if moment == "during-search":
        proc.stdin.write(SEARCH)
        proc.stdin.flush()
    time.sleep(pause)
    proc.stdin.close()
    code = proc.wait(timeout=120)
    err = proc.stderr.read().decode(errors="replace")
    proc.stdout.close()
    proc.stderr.close()
    return code, err


@pytest.mark.parametrize("moment, pause", [
    ("before-initialize", 0.0), ("after-initialize", 0.0), ("after-tools-list", 0.0),
    ("after-tools-list", 0.2), ("after-tools-list", 0.8), ("during-search", 0.0),
])
def test_mcp_exits_cleanly_whenever_the_client_closes_stdin(cli_env, moment, pause) -> None:
    """Racy by nature (the model loads on a thread from tools/list on): three tries each."""
    for _ in range(3):
        code, err = _talk_then_close(cli_env, moment, pause)
        assert code == 0 and ABORT not in err, err[-2000:]


def test_mcp_exits_cleanly_when_the_sdk_client_leaves_right_after_listing(
        cli_env, tmp_path: Path) -> None:
    """The SDK client closes stdin when its session ends (and signals the process only if it
    is still running two seconds later); a wrapper records memoryd's exit status."""
    status = tmp_path / "status"
    script = f'"{MEMORYD_BIN}" mcp; echo $? > "{status}"'
    params = StdioServerParameters(command="/bin/sh", args=["-c", script], env=cli_env)
    errors = tmp_path / "stderr.txt"

    async def session() -> int:
        with errors.open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as client:
                    await client.initialize()
                    return len((await client.list_tools()).tools)

    for _ in range(3):
        assert asyncio.run(session()) > 0
        assert ABORT not in errors.read_text()
        assert status.read_text().strip() == "0"
        status.unlink()


def test_serve_first_key_creates_one_admin_key_only_when_none_is_active(cli_env) -> None:
    """`serve --first-key` (what scripts/serve runs) prints a new admin key on a fresh store
    and starts with it; on the next start, with a key present, it creates none."""
    printed = []
    for _ in range(2):
        port = free_port()
        proc = subprocess.Popen([str(MEMORYD_BIN), "serve", "--first-key", "local", "--port",
                                 str(port)], env=cli_env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            assert proc.stderr is not None and proc.stdout is not None
            for line in proc.stderr:
                if "Application startup complete" in line:
                    break
            else:
                pytest.fail(f"serve did not start: {proc.wait(30)}")
            proc.send_signal(signal.SIGINT)
            out, _ = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
        printed.append([line for line in out.splitlines() if line.startswith("mk_")])
    assert len(printed[0]) == 1 and printed[1] == []
    listed = subprocess.run([str(MEMORYD_BIN), "keys", "list", "--json"], env=cli_env,
                            capture_output=True, text=True, timeout=120)
    [key] = json.loads(listed.stdout)
    assert key["label"] == "local" and key["scopes"] == ["read", "write", "admin"]
    assert printed[0][0].startswith(key["prefix"])
