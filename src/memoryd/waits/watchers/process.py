"""Process watchers: a pid, or a command memoryd starts, until it exits (with its code).

A pid is identified by (pid, start time) so a recycled pid is never mistaken for the
process the wait was started on; the exit code of a process that is not memoryd's own
child cannot be known (the kernel tells only its parent) and is reported as None.
Exits are noticed at once through a pidfd (Linux ≥ 5.3) that the scheduler selects on.
"""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Any

import psutil

from memoryd.waits.criteria import Criteria
from memoryd.waits.errors import TargetNotFound
from memoryd.waits.model import Observation
from memoryd.waits.watchers.base import Timer


def open_pidfd(pid: int) -> int | None:
    """A pidfd for ``pid`` (readable once it exits), or None where unsupported."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def exit_observation(criteria: Criteria, code: int | None, cost_ms: float) -> Observation:
    """What an exit means for the criteria: a match, or the end of a wait that can no
    longer match (an exit with the wrong code, or an exit when text was awaited)."""
    shown = "exited" if code is None else f"exited with code {code}"
    if criteria.exits and (criteria.exit_code is None or criteria.exit_code == code):
        return Observation(matched=True, seen=shown, changed=True, cost_ms=cost_ms,
                           detail={"exit_code": code})
    why = shown if not criteria.exits else f"{shown}, expected {criteria.exit_code}"
    return Observation(seen=shown, changed=True, cost_ms=cost_ms, ended=True,
                       error=f"process {why}", detail={"exit_code": code})


class PidWatcher:
    """Resolves when a running process (not necessarily memoryd's child) exits."""

    def __init__(self, pid: int, criteria: Criteria, cursor: dict[str, Any] | None = None) -> None:
        self.pid, self.criteria = pid, criteria
        cursor = cursor or {}
        self.start_time: float | None = cursor.get("start_time")
        if self.start_time is None:
            try:
                self.start_time = psutil.Process(pid).create_time()
            except psutil.NoSuchProcess:
                raise TargetNotFound("target", f"no process with pid {pid}") from None
        self._fd = open_pidfd(pid)

    def _alive(self) -> bool:
        try:
            proc = psutil.Process(self.pid)
            return (proc.create_time() == self.start_time
                    and proc.status() != psutil.STATUS_ZOMBIE)
        except psutil.NoSuchProcess:
            return False

    def check(self) -> Observation:
        """Whether the process is still there."""
        with Timer() as t:
            alive = self._alive()
        if alive:
            return Observation(seen=f"pid {self.pid} running", cost_ms=t.ms)
        return exit_observation(self.criteria, None, t.ms)

    def cursor(self) -> dict[str, Any]:
        """The pid and its start time."""
        return {"pid": self.pid, "start_time": self.start_time}

    def wake_fd(self) -> int | None:
        """The pidfd: readable when the process exits."""
        return self._fd

    def close(self, final: bool = True) -> None:
        """Close the pidfd."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class CommandWatcher:
    """Starts a command (output discarded, new session) and resolves when it exits."""

    def __init__(self, argv: list[str], criteria: Criteria, cwd: str | None = None) -> None:
        self.criteria = criteria
        try:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, start_new_session=True, cwd=cwd)
        except OSError as exc:
            raise TargetNotFound("target", f"cannot start {argv[0]!r}: {exc.strerror}") from None
        self._fd = open_pidfd(self.proc.pid)
        self.start_time = psutil.Process(self.proc.pid).create_time()

    def check(self) -> Observation:
        """Whether the command has exited, and with which code."""
        with Timer() as t:
            code = self.proc.poll()
        if code is None:
            return Observation(seen=f"pid {self.proc.pid} running", cost_ms=t.ms)
        return exit_observation(self.criteria, code, t.ms)

    def cursor(self) -> dict[str, Any]:
        """The child's pid and start time: after a restart it is watched as a pid."""
        return {"pid": self.proc.pid, "start_time": self.start_time}

    def wake_fd(self) -> int | None:
        """The child's pidfd."""
        return self._fd

    def close(self, final: bool = True) -> None:
        """At the end of the wait (cancel, timeout) stop the command if it still runs;
        a scheduler shutting down leaves it running so the resumed wait can see it exit."""
        if final and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
