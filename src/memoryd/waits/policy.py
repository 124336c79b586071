"""What a wait may watch (:class:`WaitPolicy`) and how often it looks (:class:`PollingLadder`).

Adaptive polling follows one rule for every target, with a ladder of intervals per kind:
a check that saw a change polls again at ``changed``; a PARTIAL verdict starts a burst of
``partial`` polls for ``burst_s``; a target that stays static polls at ``static`` and, once
static for ``long_static_after`` seconds, at ``long_static``.

Text targets (files, terminals, processes) are cheap to check, so their ladder stays under
one second (a p50 detection latency under 1 s at the defaults); screens follow the slower
ladder of frame capture (5 s static, 1.5 s changing, 0.5 s burst, 15 s long static).

>>> next_interval(LADDERS["screen"], since_change_s=45.0, changed=False, bursting=False)
15.0
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class PollingLadder:
    """Polling intervals (seconds) of one kind of target."""

    changed: float
    static: float
    partial: float
    long_static: float
    long_static_after: float
    burst_s: float = 10.0


LADDERS: dict[str, PollingLadder] = {
    "text": PollingLadder(changed=0.25, static=0.5, partial=0.25, long_static=1.0,
                          long_static_after=30.0),
    "process": PollingLadder(changed=0.5, static=0.5, partial=0.5, long_static=1.0,
                             long_static_after=30.0),
    "http": PollingLadder(changed=1.0, static=2.0, partial=1.0, long_static=5.0,
                          long_static_after=60.0),
    "screen": PollingLadder(changed=1.5, static=5.0, partial=0.5, long_static=15.0,
                            long_static_after=30.0),
}


def next_interval(
    ladder: PollingLadder, *, since_change_s: float, changed: bool, bursting: bool
) -> float:
    """Seconds until the next check of a target, given what the last check saw."""
    if bursting:
        return ladder.partial
    if changed:
        return ladder.changed
    if since_change_s >= ladder.long_static_after:
        return ladder.long_static
    return ladder.static


def _home_roots() -> tuple[Path, ...]:
    return (Path.home(),)


@dataclass(frozen=True)
class WaitPolicy:
    """Limits every wait request is checked against (read once by the composition root).

    allowed_roots: files may be watched only under these directories (default: the
    user's home). allow_link_local: let http targets reach link-local and cloud metadata
    addresses (off: an agent must not read instance credentials through a wait).
    display: the X display of screen/window targets (default ``$DISPLAY``).
    tmux_socket: a tmux server socket path (``tmux -S``); None = the default server.
    vision: a vision endpoint is configured (natural-language screen criteria need it).
    allow_spawn: pty:/command: targets may start commands (off by default: a key that may
    write memories should not thereby be able to run programs on the host).
    denied_paths: never watched, whatever the roots: memoryd's own files (the store and its
    journal files, the home directory, the config file). A path here denies itself, what
    is under it, and siblings that extend its name (``memoryd.db-wal``).
    denied_dirs: directory names never watched in, whatever the roots: memoryd's own
    directories inside projects (``.knowledge``, whose graph file mirrors every agent's
    nodes of the project).
    confined_roots: the only roots a *confined* request (one from a key bound to a scope or
    agent) may watch files under; empty means none. Such a request may not watch terminals,
    windows, the screen or commands either, and its URLs must reach public addresses.
    """

    allowed_roots: tuple[Path, ...] = field(default_factory=_home_roots)
    min_timeout_s: float = 1.0
    max_timeout_s: float = 7 * 24 * 3600.0
    allow_link_local: bool = False
    display: str | None = field(default_factory=lambda: os.environ.get("DISPLAY"))
    tmux_socket: str | None = None
    vision: bool = False
    allow_spawn: bool = False
    max_watching: int = 200
    denied_paths: tuple[Path, ...] = ()
    denied_dirs: tuple[str, ...] = ()
    confined_roots: tuple[Path, ...] = ()
    ladders: dict[str, PollingLadder] = field(default_factory=lambda: dict(LADDERS))
