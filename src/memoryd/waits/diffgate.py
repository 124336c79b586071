"""The pixel-diff gate: is a new frame different enough to be worth judging?

A fixed share of changed pixels does not work for terminals: six new lines of text in a
484x316 xterm change about 0.4% of its pixels, so a 1% gate never opens on them. This
gate counts changed *tiles* instead: the frame is cut into ``tile`` x ``tile`` squares,
a square counts as changed when at least ``min_tile_pixels`` of its pixels moved by more
than ``pixel_delta`` grey levels, and the gate opens at ``min_changed_tiles`` changed
squares. One line of new text touches a row of tiles across its length, whatever the
window size; a blinking cursor touches one or two. bench/waits measures both on a real
xterm (bench/results/waits.md).

>>> import numpy as np
>>> a = np.zeros((64, 64, 3), np.uint8); b = a.copy(); b[8:20, 0:40] = 255
>>> diff_frames(a, b).changed_tiles
6
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class GateParams:
    """Thresholds of the gate (defaults measured on xterm text, see the module docstring)."""

    tile: int = 16
    pixel_delta: int = 32
    min_tile_pixels: int = 4
    min_changed_tiles: int = 3


@dataclass(frozen=True)
class FrameDiff:
    """How two frames differ."""

    changed_pixels: int
    total_pixels: int
    changed_tiles: int
    total_tiles: int

    @property
    def pixel_fraction(self) -> float:
        """Share of pixels that changed."""
        return self.changed_pixels / self.total_pixels if self.total_pixels else 0.0

    @property
    def tile_fraction(self) -> float:
        """Share of tiles that changed."""
        return self.changed_tiles / self.total_tiles if self.total_tiles else 0.0


def to_gray(frame: np.ndarray) -> np.ndarray:
    """An H x W uint8 luminance image of an H x W x 3 (RGB) or H x W frame."""
    if frame.ndim == 2:
        return frame
    rgb = frame[..., :3].astype(np.uint16)
    return ((rgb[..., 0] * 77 + rgb[..., 1] * 150 + rgb[..., 2] * 29) >> 8).astype(np.uint8)


def diff_frames(prev: np.ndarray, cur: np.ndarray, params: GateParams = GateParams()) -> FrameDiff:
    """Compare two frames of the same target; a size change counts as a full change."""
    a, b = to_gray(prev), to_gray(cur)
    if a.shape != b.shape:
        h, w = b.shape
        tiles = -(-h // params.tile) * -(-w // params.tile)
        return FrameDiff(h * w, h * w, tiles, tiles)
    moved = np.abs(a.astype(np.int16) - b.astype(np.int16)) > params.pixel_delta
    h, w = moved.shape
    t = params.tile
    padded = np.zeros((-(-h // t) * t, -(-w // t) * t), dtype=np.uint16)
    padded[:h, :w] = moved
    per_tile = padded.reshape(padded.shape[0] // t, t, padded.shape[1] // t, t).sum(axis=(1, 3))
    return FrameDiff(
        changed_pixels=int(moved.sum()), total_pixels=h * w,
        changed_tiles=int((per_tile >= params.min_tile_pixels).sum()),
        total_tiles=int(per_tile.size),
    )


def gate_opens(diff: FrameDiff, params: GateParams = GateParams()) -> bool:
    """Whether the frame is worth judging."""
    return diff.changed_tiles >= params.min_changed_tiles


def fixed_fraction_gate(diff: FrameDiff, fraction: float = 0.01) -> bool:
    """The naive gate (a share of changed pixels), kept for comparison in the bench."""
    return diff.pixel_fraction >= fraction
