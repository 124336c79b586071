"""Local OCR of frames with Tesseract (Debian tesseract-ocr + tesseract-ocr-eng, through
pytesseract). Terminal fonts are small, so frames are upscaled before recognition."""

from __future__ import annotations

import shutil

import numpy as np

from memoryd.waits.diffgate import to_gray
from memoryd.waits.errors import WatcherFailed

UPSCALE = 2


def ocr_available() -> bool:
    """Whether the tesseract binary is installed."""
    return shutil.which("tesseract") is not None


def ocr_lines(frame: np.ndarray, *, upscale: int = UPSCALE) -> list[str]:
    """The non-empty lines of text Tesseract reads in an RGB (or grey) frame."""
    try:
        import pytesseract
        from PIL import Image
    except ImportError as exc:
        raise WatcherFailed(f"OCR needs pytesseract and Pillow: {exc}") from None
    image = Image.fromarray(to_gray(frame))
    if upscale > 1:
        image = image.resize((image.width * upscale, image.height * upscale), Image.LANCZOS)
    try:
        text = pytesseract.image_to_string(image, config="--psm 6")
    except pytesseract.TesseractNotFoundError:
        raise WatcherFailed("OCR needs the tesseract binary (Debian: tesseract-ocr)") from None
    return [line.strip() for line in text.splitlines() if line.strip()]
