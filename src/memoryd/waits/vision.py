"""The vision step: ask a model behind an OpenAI-compatible chat endpoint whether frames
meet their conditions, answering YES / NO / PARTIAL with a reason.

Several frames go in one request (numbered images, one answer line per image), so jobs
whose frames are pending together cost one call; an answer the reply does not contain is
asked again alone. Works with Ollama (``http://127.0.0.1:11434/v1``, model ``minicpm-v``),
llama.cpp's server, vLLM, or any service that accepts ``image_url`` parts with base64 data.

>>> parse_verdicts("1: YES - the build finished\\n2: PARTIAL - 80%", 2)[2]
(<Verdict.PARTIAL: 'PARTIAL'>, '80%')
"""

from __future__ import annotations

import base64
import io
import re
from dataclasses import dataclass

import httpx
import numpy as np

from memoryd.waits.model import Verdict

SYSTEM_PROMPT = (
    "You check screenshots against conditions. For each numbered image, answer on its own "
    "line exactly as `<number>: YES|NO|PARTIAL - <short reason>`. YES: the condition is met. "
    "PARTIAL: progressing towards it but not met yet. NO: not met."
)
_LINE = re.compile(r"^\W*(?:image\s*)?(\d+)\s*[:.)\-]\s*\**\s*(YES|NO|PARTIAL)\b\**[\s:,.\-–]*(.*)$",
                   re.I | re.M)
_BARE = re.compile(r"^\W*(YES|NO|PARTIAL)\b[\s:,.\-–]*(.*)$", re.I | re.S)


@dataclass(frozen=True)
class VisionConfig:
    """Where the vision model is. ``base_url`` ends before ``/chat/completions``."""

    base_url: str
    model: str
    api_key: str | None = None
    timeout_s: float = 120.0
    max_batch: int = 4
    max_side: int = 1280


def encode_png(frame: np.ndarray, max_side: int) -> str:
    """A ``data:image/png;base64,...`` URL of the frame, scaled to fit ``max_side``."""
    from PIL import Image

    image = Image.fromarray(frame)
    scale = max_side / max(image.width, image.height)
    if scale < 1:
        image = image.resize((int(image.width * scale), int(image.height * scale)), Image.LANCZOS)
    buf = io.BytesIO()
    image.save(buf, format="PNG", optimize=False)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def parse_verdicts(text: str, n: int) -> dict[int, tuple[Verdict, str]]:
    """Verdicts by 1-based image number; a single image may be answered without a number."""
    found: dict[int, tuple[Verdict, str]] = {}
    for m in _LINE.finditer(text):
        index = int(m.group(1))
        if 1 <= index <= n and index not in found:
            found[index] = (Verdict(m.group(2).upper()), m.group(3).strip())
    if n == 1 and 1 not in found:
        bare = _BARE.match(text.strip())
        if bare:
            found[1] = (Verdict(bare.group(1).upper()), bare.group(2).strip().splitlines()[0]
                        if bare.group(2).strip() else "")
    return found


class VisionClient:
    """Judges frames against conditions through one chat-completions endpoint."""

    def __init__(self, config: VisionConfig, client: httpx.Client | None = None) -> None:
        self.config = config
        headers = {"authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        self.http = client or httpx.Client(timeout=config.timeout_s, headers=headers)
        self.calls = 0
        self.frames = 0

    def _request(self, items: list[tuple[np.ndarray, str]]) -> str:
        content: list[dict[str, object]] = []
        for i, (frame, condition) in enumerate(items, 1):
            content.append({"type": "text", "text": f"Image {i}. Condition: {condition}"})
            content.append({"type": "image_url",
                            "image_url": {"url": encode_png(frame, self.config.max_side)}})
        body = {"model": self.config.model, "temperature": 0, "max_tokens": 60 * len(items),
                "messages": [{"role": "system", "content": SYSTEM_PROMPT},
                             {"role": "user", "content": content}]}
        url = self.config.base_url.rstrip("/") + "/chat/completions"
        self.calls += 1
        self.frames += len(items)
        resp = self.http.post(url, json=body)
        resp.raise_for_status()
        return str(resp.json()["choices"][0]["message"]["content"] or "")

    def judge(self, items: list[tuple[np.ndarray, str]]) -> list[tuple[Verdict, str]]:
        """One verdict and reason per (frame, condition); raises httpx.HTTPError on failure."""
        verdicts = parse_verdicts(self._request(items), len(items))
        out = []
        for i, item in enumerate(items, 1):
            if i not in verdicts and len(items) > 1:
                verdicts[i] = self.judge([item])[0]
            out.append(verdicts.get(i, (Verdict.NO, "the model gave no verdict")))
        return out

    def close(self) -> None:
        """Close the connection pool."""
        self.http.close()
