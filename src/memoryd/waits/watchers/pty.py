"""Terminal watcher for a command memoryd starts in a pseudo-terminal.

The command runs under its own pty (so it line-buffers and prints progress as it would
for a person); everything it prints is new output, and nothing is echoed because no
shell typed it. The pty's master descriptor is the watcher's wake fd: the scheduler
checks as soon as output arrives. The command also ends the wait when it exits: a match
when the criteria ask for the exit, otherwise an error naming the exit code.

A pty dies with the process that holds its master, so such a wait cannot survive a
restart of memoryd: it resumes as an error saying so.
"""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Any

from memoryd.waits.criteria import Criteria
from memoryd.waits.errors import TargetNotFound
from memoryd.waits.model import Observation
from memoryd.waits.watchers.base import Timer, excerpt
from memoryd.waits.watchers.process import exit_observation
from memoryd.waits.watchers.termtext import render_lines

MAX_PENDING = 64 * 1024  # a line longer than this is matched in pieces


class PtyCommandWatcher:
    """Runs a command in a pty and matches its output lines."""

    def __init__(self, argv: list[str], criteria: Criteria, cwd: str | None = None,
                 columns: int = 200) -> None:
        self.criteria = criteria
        master, slave = os.openpty()
        os.set_blocking(master, False)
        env = {**os.environ, "COLUMNS": str(columns), "TERM": os.environ.get("TERM", "xterm")}
        try:
            self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave,
                                         start_new_session=True, cwd=cwd, env=env)
        except OSError as exc:
            os.close(master)
            raise TargetNotFound("target", f"cannot start {argv[0]!r}: {exc.strerror}") from None
        finally:
            os.close(slave)
        self._master: int | None = master
        self._pending = b""
        self._eof = False

    def _drain(self) -> bytes:
        chunks = []
        while self._master is not None:
            try:
                data = os.read(self._master, 65536)
            except BlockingIOError:
                break
            except OSError:  # EIO: every holder of the slave side has closed it
                data = b""
            if not data:
                self._eof = True
                break
            chunks.append(data)
        return b"".join(chunks)

    def _lines(self, data: bytes) -> list[str]:
        data = self._pending + data
        *complete, rest = data.split(b"\n")
        if self._eof or len(rest) > MAX_PENDING:
            complete.append(rest)  # the command is done: its last line counts
            rest = b""
        self._pending = rest
        text = [c.decode("utf-8", "replace") for c in complete]
        if rest:  # a prompt without newline ("Continue? [y/N]") still counts
            text.append(rest.decode("utf-8", "replace"))
        return [line for line in render_lines(text) if line.strip()]

    def check(self) -> Observation:
        """Read what the command printed since the last check; notice its exit."""
        with Timer() as t:
            data = self._drain()
            lines = self._lines(data)
            hit = self.criteria.first_match(lines)
            code = self.proc.poll() if self._eof or hit is None else None
        if hit is not None:
            return Observation(matched=True, seen=excerpt(hit), changed=True, cost_ms=t.ms)
        if code is not None and self._eof:
            self._close_master()
            return exit_observation(self.criteria, code, t.ms)
        return Observation(seen=excerpt(lines[-1]) if lines else "", changed=bool(data),
                           cost_ms=t.ms, detail={"new_lines": len(lines)})

    def cursor(self) -> dict[str, Any]:
        """The child's pid; a pty cannot be reattached after a restart."""
        return {"pid": self.proc.pid, "pty": True}

    def wake_fd(self) -> int | None:
        """The pty master: readable when the command prints (or exits)."""
        return None if self._eof else self._master

    def _close_master(self) -> None:
        if self._master is not None:
            os.close(self._master)
            self._master = None

    def close(self, final: bool = True) -> None:
        """Stop the command if it still runs and close the pty."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=5)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self._close_master()
