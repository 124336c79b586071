"""The one interface every watcher implements.

A watcher is built for one target and one criteria, and is checked by the scheduler's
thread only (never concurrently). ``check`` looks once and reports an
:class:`~memoryd.waits.model.Observation`; ``cursor`` returns the JSON-friendly resume
point that lets a restarted scheduler continue (a file offset, a tmux row); ``wake_fd``
optionally names a file descriptor that becomes readable when a check is worth doing
now (pty output, a process exit), so the scheduler need not poll for it.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from memoryd.cognition import secrets
from memoryd.waits.model import Observation

SCANNED = 4096  # lines are cut here before matching too


class Watcher(Protocol):
    """Checks one target against one criteria."""

    def check(self) -> Observation:
        """Look once; report whether the criteria hold, what was seen, and what it cost."""
        ...

    def cursor(self) -> dict[str, Any]:
        """Where to resume after a restart (JSON-friendly)."""
        ...

    def wake_fd(self) -> int | None:
        """A descriptor that turns readable when there is something to check, or None."""
        ...

    def close(self, final: bool = True) -> None:
        """Release what the watcher holds. ``final`` is False when the scheduler stops
        with the wait still watching: keep whatever lets a restart resume it."""
        ...


class Timer:
    """Measures a check's wall time: ``with Timer() as t: ...; t.ms``."""

    def __enter__(self) -> Timer:
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.ms = (time.perf_counter() - self._t0) * 1000.0


def excerpt(text: str, limit: int = 200) -> str:
    """One line of at most ``limit`` characters, for ``Observation.seen``, with credentials
    redacted: what a wait saw is stored, returned to the caller and sent in wake messages,
    while the criteria still match the text as it was."""
    flat = " ".join(text[:SCANNED].split())
    findings = secrets.scan(flat) if flat else []
    if findings:
        flat = secrets.redact(flat, findings)
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
