"""Screen and window watcher: capture, gate, and hand worthwhile frames to the judge.

Each check grabs one frame (cheap: a few ms) and compares it with the last frame that
was judged; only when the diff gate opens (see :mod:`memoryd.waits.diffgate`) does the
frame go to the judge for OCR and, when needed, the vision model. At most one frame per
wait is with the judge at a time. Text criteria match only lines that were not on the
screen when the wait started (the first judged frame sets that baseline), so text that
was already showing does not resolve the wait at once; a ``condition`` is judged on
every frame that passes the gate, the first one included.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from memoryd.waits.capture import Region, ScreenGrabber, find_window, window_region
from memoryd.waits.criteria import Criteria
from memoryd.waits.diffgate import FlickerMask, GateParams, diff_frames, gate_opens
from memoryd.waits.errors import WatcherFailed
from memoryd.waits.judge import Judgement
from memoryd.waits.model import Observation, Verdict
from memoryd.waits.watchers.base import Timer, excerpt

MAX_BASELINE = 400


class ScreenWatcher:
    """Watches the whole screen (``window`` None) or one window by id or title."""

    def __init__(self, grabber: ScreenGrabber, criteria: Criteria, *,
                 window_id: int | None = None, title: str | None = None,
                 gate: GateParams = GateParams(), use_gate: bool = True,
                 cursor: dict[str, Any] | None = None) -> None:
        cursor = cursor or {}
        self.grabber, self.criteria, self.gate, self.use_gate = grabber, criteria, gate, use_gate
        if window_id is None and title is not None:
            window_id = find_window(title, grabber.display)
        self.window_id = cursor.get("window_id", window_id)
        self.region: Region | None = None
        if self.window_id is not None:
            self.region = window_region(self.window_id, grabber.display)
        baseline = cursor.get("baseline")
        self.baseline: set[str] | None = set(baseline) if baseline is not None else None
        self._reference: np.ndarray | None = None
        self._previous: np.ndarray | None = None
        self.flicker = FlickerMask(gate)
        self.in_flight = False
        self.captured = 0
        self.passed = 0

    def _grab(self) -> np.ndarray:
        if self.window_id is not None:
            self.region = window_region(self.window_id, self.grabber.display)
        return self.grabber.grab(self.region)

    def check(self) -> Observation:
        """Grab a frame; attach it for judging when it passed the gate."""
        with Timer() as t:
            try:
                frame = self._grab()
            except WatcherFailed as exc:
                return Observation(ended=True, error=str(exc), changed=True)
            self.captured += 1
            self.flicker.add(frame)
            ignore = self.flicker.mask
            changed = self._previous is None or gate_opens(
                diff_frames(self._previous, frame, self.gate, ignore), GateParams(min_changed_tiles=1))
            self._previous = frame
            diff = (None if self._reference is None
                    else diff_frames(self._reference, frame, self.gate, ignore))
            worth = diff is None or not self.use_gate or gate_opens(diff, self.gate)
        detail = {"changed_tiles": diff.changed_tiles if diff else None,
                  "pixel_fraction": round(diff.pixel_fraction, 5) if diff else None}
        if not worth or self.in_flight:
            return Observation(changed=changed, cost_ms=t.ms, detail=detail)
        self.passed += 1
        self._reference = frame
        self.in_flight = True
        return Observation(changed=changed, cost_ms=t.ms, detail=detail, frame=frame)

    def new_text(self, lines: list[str]) -> str | None:
        """The first OCR line not on the screen at the start that satisfies the criteria."""
        if self.baseline is None:
            return None  # the first frame only sets the baseline
        return self.criteria.first_match(line for line in lines if line not in self.baseline)

    def judged(self, judgement: Judgement) -> Observation:
        """Turn the judge's answer into an observation (scheduler thread)."""
        self.in_flight = False
        if self.baseline is None and self.criteria.wants_text and judgement.via != "error":
            self.baseline = set(judgement.lines[:MAX_BASELINE])
        matched = judgement.verdict is Verdict.YES
        # A verdict is not a change on screen: only PARTIAL (a burst) may speed polling up.
        return Observation(matched=matched, seen=excerpt(judgement.reason), changed=False,
                           cost_ms=judgement.cost_ms, verdict=judgement.verdict,
                           detail={"via": judgement.via})

    def cursor(self) -> dict[str, Any]:
        """The window id and the baseline text (so a restart does not re-read old text)."""
        return {"window_id": self.window_id,
                "baseline": sorted(self.baseline) if self.baseline is not None else None}

    def wake_fd(self) -> int | None:
        """Polled."""
        return None

    def close(self, final: bool = True) -> None:
        """Nothing held but the shared grabber."""
