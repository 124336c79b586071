"""Screen and window waits on a real X server (Xvfb) with real xterm windows: capture,
the diff gate, local OCR, and the vision step against a local server speaking the
chat-completions protocol with image input."""

from __future__ import annotations

import base64
import io
import json
import threading
import time
from pathlib import Path

import pytest
from waits_fixtures import (  # noqa: F401 - fixtures
    json_answer,
    local_server,
    make_scheduler,
    need,
    wait_until,
    xterm,
    xvfb_display,
)

from memoryd.waits import (
    LADDERS,
    FrameJudge,
    PollingLadder,
    TargetNotFound,
    Verdict,
    VisionClient,
    VisionConfig,
    WaitPolicy,
    WaitRequest,
    WaitStatus,
)
from memoryd.waits.capture import ScreenGrabber, find_window, window_region
from memoryd.waits.diffgate import diff_frames, fixed_fraction_gate, gate_opens
from memoryd.waits.judge import JudgeRequest
from memoryd.waits.ocr import ocr_lines

FAST_SCREEN = PollingLadder(changed=0.3, static=0.5, partial=0.2, long_static=1.0,
                            long_static_after=30.0)


def screen_policy(tmp_path: Path, display: str, vision: bool = False) -> WaitPolicy:
    return WaitPolicy(allowed_roots=(tmp_path,), display=display, vision=vision,
                      ladders={**LADDERS, "screen": FAST_SCREEN})


def fake_vision_model(requests: list[dict]):
    """A stand-in for a vision model (none can run here) that reads the images it is sent:
    it decodes each base64 PNG and OCRs it, answering YES when the image shows FINISHED,
    PARTIAL when it shows a percentage, else NO, in the numbered-line format."""
    from PIL import Image

    def respond(method: str, path: str, body: bytes):
        assert method == "POST" and path == "/v1/chat/completions"
        data = json.loads(body)
        requests.append(data)
        parts = data["messages"][1]["content"]
        images = [p["image_url"]["url"] for p in parts if p["type"] == "image_url"]
        answers = []
        for n, url in enumerate(images, 1):
            header, b64 = url.split(",", 1)
            assert header == "data:image/png;base64"
            text = " ".join(ocr_lines(__import__("numpy").asarray(
                Image.open(io.BytesIO(base64.b64decode(b64))).convert("RGB"))))
            verdict = "YES" if "FINISHED" in text else "PARTIAL" if "%" in text else "NO"
            answers.append(f"{n}: {verdict} - the screen shows: {text[-60:]}")
        return json_answer(200, {"id": "c1", "object": "chat.completion", "model": data["model"],
                                 "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                     "role": "assistant", "content": "\n".join(answers)}}]})

    return respond


def test_window_capture_and_the_diff_gate(xvfb_display, xterm, tmp_path) -> None:
    fifo = tmp_path / "feed"
    import os
    os.mkfifo(fifo)
    wid = xterm("GateProbe", f"echo waiting; cat {fifo}; sleep 60")
    assert find_window("GateProbe", xvfb_display) == wid
    grabber = ScreenGrabber(xvfb_display)
    region = window_region(wid, xvfb_display)
    time.sleep(0.5)
    first = grabber.grab(region)
    assert first.shape == (region.height, region.width, 3)
    assert not gate_opens(diff_frames(first, grabber.grab(region)))  # nothing changed
    with open(fifo, "w") as feed:
        feed.write("compiling a.c\ncompiling b.c\n")
        feed.flush()
        time.sleep(0.6)
        after = grabber.grab(region)
    diff = diff_frames(first, after)
    assert gate_opens(diff)  # two short new lines open the tile gate
    assert not fixed_fraction_gate(diff, 0.01)  # ... and a fixed 1% pixel gate misses them
    grabber.close()


def test_missing_window_is_a_clear_error(xvfb_display, make_scheduler, tmp_path) -> None:
    sched = make_scheduler(screen_policy(tmp_path, xvfb_display))
    with pytest.raises(TargetNotFound, match="no X11 window titled like 'No Such Window'"):
        sched.submit(WaitRequest("window:No Such Window", "x", 10))
    with pytest.raises(TargetNotFound, match="no X11 window 0x7ffffff"):
        sched.submit(WaitRequest("window:0x7ffffff", "x", 10))
    assert sched.list() == []


def test_window_text_found_by_ocr(xvfb_display, xterm, make_scheduler, tmp_path) -> None:
    need("tesseract")
    xterm("Deploy", "echo waiting for deploy; sleep 2; echo DEPLOY FINISHED; sleep 60")
    sched = make_scheduler(screen_policy(tmp_path, xvfb_display), judge=FrameJudge())
    job = sched.submit(WaitRequest("window:Deploy", "DEPLOY FINISHED", timeout_s=40))
    done = sched.status(job.id, block_s=35)
    assert done.status is WaitStatus.RESOLVED, done
    assert done.result == 'text "DEPLOY FINISHED"'
    assert done.last_observation.detail["via"] == "ocr"


def test_vision_condition_with_partial_burst(xvfb_display, xterm, local_server, make_scheduler,
                                             tmp_path) -> None:
    need("tesseract")
    seen: list[dict] = []
    server = local_server(fake_vision_model(seen))
    xterm("Rollout", "echo starting; sleep 1; echo rollout 40%; sleep 2; echo ROLLOUT FINISHED; "
          "sleep 60")
    client = VisionClient(VisionConfig(base_url=server.url + "/v1", model="minicpm-v"))
    sched = make_scheduler(screen_policy(tmp_path, xvfb_display, vision=True),
                           judge=FrameJudge(client))
    job = sched.submit(WaitRequest("window:Rollout", {"condition": "the rollout has finished"},
                                   timeout_s=60))
    done = sched.status(job.id, block_s=55)
    assert done.status is WaitStatus.RESOLVED, done
    assert "FINISHED" in done.result and done.last_observation.verdict is Verdict.YES
    assert seen and all(r["model"] == "minicpm-v" for r in seen)
    user = seen[0]["messages"][1]["content"]
    assert user[0] == {"type": "text", "text": "Image 1. Condition: the rollout has finished"}


def test_vision_calls_are_serialised_and_batched(local_server, xvfb_display) -> None:
    import numpy as np

    calls: list[int] = []
    gate = threading.Event()

    def respond(method, path, body):
        data = json.loads(body)
        n = sum(1 for p in data["messages"][1]["content"] if p["type"] == "image_url")
        calls.append(n)
        if len(calls) == 1:
            gate.wait(5)  # the first call is slow: the others queue up meanwhile
        text = "\n".join(f"{i}: NO - nothing yet" for i in range(1, n + 1))
        return json_answer(200, {"choices": [{"message": {"role": "assistant", "content": text}}]})

    server = local_server(respond)
    judge = FrameJudge(VisionClient(VisionConfig(base_url=server.url + "/v1", model="m",
                                                 max_batch=4)))
    results: list[tuple[str, Verdict]] = []
    frame = np.full((40, 60, 3), 200, np.uint8)
    for i in range(4):
        judge.submit(JudgeRequest(f"w_{i}", frame, ocr=False, condition="done", new_text=lambda l: None,
                                  done=lambda jid, j: results.append((jid, j.verdict))))
        if i == 0:
            wait_until(lambda: calls)  # the first call is in flight
    gate.set()
    wait_until(lambda: len(results) == 4)
    judge.close()
    assert calls == [1, 3]  # four frames, two calls, one at a time
    assert judge.stats.vision_frames == 4 and judge.stats.vision_calls == 2
    assert {v for _, v in results} == {Verdict.NO}
