"""Terminal watcher for a tmux pane: the pane's NEW output, never the echoed command.

The watcher asks tmux to copy everything the pane prints from now on into a file
(``pipe-pane``) and tails that file; matching runs on those lines only, so text already
on the screen, and scrollback that tmux drops at its history limit, play no part. The
command line a shell echoes when a command is typed is recognised by the prompt that was
left of the cursor when the wait started (see :class:`PromptFilter`) and skipped.

The pipe is run by the tmux server, so output printed while memoryd is down lands in
the file and a restarted watcher resumes from its saved offset. Several waits on one
pane share one pipe; it is closed when the last of them ends. A pane that already has
a pipe of someone else's cannot be watched (tmux allows one pipe per pane).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

from memoryd.waits.criteria import Criteria
from memoryd.waits.errors import InvalidWait, TargetNotFound, WatcherFailed
from memoryd.waits.model import Observation
from memoryd.waits.watchers.base import Timer, excerpt
from memoryd.waits.watchers.file import FileTail
from memoryd.waits.watchers.termtext import PromptFilter, render_lines

_INFO = "#{pane_id}\t#{pane_pipe}\t#{pane_dead}\t#{cursor_x}\t#{cursor_y}"


def default_pipe_dir() -> Path:
    """Where pane pipes are written: ``$XDG_RUNTIME_DIR/memoryd-waits`` or a temp dir."""
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return Path(base) / f"memoryd-waits-{os.getuid()}"


class TmuxClient:
    """The tmux CLI on one server (``-S socket`` or the default), plus shared pane pipes."""

    def __init__(self, socket: str | None = None, pipe_dir: Path | None = None) -> None:
        self.socket = socket
        self.pipe_dir = pipe_dir or default_pipe_dir()
        self._pipes: dict[str, int] = {}
        self._lock = threading.Lock()

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run one tmux command; raises WatcherFailed when tmux fails and check is set."""
        cmd = ["tmux", *(("-S", self.socket) if self.socket else ()), *args]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
        except FileNotFoundError:
            raise WatcherFailed("tmux is not installed") from None
        if check and done.returncode != 0:
            raise WatcherFailed(f"tmux {args[0]}: {done.stderr.strip() or done.returncode}")
        return done

    def pane_info(self, pane: str) -> dict[str, Any] | None:
        """id, pipe, dead, cursor_x, cursor_y of a pane; None when it does not exist."""
        done = self.run("display-message", "-p", "-t", pane, _INFO, check=False)
        if done.returncode != 0 or not done.stdout.strip():
            return None
        pane_id, pipe, dead, cx, cy = done.stdout.rstrip("\n").split("\t")
        return {"id": pane_id, "pipe": pipe == "1", "dead": dead == "1",
                "cursor_x": int(cx), "cursor_y": int(cy)}

    def cursor_prompt(self, pane_id: str, cursor_x: int, cursor_y: int) -> str:
        """The text left of the cursor on its row (the shell prompt when idle)."""
        row = str(cursor_y)
        done = self.run("capture-pane", "-p", "-t", pane_id, "-S", row, "-E", row, check=False)
        return done.stdout.rstrip("\n")[:cursor_x] if done.returncode == 0 else ""

    def pipe_path(self, pane_id: str) -> Path:
        """The file a pane's pipe writes to."""
        return self.pipe_dir / f"pane-{pane_id.lstrip('%')}.log"

    def acquire_pipe(self, pane_id: str, has_pipe: bool) -> Path:
        """Start (or share) the pipe of a pane; returns the file it writes to."""
        path = self.pipe_path(pane_id)
        with self._lock:
            if pane_id not in self._pipes:
                if has_pipe and not path.exists():
                    raise InvalidWait("target", f"tmux pane {pane_id} already has a pipe-pane "
                                      "of its own; memoryd cannot watch it")
                if not has_pipe:
                    self.pipe_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
                    path.touch(mode=0o600)
                    command = f"exec cat >> {shlex.quote(str(path))}"
                    self.run("pipe-pane", "-t", pane_id, command)
            self._pipes[pane_id] = self._pipes.get(pane_id, 0) + 1
        return path

    def release_pipe(self, pane_id: str, close: bool = True) -> None:
        """Drop one user of a pane's pipe; the last one closes it and removes the file
        (unless ``close`` is False: a scheduler stopping keeps it for its restart)."""
        with self._lock:
            left = self._pipes.get(pane_id, 0) - 1
            if left > 0:
                self._pipes[pane_id] = left
                return
            self._pipes.pop(pane_id, None)
        if not close:
            return
        self.run("pipe-pane", "-t", pane_id, check=False)  # no command = close the pipe
        self.pipe_path(pane_id).unlink(missing_ok=True)


