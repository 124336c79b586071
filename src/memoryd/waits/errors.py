"""Errors of the waits layer, named after the condition.

    memoryd.errors.InvalidInput
    └── InvalidWait             a wait request that cannot be started (nothing was started)
        ├── TargetNotFound      the target does not exist (window, tmux pane, pid, file root)
        └── TargetNotAllowed    the target exists but policy forbids it (path outside the
                                allowed roots, link-local/metadata address, scheme)
    memoryd.errors.MemorydError
    ├── WaitNotFound            no wait job has that id (LookupError)
    └── WatcherFailed           a watcher could not observe its target any more
"""

from __future__ import annotations

from memoryd.errors import InvalidInput, MemorydError


class InvalidWait(InvalidInput):
    """A wait request was refused before anything was started."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class TargetNotFound(InvalidWait):
    """The named target (window, pane, process, file root) does not exist."""


class TargetNotAllowed(InvalidWait):
    """The target exists but the wait policy forbids watching it."""


class WaitNotFound(MemorydError, LookupError):
    """No wait job has the given id."""

    def __init__(self, job_id: str) -> None:
        super().__init__(f"no wait job with id {job_id!r}")
        self.job_id = job_id


class WatcherFailed(MemorydError):
    """A watcher lost its target (a deleted pane, a dead X display, ...)."""
