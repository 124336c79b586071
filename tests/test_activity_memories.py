"""System activity as memories, through the engine: a real process holding memory and a
real log file with errors become ONE ``system.*`` memory per episode (created, updated as
it grows, marked ended when it closes), with its numbers in metadata and secrets redacted,
and "why is my system slow?" finds it."""

from __future__ import annotations

from pathlib import Path

from test_waits_activity import memory_hog  # noqa: F401 - fixture
from waits_fixtures import wait_until

from memoryd import Actor
from memoryd.engine.waits.activity import ActivityRecorder
from memoryd.waits.activity import ActivityMonitor, ActivitySettings, ProcessSpikes


class OnePid:
    """The real process source, keeping the readings of one process (the machine runs
    other big processes too)."""

    def __init__(self, pid: int) -> None:
        self.pid, self.source = pid, ProcessSpikes(rss_mb=120, cpu_percent=1e9)

    def poll(self):
        return [r for r in self.source.poll() if r.numbers.get("pid") == self.pid]


def _system_memories(mem, category: str | None = None):
    return [m for m in mem.list(limit=100) if (m.category or "").startswith(category or "system.")]


def test_a_memory_spike_is_one_memory_updated_as_it_evolves(mem, memory_hog) -> None:
    recorder = ActivityRecorder(mem.context.acting(Actor("activity")))
    clock = iter(float(t) for t in range(1_750_000_000, 1_750_100_000, 400))
    monitor = ActivityMonitor(ActivitySettings(min_update_s=300, close_after_s=500),
                              recorder.record, sources=[OnePid(memory_hog.pid)],
                              clock=lambda: next(clock))
    monitor.tick()
    key = f"process.memory:{memory_hog.pid}"
    opened = [m for m in _system_memories(mem) if m.metadata["activity"]["key"] == key]
    assert len(opened) == 1
    memory = opened[0]
    assert memory.category == "system.process.memory" and memory.node_type == "event"
    assert memory.severity in ("medium", "critical") and "system" in memory.tags
    assert memory.metadata["activity"]["numbers"]["rss_mb"] >= 150
    assert "Tr0ub4dor3xK" not in memory.content and "ghp_abc" not in memory.content
    assert "ghp_abc" not in str(memory.metadata)
    memory_hog.kill()
    memory_hog.wait()
    monitor.tick()
    monitor.tick()  # no reading for 800 s (fake clock): the episode closes
    ended = mem.get(memory.id)
    assert ended.metadata["event"] == "closed" and "(ended)" in ended.content
    assert [m.id for m in _system_memories(mem) if m.metadata["activity"]["key"] == key] == \
        [memory.id]  # one memory for the whole episode
    assert [h.operation for h in mem.history(memory.id)] == ["create", "update"]
    hits = mem.search("why is my system slow? which process uses so much memory", limit=3)
    assert memory.id in [h.memory.id for h in hits]
    recorder.close()


def test_log_errors_become_memories_through_the_running_waits(open_mem, tmp_path: Path) -> None:
    log = tmp_path / "worker.log"
    log.write_text("")
    mem = open_mem(f"sqlite:///{tmp_path / 'm.db'}", activity_log_files=[str(log)],
                   activity_interval_s=1.0, wait_runner="activity-host")
    mem.waits.start()
    with open(log, "a") as f:
        f.write("ERROR job 17 failed: connection refused (password=hunter2hunter2)\n")
        f.write("ERROR job 18 failed: connection refused (password=hunter2hunter2)\n")
    found = wait_until(lambda: _system_memories(mem, "system.log.error"), timeout=30)
    assert len(found) == 1  # the same message with other numbers is the same episode
    memory = found[0]
    assert memory.severity == "high" and memory.source == "memoryd.activity"
    assert "connection refused" in memory.content and "hunter2hunter2" not in memory.content
    assert memory.metadata["activity"]["numbers"]["count"] == 2
    assert mem.history(memory.id)[0].actor == "activity"
    hits = mem.search("why do the worker jobs keep failing?", limit=3)
    assert hits[0].memory.id == memory.id


def test_activity_is_off_by_default(open_mem, tmp_path: Path) -> None:
    mem = open_mem(f"sqlite:///{tmp_path / 'm.db'}", wait_runner="quiet-host")
    mem.waits.start()
    assert mem.waits.running and mem._waits._activity is None
