"""Real things for the waits tests: a private tmux server, an Xvfb display with xterm
windows, local HTTP servers, and a scheduler bound to temp dirs. Each fixture skips
when its Debian package is missing (./scripts/test installs them)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from memoryd.waits import JsonFileJobStore, WaitPolicy, WaitScheduler, WatcherKit
from memoryd.waits.watchers.tmux import TmuxClient


def need(*binaries: str) -> None:
    """Skip the test when a binary is not installed."""
    for name in binaries:
        if shutil.which(name) is None:
            pytest.skip(f"{name} is not installed")


def wait_until(predicate: Callable[[], Any], timeout: float = 10.0, step: float = 0.05) -> Any:
    """Poll ``predicate`` until truthy; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f"condition not met within {timeout}s")


@pytest.fixture
def tmux_server(tmp_path: Path) -> Iterator[TmuxClient]:
    """A tmux server of its own (socket in tmp_path), session 'work' running bash with the
    prompt ``agent$ ``."""
    need("tmux")
    socket = str(tmp_path / "tmux.sock")
    client = TmuxClient(socket, pipe_dir=tmp_path / "pipes")
    subprocess.run(["tmux", "-S", socket, "-f", "/dev/null", "new-session", "-d", "-s", "work",
                    "-x", "120", "-y", "30", "env PS1='agent$ ' bash --norc --noprofile"],
                   check=True)
    wait_until(lambda: "agent$" in client.run("capture-pane", "-p", "-t", "work:0.0").stdout)
    yield client
    subprocess.run(["tmux", "-S", socket, "kill-server"], capture_output=True)


@pytest.fixture(scope="session")
def xvfb_display(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real X server (Xvfb) on a free display number."""
    need("Xvfb", "xdpyinfo", "xterm", "xdotool", "xwininfo")
    # -displayfd: Xvfb picks a free display number itself; -noreset: it must not reset
    # when its last client (xdpyinfo below) disconnects, or the next client can fail.
    read_fd, write_fd = os.pipe()
    proc = subprocess.Popen(["Xvfb", "-displayfd", str(write_fd), "-screen", "0", "1024x768x24",
                             "-nolisten", "tcp", "-noreset"], pass_fds=(write_fd,),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write_fd)
    with os.fdopen(read_fd) as pipe:
        display = ":" + pipe.readline().strip()
    env = {**os.environ, "DISPLAY": display}
    wait_until(lambda: subprocess.run(["xdpyinfo"], env=env, capture_output=True).returncode == 0,
               timeout=15)
    yield display
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture
def xterm(xvfb_display: str, tmp_path: Path) -> Iterator[Callable[[str, str], int]]:
    """``xterm(title, script)``: start an xterm running ``sh -c script``; its window id."""
    procs: list[subprocess.Popen[bytes]] = []
    env = {**os.environ, "DISPLAY": xvfb_display}

    def start(title: str, script: str) -> int:
        procs.append(subprocess.Popen(
            ["xterm", "-T", title, "-geometry", "80x24+10+10", "-fa", "", "-fn", "fixed",
             "-e", "sh", "-c", script], env=env, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL))

        def find() -> int | None:
            done = subprocess.run(["xdotool", "search", "--name", title], env=env,
                                  capture_output=True, text=True)
            ids = [int(x) for x in done.stdout.split()]
            return ids[0] if ids else None

        return wait_until(find, timeout=15)

    yield start
    for proc in procs:
        proc.kill()
        proc.wait()


class Recorder(BaseHTTPRequestHandler):
    """A request handler that records requests and answers from a script."""

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _answer(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        server: LocalServer = self.server.owner  # type: ignore[attr-defined]
        server.requests.append({"method": self.command, "path": self.path,
                                "headers": {k.lower(): v for k, v in self.headers.items()},
                                "body": body})
        status, headers, payload = server.respond(self.command, self.path, body)
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = _answer


class LocalServer:
    """A real HTTP server on 127.0.0.1 in a thread; ``respond(method, path, body)`` ->
    (status, headers, bytes) decides each answer."""

    def __init__(self, respond: Callable[[str, str, bytes], tuple[int, dict[str, str], bytes]]):
        self.respond = respond
        self.requests: list[dict[str, Any]] = []
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
        self.httpd.owner = self  # type: ignore[attr-defined]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def local_server() -> Iterator[Callable[..., LocalServer]]:
    """``local_server(respond)``: start a LocalServer; stopped at teardown."""
    made: list[LocalServer] = []

    def make(respond: Callable[[str, str, bytes], tuple[int, dict[str, str], bytes]]) -> LocalServer:
        server = LocalServer(respond)
        made.append(server)
        return server

    yield make
    for server in made:
        server.close()


def json_answer(status: int, data: Any) -> tuple[int, dict[str, str], bytes]:
    """An HTTP answer with a JSON body."""
    return status, {"content-type": "application/json"}, json.dumps(data).encode()


@pytest.fixture
def make_scheduler(tmp_path: Path) -> Iterator[Callable[..., WaitScheduler]]:
    """``make_scheduler(**kwargs)``: a started WaitScheduler whose files live in tmp_path
    (allowed root) and whose jobs persist to tmp_path/jobs.json; closed at teardown."""
    made: list[WaitScheduler] = []

    def make(policy: WaitPolicy | None = None, **kwargs: Any) -> WaitScheduler:
        policy = policy or WaitPolicy(allowed_roots=(tmp_path,), allow_spawn=True)
        kwargs.setdefault("jobs", JsonFileJobStore(tmp_path / "jobs.json"))
        kwargs.setdefault("kit", WatcherKit(policy))
        sched = WaitScheduler(policy=policy, **kwargs)
        sched.start()
        made.append(sched)
        return sched

    yield make
    for sched in made:
        if sched._thread is not None and sched._thread.is_alive():
            sched.close()
