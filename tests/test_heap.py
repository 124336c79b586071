"""Freed heap memory goes back to the operating system (memoryd.heap): blocks freed between
blocks still in use stay resident until ``release_free_memory`` returns their pages."""

from __future__ import annotations

import sys

import pytest

from memoryd.heap import release_free_memory


def _anonymous_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no RssAnon in /proc/self/status")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim, /proc")
def test_freed_blocks_between_live_ones_are_returned() -> None:
    blocks = [bytes(6000) for _ in range(40_000)]  # about 240 MB in blocks malloc keeps
    allocated = _anonymous_mb()
    kept = blocks[::16]  # every 16th stays: the freed ones are not at the heap's top
    del blocks
    freed = _anonymous_mb()
    assert release_free_memory() is True
    released = _anonymous_mb()
    assert freed > allocated - 20  # free() alone kept the pages
    assert freed - released > 150  # most of the ~225 MB freed went back
    assert len(kept) == 2_500
