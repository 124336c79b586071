"""Local OCR of frames with Tesseract (Debian tesseract-ocr + tesseract-ocr-eng).

Tesseract runs as ``tesseract stdin stdout --psm 11 tsv``: "sparse text" mode reads the
short, widely spaced lines of a terminal far better than the block mode (on a real xterm
in the fixed font, block mode read "DEPLOY FINISHED" as "PFPLOY FINiskeD"); it returns
words with their boxes, which are grouped back into lines by their vertical centre. It
runs with one OpenMP thread, so an OCR never takes both cores of a small machine.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess

import numpy as np

from memoryd.waits.diffgate import to_gray
from memoryd.waits.errors import WatcherFailed

TIMEOUT_S = 60.0


def ocr_available() -> bool:
    """Whether the tesseract binary is installed."""
    return shutil.which("tesseract") is not None


def _png(frame: np.ndarray) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(to_gray(frame)).save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


def _words(tsv: str) -> list[tuple[float, int, int, str]]:
    """(vertical centre, left, height, text) of each recognised word."""
    out = []
    for row in csv.DictReader(io.StringIO(tsv), delimiter="\t", quoting=csv.QUOTE_NONE):
        text = (row.get("text") or "").strip()
        if text and row.get("conf") not in (None, "-1"):
            top, height = int(row["top"]), int(row["height"])
            out.append((top + height / 2, int(row["left"]), height, text))
    return out


def group_lines(words: list[tuple[float, int, int, str]]) -> list[str]:
    """Words whose vertical centres are within 60% of a word height form one line."""
    rows: list[tuple[float, int, list[tuple[int, str]]]] = []
    for centre, left, height, text in sorted(words):
        if rows and abs(centre - rows[-1][0]) <= max(height, rows[-1][1]) * 0.6:
            rows[-1][2].append((left, text))
        else:
            rows.append((centre, height, [(left, text)]))
    return [" ".join(t for _, t in sorted(row[2])) for row in rows]


def ocr_lines(frame: np.ndarray) -> list[str]:
    """The lines of text Tesseract reads in an RGB (or grey) frame, top to bottom."""
    if not ocr_available():
        raise WatcherFailed("OCR needs the tesseract binary (Debian: tesseract-ocr)")
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
    try:
        done = subprocess.run(["tesseract", "stdin", "stdout", "--psm", "11", "tsv"],
                              input=_png(frame), capture_output=True, timeout=TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired:
        raise WatcherFailed(f"tesseract took more than {TIMEOUT_S:g} s") from None
    if done.returncode != 0:
        raise WatcherFailed(f"tesseract failed: {done.stderr.decode(errors='replace')[-200:]}")
    return group_lines(_words(done.stdout.decode("utf-8", "replace")))