def find_pane(client: TmuxClient, pane: str) -> dict[str, Any]:
    """The pane's info; raises TargetNotFound when there is no such pane."""
    info = client.pane_info(pane)
    if info is None:
        raise TargetNotFound("target", f"no tmux pane {pane!r} on this tmux server")
    return info


class TmuxPaneWatcher:
    """Resolves when a new line of a pane's output matches the criteria."""

    def __init__(self, client: TmuxClient, pane: str, criteria: Criteria,
                 cursor: dict[str, Any] | None = None) -> None:
        self.client, self.criteria = client, criteria
        cursor = cursor or {}
        info = find_pane(client, cursor.get("pane_id", pane))
        self.pane_id = info["id"]
        prompt = cursor.get("prompt")
        if prompt is None:
            prompt = client.cursor_prompt(self.pane_id, info["cursor_x"], info["cursor_y"])
        self.filter = PromptFilter(prompt)
        # The pipe starts mid-row: the rest of the cursor's row is whatever gets typed at
        # the prompt, so the first line it delivers is an echo when a prompt was showing.
        self.echo_pending = cursor.get("echo_pending", bool(self.filter.prompt))
        path = client.acquire_pipe(self.pane_id, info["pipe"])
        self._released = False
        self.tail = FileTail(str(path), inode=cursor.get("inode"), offset=cursor.get("offset"))
        self.tail.release_partial = not self.echo_pending
        self._checks = 0

    def check(self) -> Observation:
        """Read the pane's new output and match it."""
        with Timer() as t:
            raw, changed = self.tail.read_lines()
            if self.echo_pending and raw:
                raw, self.echo_pending = raw[1:], False
                self.tail.release_partial = True
            lines = [line for line in render_lines(raw) if line.strip()]
            kept = [line for line in lines if self.filter.keep(line)]
            hit = self.criteria.first_match(kept)
            ended = None
            self._checks += 1
            if not changed and self._checks % 20 == 0 and self.client.pane_info(self.pane_id) is None:
                ended = f"tmux pane {self.pane_id} is gone"
        seen = hit if hit is not None else (kept[-1] if kept else "")
        return Observation(matched=hit is not None, seen=excerpt(seen), changed=changed,
                           cost_ms=t.ms, ended=ended is not None and hit is None, error=ended,
                           detail={"new_lines": len(kept), "echo_lines": len(lines) - len(kept)})

    def cursor(self) -> dict[str, Any]:
        """Pane id, the prompt seen at the start, and how far the pipe file was read."""
        return {"pane_id": self.pane_id, "prompt": self.filter.prompt,
                "echo_pending": self.echo_pending, "inode": self.tail.inode,
                "offset": self.tail.offset - len(self.tail._pending)}

    def wake_fd(self) -> int | None:
        """Polled (the pipe file is cheap to stat)."""
        return None

    def close(self, final: bool = True) -> None:
        """Stop tailing; at the end of the wait (``final``) close the pane's pipe when no
        other wait uses it. A scheduler shutting down keeps the pipe, so output printed
        while memoryd is down is still there when it resumes."""
        self.tail.close()
        if not self._released:
            self._released = True
            self.client.release_pipe(self.pane_id, close=final)
