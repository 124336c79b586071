"""What runs in a process (memoryd.engine.memory.running): searches and background work are
counted, a search alone is told so, and a forked child starts from zero."""

from __future__ import annotations

import math
import os

from memoryd.engine.memory.running import background_work, quiet_for, search_running


def test_a_search_is_alone_only_without_other_searches_or_background_work() -> None:
    with search_running() as first:
        assert first
        with search_running() as second:
            assert not second
        assert quiet_for() == 0.0  # one still runs
    with background_work():
        with search_running() as beside_work:
            assert not beside_work
    with search_running() as again:
        assert again
    assert 0.0 <= quiet_for() < math.inf


def test_a_forked_child_starts_with_nothing_running() -> None:
    """A child forked in the middle of a search does not inherit it (it would never be
    alone, and its writer would wait for a pause that never comes)."""
    read, write = os.pipe()
    with search_running(), background_work():
        pid = os.fork()
        if pid == 0:  # the child: report and leave at once
            try:
                with search_running() as alone:
                    os.write(write, b"1" if alone and quiet_for() == 0.0 else b"0")
            finally:
                os._exit(0)
    os.close(write)
    answer = os.read(read, 1)
    os.close(read)
    os.waitpid(pid, 0)
    assert answer == b"1"
