"""System activity sources on real processes, disks and log files: thresholds,
deduplication into episodes, rate limits, and scrubbed command lines."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from waits_fixtures import make_scheduler, wait_until  # noqa: F401 - fixtures

from memoryd.waits.activity import (
    ActivityMonitor,
    ActivitySettings,
    DiskFilling,
    EpisodeTracker,
    LogErrors,
    ProcessSpikes,
    Reading,
)

HOG = "import sys, time; b = bytearray(160 * 2**20); b[::4096] = b'x' * len(b[::4096]); time.sleep(30)"


@pytest.fixture
def memory_hog():
    """A real child holding ~160 MB, started with a secret on its command line."""
    proc = subprocess.Popen([sys.executable, "-c", HOG, "--db-password=Tr0ub4dor3xK",
                             "--token", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"])
    wait_until(lambda: psutil.Process(proc.pid).memory_info().rss > 150 * 2**20, timeout=20)
    yield proc
    proc.kill()
    proc.wait()


def test_process_memory_spike_is_one_episode_with_scrubbed_command(memory_hog) -> None:
    events = []
    clock = iter(float(t) for t in range(0, 10_000, 10))
    monitor = ActivityMonitor(ActivitySettings(min_update_s=1e9, close_after_s=25), events.append,
                              sources=[ProcessSpikes(rss_mb=120, cpu_percent=1e9)],
                              clock=lambda: next(clock))
    for _ in range(5):  # five polls while the spike lasts: one episode
        monitor.tick()
    mine = [e for e in events if e.episode.key == f"process.memory:{memory_hog.pid}"]
    assert [e.kind for e in mine] == ["opened"]
    episode = monitor.tracker._open[f"process.memory:{memory_hog.pid}"]
    assert episode.readings == 5 and episode.category == "system.process.memory"
    assert episode.peak["rss_mb"] >= 150
    assert "Tr0ub4dor3xK" not in episode.summary and "ghp_abc" not in episode.summary
    assert "--db-password=[REDACTED]" in episode.summary
    memory_hog.kill()
    memory_hog.wait()
    monitor.tick()
    monitor.tick()
    monitor.tick()  # 30 s of (fake-clock) silence: the episode closes
    assert [e.kind for e in events if e.episode.key == episode.key] == ["opened", "closed"]


def test_episode_updates_are_rate_limited_and_escalations_pass() -> None:
    tracker = EpisodeTracker(min_update_s=300, close_after_s=120)
    kinds = []
    for second in range(0, 3600, 1):  # an hour of readings, one per second, memory growing
        rss = 3000 + second  # MB
        severity = "critical" if rss >= 6000 else "warning"
        r = Reading("process.memory:42", "system.process.memory", severity,
                    {"rss_mb": float(rss)}, f"java uses {rss} MB")
        kinds += [(second, e.kind) for e in tracker.observe([r], now=float(second))]
    assert kinds[0] == (0, "opened")
    assert len(kinds) <= 1 + 3600 // 300  # at most one update per 5 minutes
    times = [second for second, _ in kinds]
    assert 3000 in times  # the escalation to critical (6000 MB) is reported at once
    assert all(b - a >= 300 for a, b in zip(times, times[1:]) if b != 3000)  # others: 5 min apart
    (episode,) = tracker.open_episodes
    assert episode.readings == 3600 and episode.peak["rss_mb"] == 6599


def test_log_error_bursts_dedupe_by_message_shape(tmp_path: Path) -> None:
    log = tmp_path / "service.log"
    log.write_text("ERROR old line before the source started\n")
    source = LogErrors(str(log))
    lines = [f"2026-01-01 ERROR upstream timeout after {n} ms" for n in range(40)]
    lines += ["INFO all good", "FATAL cannot open /var/lib/db (password=hunter2xyz9)"]
    subprocess.run([sys.executable, "-c",
                    f"open({str(log)!r}, 'a').write({chr(10).join(lines)!r} + '\\n')"], check=True)
    readings = source.poll()
    assert len(readings) == 2
    timeout = next(r for r in readings if "timeout" in r.summary)
    assert timeout.numbers["count"] == 40.0
    fatal = next(r for r in readings if "FATAL" in r.summary)
    assert "hunter2xyz9" not in fatal.summary


def test_disk_source_reads_real_file_systems(tmp_path: Path) -> None:
    readings = DiskFilling(percent=0.0, mountpoints=(str(tmp_path),)).poll()
    assert len(readings) == 1 and readings[0].category == "system.disk"
    assert 0 < readings[0].numbers["used_percent"] <= 100
    assert DiskFilling(percent=100.1, mountpoints=(str(tmp_path),)).poll() == []


def test_sources_are_off_by_default_and_run_on_the_wait_loop(tmp_path: Path, make_scheduler) -> None:
    assert ActivitySettings().build_sources() == []
    log = tmp_path / "app.log"
    log.write_text("")
    events = []
    monitor = ActivityMonitor(ActivitySettings(log_files=(str(log),), interval_s=0.2), events.append)
    sched = make_scheduler()
    monitor.attach(sched)
    with open(log, "a") as f:
        f.write("Traceback (most recent call last): boom\n")
    wait_until(lambda: events)
    assert events[0].kind == "opened" and events[0].episode.category == "system.log.error"
    time.sleep(0.5)
    assert monitor.polls >= 2
