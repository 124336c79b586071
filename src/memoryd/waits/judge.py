"""The judge: one worker thread that does the expensive part of screen waits.

Frames that passed the diff gate are queued here so the scheduler's thread never blocks
on OCR or a model call. The worker takes every frame waiting at that moment (up to the
vision batch size), reads each with OCR when the criteria have text, and sends the
frames whose text did not settle the question to the vision model in ONE request. Vision
calls are therefore serialised (one at a time) and batched (frames of several jobs per
call). Results go back through each request's callback.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from memoryd.waits.model import Verdict
from memoryd.waits.ocr import ocr_lines
from memoryd.waits.vision import VisionClient


@dataclass(frozen=True)
class Judgement:
    """The answer about one frame: verdict, reason, how it was reached, and its cost."""

    verdict: Verdict
    reason: str
    via: str  # "ocr", "vision" or "error"
    lines: tuple[str, ...] = ()
    cost_ms: float = 0.0


@dataclass
class JudgeRequest:
    """One frame to judge. ``new_text(lines)`` returns the OCR line that satisfies the
    text criteria (or None); ``condition`` goes to the vision model when text did not."""

    job_id: str
    frame: np.ndarray
    ocr: bool
    condition: str | None
    new_text: Callable[[list[str]], str | None]
    done: Callable[[str, Judgement], None]
    queued_at: float = field(default_factory=time.monotonic)


@dataclass
class JudgeStats:
    """Counters for the bench and for wait_status."""

    frames: int = 0
    ocr_frames: int = 0
    vision_frames: int = 0
    vision_calls: int = 0


class FrameJudge:
    """Serialises OCR and vision over all screen waits (see the module docstring)."""

    def __init__(self, vision: VisionClient | None = None, max_batch: int = 4) -> None:
        self.vision = vision
        self.max_batch = max(1, vision.config.max_batch if vision else max_batch)
        self.stats = JudgeStats()
        self._queue: queue.Queue[JudgeRequest | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="memoryd-wait-judge", daemon=True)
        self._thread.start()

    def submit(self, request: JudgeRequest) -> None:
        """Queue a frame; its ``done`` callback runs on the judge's thread."""
        self._queue.put(request)

    def _take_batch(self) -> list[JudgeRequest] | None:
        first = self._queue.get()
        if first is None:
            return None
        batch = [first]
        while len(batch) < self.max_batch:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is None:
                self._queue.put(None)
                break
            batch.append(item)
        return batch

    def _run(self) -> None:
        while (batch := self._take_batch()) is not None:
            try:
                self._judge_batch(batch)
            except Exception as exc:  # noqa: BLE001 - a judge failure must not stop the thread
                for req in batch:
                    req.done(req.job_id, Judgement(Verdict.NO, f"judge failed: {exc}", "error"))

    def _judge_batch(self, batch: list[JudgeRequest]) -> None:
        for_vision: list[tuple[JudgeRequest, tuple[str, ...], float]] = []
        for req in batch:
            t0 = time.perf_counter()
            self.stats.frames += 1
            lines: tuple[str, ...] = ()
            if req.ocr:
                self.stats.ocr_frames += 1
                lines = tuple(ocr_lines(req.frame))
                hit = req.new_text(list(lines))
                if hit is not None:
                    ms = (time.perf_counter() - t0) * 1000
                    req.done(req.job_id, Judgement(Verdict.YES, f'text "{hit}"', "ocr", lines, ms))
                    continue
            if req.condition and self.vision is not None:
                for_vision.append((req, lines, t0))
            else:
                ms = (time.perf_counter() - t0) * 1000
                req.done(req.job_id, Judgement(Verdict.NO, "text not seen", "ocr", lines, ms))
        if for_vision:
            self._ask_vision(for_vision)

    def _ask_vision(self, items: list[tuple[JudgeRequest, tuple[str, ...], float]]) -> None:
        assert self.vision is not None
        self.stats.vision_calls += 1
        self.stats.vision_frames += len(items)
        try:
            answers = self.vision.judge([(req.frame, req.condition or "") for req, _, _ in items])
        except Exception as exc:  # noqa: BLE001 - reported per frame, the wait goes on
            answers = [(Verdict.NO, f"vision call failed: {exc}")] * len(items)
            via = "error"
        else:
            via = "vision"
        for (req, lines, t0), (verdict, reason) in zip(items, answers):
            ms = (time.perf_counter() - t0) * 1000
            req.done(req.job_id, Judgement(verdict, reason, via, lines, ms))

    def close(self) -> None:
        """Stop the worker after the frames already queued."""
        self._queue.put(None)
        self._thread.join(timeout=30)
        if self.vision is not None:
            self.vision.close()
