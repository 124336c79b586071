"""X11 capture: find a window (by id or title), and grab it or the whole screen with mss.

Windows are found with ``xdotool search --name`` and located with ``xwininfo`` (Debian
packages xdotool and x11-utils); pixels come from ``mss`` for the window's rectangle
on the root window (what is on screen there, so a window covered by another shows the
other one). Frames are H x W x 3 RGB uint8 arrays.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

import numpy as np

from memoryd.waits.errors import TargetNotFound, WatcherFailed


@dataclass(frozen=True)
class Region:
    """A rectangle on the screen."""

    left: int
    top: int
    width: int
    height: int


def _run(cmd: list[str], display: str | None) -> subprocess.CompletedProcess[str]:
    env = None
    if display:
        import os

        env = {**os.environ, "DISPLAY": display}
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=10, env=env)
    except FileNotFoundError:
        raise WatcherFailed(f"{cmd[0]} is not installed (Debian: xdotool, x11-utils)") from None


def find_window(title: str, display: str | None) -> int:
    """The id of the first window whose title contains ``title``; TargetNotFound if none."""
    done = _run(["xdotool", "search", "--name", re.escape(title)], display)
    ids = [int(x) for x in done.stdout.split() if x.isdigit()]
    if not ids:
        raise TargetNotFound("target", f"no X11 window titled like {title!r} on {display}")
    return ids[0]


def window_region(window_id: int, display: str | None) -> Region:
    """Where the window is on the screen; TargetNotFound when it does not exist."""
    done = _run(["xwininfo", "-id", str(window_id)], display)
    if done.returncode != 0:
        raise TargetNotFound("target", f"no X11 window {hex(window_id)} on {display}")
    fields = dict(re.findall(r"^\s*([A-Za-z -]+):\s+(-?\d+)\s*$", done.stdout, re.M))
    try:
        return Region(int(fields["Absolute upper-left X"]), int(fields["Absolute upper-left Y"]),
                      int(fields["Width"]), int(fields["Height"]))
    except KeyError:
        raise WatcherFailed(f"xwininfo gave no geometry for {hex(window_id)}") from None


class ScreenGrabber:
    """Grabs frames from one X display (opened lazily, kept open)."""

    def __init__(self, display: str | None) -> None:
        self.display = display
        self._sct = None

    def _open(self):  # noqa: ANN202 - mss's own type
        if self._sct is None:
            import mss

            try:
                self._sct = mss.MSS(display=self.display) if hasattr(mss, "MSS") else mss.mss(
                    display=self.display)
            except Exception as exc:  # mss raises ScreenShotError for a display it cannot open
                raise WatcherFailed(f"cannot open X display {self.display}: {exc}") from None
        return self._sct

    def screen_region(self) -> Region:
        """The whole screen (all monitors)."""
        mon = self._open().monitors[0]
        return Region(mon["left"], mon["top"], mon["width"], mon["height"])

    def grab(self, region: Region | None = None) -> np.ndarray:
        """An RGB frame of ``region`` (clipped to the screen) or of the whole screen."""
        screen = self.screen_region()
        r = region or screen
        left, top = max(r.left, screen.left), max(r.top, screen.top)
        right = min(r.left + r.width, screen.left + screen.width)
        bottom = min(r.top + r.height, screen.top + screen.height)
        if right <= left or bottom <= top:
            raise WatcherFailed("the window is entirely off screen")
        shot = self._open().grab({"left": left, "top": top, "width": right - left,
                                  "height": bottom - top})
        bgra = np.frombuffer(shot.raw, dtype=np.uint8).reshape(shot.height, shot.width, 4)
        return bgra[..., 2::-1].copy()

    def close(self) -> None:
        """Close the display connection."""
        if self._sct is not None:
            self._sct.close()
            self._sct = None
