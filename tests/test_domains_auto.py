"""When the automatic domain discovery runs (memoryd.engine.domains.auto): once the store holds
enough memories, off the write path, and not beside a run of searches unless they never
pause. The store reads and the discovery are the engine's callables; here they record what
the scheduler asked of them (the discovery itself: tests/test_domains_engine.py)."""

from __future__ import annotations

import threading
import time

from memoryd.engine.domains.auto import AutoDiscovery
from memoryd.engine.memory.running import search_running
from waits_fixtures import wait_until


def _auto(held: int, ran: list[bool], **kwargs: object) -> AutoDiscovery:
    """An AutoDiscovery over a store of ``held`` memories without domains; each discovery
    appends whether a search starting beside it would count as alone."""

    def discover() -> None:
        with search_running() as alone:
            ran.append(alone)

    return AutoDiscovery(enabled=True, min_memories=150, count=lambda: held,
                         has_domains=lambda: bool(ran), discover=discover,
                         **kwargs)  # type: ignore[arg-type]


def test_a_discovery_due_beside_searches_waits_for_them_to_pause() -> None:
    ran: list[bool] = []
    auto = _auto(200, ran, quiet=0.2, wait=120)
    with search_running():
        auto.after_writes(200)
        time.sleep(0.6)
        assert ran == [], "the discovery ran beside a search"
    wait_until(lambda: ran == [False], 30)  # a pause: it ran, as background work
    assert auto.done


def test_searches_that_never_pause_hold_a_discovery_back_no_longer_than_the_bound() -> None:
    ran: list[bool] = []
    auto = _auto(200, ran, quiet=0.2, wait=0.3)
    with search_running():
        auto.after_writes(200)
        wait_until(lambda: ran == [False], 30)  # the searches did not hold it back


def test_join_ends_the_wait_and_below_the_threshold_nothing_runs() -> None:
    ran: list[bool] = []
    auto = _auto(200, ran, quiet=0.2, wait=120)
    with search_running():
        auto.after_writes(200)
        joiner = threading.Thread(target=auto.join, args=(30,), daemon=True)
        joiner.start()
        joiner.join(30)
        assert not joiner.is_alive() and ran == [False]
    few: list[bool] = []
    small = _auto(100, few, quiet=0.0, wait=0.0)
    small.after_writes(100)
    small.join(30)
    assert few == [] and not small.done


def test_a_discovery_not_yet_started_when_the_engine_closes_does_not_start() -> None:
    """A close would otherwise wait for seconds of clustering that it then throws away."""
    ran: list[bool] = []
    closing = threading.Event()
    auto = _auto(200, ran, quiet=0.2, wait=120, closing=closing)
    with search_running():
        auto.after_writes(200)
        closing.set()
        auto.join(30)
    assert ran == [] and not auto.done
