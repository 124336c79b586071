"""The pixel-diff gate: is a new frame different enough to be worth judging?

A fixed share of changed pixels does not work for terminals: one new line in an 80x24
xterm (484x316 px) changes about 0.4% of its pixels, so a 1% gate misses a few new lines.
This gate counts changed *tiles* instead: the frame is cut into ``tile`` x ``tile``
squares, a square counts as changed when at least ``min_tile_pixels`` of its pixels moved
by more than ``pixel_delta`` grey levels, and the gate opens at ``min_changed_tiles``
changed squares. One line of new text touches a row of tiles across its length whatever
the window size (a 55-character xterm line: about 20 tiles; "DONE" and the cursor moving
on: 2 to 4). Tiles that flicker (A, B, A over three captures: a blinking cursor, a
spinner) are learned by :class:`FlickerMask` and left out of the count, so they never
open the gate. bench/waits measures it on a real xterm (bench/results/waits.md).

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
    min_changed_tiles: int = 2


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


def _tile_counts(a: np.ndarray, b: np.ndarray, params: GateParams) -> tuple[int, np.ndarray]:
    """(changed pixels, per-tile count of changed pixels) of two grey frames of one size."""
    moved = np.abs(a.astype(np.int16) - b.astype(np.int16)) > params.pixel_delta
    h, w = moved.shape
    t = params.tile
    padded = np.zeros((-(-h // t) * t, -(-w // t) * t), dtype=np.uint16)
    padded[:h, :w] = moved
    per_tile = padded.reshape(padded.shape[0] // t, t, padded.shape[1] // t, t).sum(axis=(1, 3))
    return int(moved.sum()), per_tile


def changed_tiles(prev: np.ndarray, cur: np.ndarray, params: GateParams) -> np.ndarray | None:
    """A boolean grid of the tiles that changed, or None when the sizes differ."""
    a, b = to_gray(prev), to_gray(cur)
    if a.shape != b.shape:
        return None
    return _tile_counts(a, b, params)[1] >= params.min_tile_pixels


class FlickerMask:
    """Learns tiles that flicker (changed, then changed back) across captures."""

    def __init__(self, params: GateParams = GateParams()) -> None:
        self.params = params
        self.mask: np.ndarray | None = None
        self._frames: list[np.ndarray] = []

    def add(self, frame: np.ndarray) -> None:
        """Record a captured frame; flags tiles that went A, B, A over the last three."""
        self._frames = (self._frames + [frame])[-3:]
        if len(self._frames) < 3:
            return
        a, b, c = self._frames
        ab, bc, ac = (changed_tiles(a, b, self.params), changed_tiles(b, c, self.params),
                      changed_tiles(a, c, self.params))
        if ab is None or bc is None or ac is None:
            self.mask = None
            return
        flicker = ab & bc & ~ac
        self.mask = flicker if self.mask is None or self.mask.shape != flicker.shape else (
            self.mask | flicker)


def diff_frames(prev: np.ndarray, cur: np.ndarray, params: GateParams = GateParams(),
                ignore: np.ndarray | None = None) -> FrameDiff:
    """Compare two frames of the same target; a size change counts as a full change.
    ``ignore`` is a tile grid (a :class:`FlickerMask`) left out of the tile count."""
    a, b = to_gray(prev), to_gray(cur)
    if a.shape != b.shape:
        h, w = b.shape
        tiles = -(-h // params.tile) * -(-w // params.tile)
        return FrameDiff(h * w, h * w, tiles, tiles)
    pixels, per_tile = _tile_counts(a, b, params)
    changed = per_tile >= params.min_tile_pixels
    if ignore is not None and ignore.shape == changed.shape:
        changed = changed & ~ignore
    return FrameDiff(
        changed_pixels=pixels, total_pixels=a.size,
        changed_tiles=int(changed.sum()), total_tiles=int(per_tile.size),
    )


def gate_opens(diff: FrameDiff, params: GateParams = GateParams()) -> bool:
    """Whether the frame is worth judging (see the module docstring)."""
    return diff.changed_tiles >= params.min_changed_tiles


def fixed_fraction_gate(diff: FrameDiff, fraction: float = 0.01) -> bool:
    """The naive gate (a share of changed pixels), kept for comparison in the bench."""
    return diff.pixel_fraction >= fraction
