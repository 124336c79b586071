"""Real things for the waits bench: a private tmux server, an Xvfb display with xterm,
local HTTP servers (in this process), and a scheduler with its files in a temp dir."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from memoryd.waits import WaitPolicy, WaitScheduler, WatcherKit
from memoryd.waits.watchers.tmux import TmuxClient


def have(*binaries: str) -> bool:
    """Whether every binary is installed."""
    return all(shutil.which(b) for b in binaries)


def poll_until(predicate: Callable[[], Any], timeout: float = 15.0) -> Any:
    """Wait until ``predicate`` is truthy; raise after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(0.05)
    raise TimeoutError("condition not met")


class Tmux:
    """A private tmux server with one session of many windows running bash."""

    def __init__(self, root: Path) -> None:
        self.socket = str(root / "tmux.sock")
        self.client = TmuxClient(self.socket, pipe_dir=root / "pipes")
        self._cmd = "env PS1='bench$ ' bash --norc --noprofile"
        subprocess.run(["tmux", "-S", self.socket, "-f", "/dev/null", "new-session", "-d", "-s",
                        "b", "-x", "120", "-y", "30", self._cmd], check=True)

    def new_window(self, index: int) -> str:
        """A new window; returns its pane target once its prompt shows."""
        if index:
            self.client.run("new-window", "-t", f"b:{index}", self._cmd)
        pane = f"b:{index}.0"
        poll_until(lambda: "bench$" in self.client.run("capture-pane", "-p", "-t", pane).stdout)
        return pane

    def type(self, pane: str, text: str) -> None:
        """Type a command line into a pane."""
        self.client.run("send-keys", "-t", pane, text, "Enter")

    def close(self) -> None:
        """Kill the server."""
        subprocess.run(["tmux", "-S", self.socket, "kill-server"], capture_output=True)


class Xvfb:
    """A real X server on a free display number, with xterm windows."""

    def __init__(self) -> None:
        # -displayfd: Xvfb picks a free display number itself and writes it to the pipe
        # (no race with other X servers on a shared machine); -noreset: it must not reset
        # when its last client disconnects, or the next client (xterm) can fail.
        read_fd, write_fd = os.pipe()
        self.proc = subprocess.Popen(["Xvfb", "-displayfd", str(write_fd), "-screen", "0",
                                      "1024x768x24", "-nolisten", "tcp", "-noreset"],
                                     pass_fds=(write_fd,), stderr=subprocess.DEVNULL)
        os.close(write_fd)
        with os.fdopen(read_fd) as pipe:
            self.display = ":" + pipe.readline().strip()
        self.env = {**os.environ, "DISPLAY": self.display}
        self.terms: list[subprocess.Popen[bytes]] = []
        poll_until(lambda: subprocess.run(["xdpyinfo"], env=self.env,
                                          capture_output=True).returncode == 0)

    def xterm(self, title: str, script: str) -> int:
        """Start an 80x24 xterm running ``sh -c script``; its window id."""
        self.terms.append(subprocess.Popen(
            ["xterm", "-T", title, "-geometry", "80x24+10+10", "-fa", "", "-fn", "fixed",
             "-e", "sh", "-c", script], env=self.env))

        def find() -> int | None:
            out = subprocess.run(["xdotool", "search", "--name", title], env=self.env,
                                 capture_output=True, text=True).stdout.split()
            return int(out[0]) if out else None

        return poll_until(find)

    def close(self) -> None:
        """Stop the terminals and the server."""
        for term in self.terms:
            term.kill()
            term.wait()
        self.proc.terminate()
        self.proc.wait()


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def _answer(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        status, payload = self.server.respond(self.command, body)  # type: ignore[attr-defined]
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = _answer


def http_server(respond: Callable[[str, bytes], tuple[int, Any]]) -> tuple[str, Callable[[], None]]:
    """Start a local server; (base URL, stop function)."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.respond = respond  # type: ignore[attr-defined]
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    host, port = httpd.server_address[:2]

    def stop() -> None:
        httpd.shutdown()
        httpd.server_close()

    return f"http://{host}:{port}", stop


def scheduler(root: Path, tmux: Tmux | None = None, display: str | None = None,
              **kwargs: Any) -> WaitScheduler:
    """A started scheduler allowed to watch files under ``root`` and to spawn commands."""
    policy = kwargs.pop("policy", None) or WaitPolicy(
        allowed_roots=(root,), allow_spawn=True, display=display, vision=True,
        tmux_socket=tmux.socket if tmux else None)
    kit = kwargs.pop("kit", None) or WatcherKit(policy, tmux=tmux.client if tmux else None)
    sched = WaitScheduler(policy=policy, kit=kit, **kwargs)
    sched.start()
    return sched
