"""Watchers, one per kind of target, behind one interface (:class:`Watcher`), and the
factory that builds the right one for a parsed target."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memoryd.waits.capture import ScreenGrabber
from memoryd.waits.criteria import Criteria
from memoryd.waits.diffgate import GateParams
from memoryd.waits.errors import WatcherFailed
from memoryd.waits.policy import WaitPolicy
from memoryd.waits.targets import Target
from memoryd.waits.watchers.base import Watcher
from memoryd.waits.watchers.file import FileWatcher
from memoryd.waits.watchers.http import HttpWatcher
from memoryd.waits.watchers.process import CommandWatcher, PidWatcher
from memoryd.waits.watchers.pty import PtyCommandWatcher
from memoryd.waits.watchers.screen import ScreenWatcher
from memoryd.waits.watchers.tmux import TmuxClient, TmuxPaneWatcher

__all__ = ["WatcherKit", "Watcher", "build_watcher"]


@dataclass
class WatcherKit:
    """What watchers share: the policy, one tmux client, one X grabber, the gate."""

    policy: WaitPolicy
    tmux: TmuxClient | None = None
    gate: GateParams = field(default_factory=GateParams)
    use_gate: bool = True
    _grabber: ScreenGrabber | None = None

    def __post_init__(self) -> None:
        if self.tmux is None:
            self.tmux = TmuxClient(self.policy.tmux_socket)

    @property
    def grabber(self) -> ScreenGrabber:
        """The X grabber of the policy's display (opened on first use)."""
        if self._grabber is None:
            self._grabber = ScreenGrabber(self.policy.display)
        return self._grabber

    def close(self) -> None:
        """Close the X connection."""
        if self._grabber is not None:
            self._grabber.close()


def build_watcher(target: Target, criteria: Criteria, kit: WatcherKit,
                  cursor: dict[str, Any] | None = None, *, confined: bool = False) -> Watcher:
    """The watcher of ``target``; with a ``cursor`` it resumes a persisted wait. A
    ``confined`` wait's URL must stay public at every request.

    Raises TargetNotFound when the target does not exist, WatcherFailed when a resumed
    wait cannot continue (a pty that died with the previous process).
    """
    kind, resuming = target.kind, bool(cursor)
    if kind == "file":
        return FileWatcher(str(target.path), criteria, cursor)
    if kind == "tmux":
        assert kit.tmux is not None
        return TmuxPaneWatcher(kit.tmux, target.pane, criteria, cursor)
    if kind == "pty":
        if resuming:
            raise WatcherFailed("the pty command ended with the memoryd process that started it")
        return PtyCommandWatcher(target.argv, criteria)
    if kind == "command":
        if resuming:  # no longer our child: watch it by pid (its exit code is then unknown)
            return PidWatcher(int(cursor["pid"]), criteria, cursor)  # type: ignore[index]
        return CommandWatcher(target.argv, criteria)
    if kind == "pid":
        return PidWatcher(target.pid, criteria, cursor)
    if kind == "http":
        return HttpWatcher(target.url, criteria, allow_link_local=kit.policy.allow_link_local,
                           public_only=confined)
    if kind in ("window", "screen"):
        window_id = target.window_id if kind == "window" else None
        title = target.value if kind == "window" and window_id is None else None
        return ScreenWatcher(kit.grabber, criteria, window_id=window_id, title=title,
                             gate=kit.gate, use_gate=kit.use_gate, cursor=cursor)
    raise WatcherFailed(f"no watcher for {kind!r}")
