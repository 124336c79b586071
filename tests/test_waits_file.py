"""File waits: a real file appended by another process, rotated and truncated; the
scheduler resolving on it; and a wait that resumes after its process was killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from waits_fixtures import make_scheduler, wait_until  # noqa: F401 - fixtures

from memoryd.waits import JsonFileJobStore, WaitRequest, WaitStatus
from memoryd.waits.criteria import parse_criteria
from memoryd.waits.watchers.file import FileTail, FileWatcher

SRC = str(Path(__file__).resolve().parents[1] / "src")


def append_later(path: Path, lines: list[str], delay: float = 0.3) -> subprocess.Popen[bytes]:
    """Another process appends ``lines`` to ``path`` after ``delay`` seconds, one by one."""
    script = textwrap.dedent(f"""
        import time
        time.sleep({delay})
        for line in {lines!r}:
            with open({str(path)!r}, "a") as f:
                f.write(line + "\\n")
            time.sleep(0.05)
    """)
    return subprocess.Popen([sys.executable, "-c", script])


def test_tail_sees_only_lines_appended_after_it_starts(tmp_path: Path) -> None:
    log = tmp_path / "build.log"
    log.write_text("BUILD OK from yesterday\n")
    tail = FileTail(str(log))
    append_later(log, ["compiling", "BUILD OK"], delay=0.0).wait()
    lines, changed = tail.read_lines()
    assert lines == ["compiling", "BUILD OK"] and changed
    assert tail.read_lines() == ([], False)


def test_tail_follows_rotation_and_truncation(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_text("")
    tail = FileTail(str(log))
    with open(log, "a") as f:
        f.write("before rotation\n")
    os.rename(log, tmp_path / "app.log.1")  # logrotate: rename away, start a new file
    with open(tmp_path / "app.log.1", "a") as f:
        f.write("late line in the old file\n")
    log.write_text("first line of the new file\n")
    lines, _ = tail.read_lines()
    assert lines == ["before rotation", "late line in the old file", "first line of the new file"]
    log.write_text("")  # truncated in place (> app.log)
    with open(log, "a") as f:
        f.write("after truncation\n")
    assert tail.read_lines()[0] == ["after truncation"]


def test_partial_line_is_held_then_released(tmp_path: Path) -> None:
    log = tmp_path / "p.log"
    log.write_text("")
    tail = FileTail(str(log))
    with open(log, "a") as f:
        f.write("Continue? [y/N]")
    assert tail.read_lines()[0] == []  # maybe more is coming
    assert tail.read_lines()[0] == ["Continue? [y/N]"]  # unchanged for a check: released


def test_file_created_after_the_wait_started(tmp_path: Path) -> None:
    log = tmp_path / "later.log"
    watcher = FileWatcher(str(log), parse_criteria("READY"))
    assert not watcher.check().matched
    append_later(log, ["READY"], delay=0.0).wait()
    assert watcher.check().matched


def test_scheduler_resolves_when_another_process_writes(tmp_path: Path, make_scheduler) -> None:
    sched = make_scheduler()
    log = tmp_path / "build.log"
    log.write_text("old: BUILD FAILED\n")
    job = sched.submit(WaitRequest(f"file:{log}", "/BUILD (OK|FAILED)/", timeout_s=20))
    assert job.status is WaitStatus.WATCHING
    writer = append_later(log, ["step 1", "step 2", "BUILD OK in 3.2s"])
    done = sched.status(job.id, block_s=10)
    writer.wait()
    assert done.status is WaitStatus.RESOLVED
    assert done.result == "BUILD OK in 3.2s"
    assert done.resolved_at is not None and done.resolved_at - done.created_at < 5


def test_timeout_when_nothing_matches(tmp_path: Path, make_scheduler) -> None:
    sched = make_scheduler()
    log = tmp_path / "quiet.log"
    log.write_text("")
    append_later(log, ["still working"], delay=0.0).wait()
    job = sched.submit(WaitRequest(str(log), "DONE", timeout_s=1.5))
    done = sched.status(job.id, block_s=5)
    assert done.status is WaitStatus.TIMEOUT
    assert 1.4 <= done.resolved_at - done.created_at < 3


def test_cancel_stops_the_wait(tmp_path: Path, make_scheduler) -> None:
    sched = make_scheduler()
    log = tmp_path / "c.log"
    log.write_text("")
    job = sched.submit(WaitRequest(str(log), "DONE", timeout_s=60))
    assert sched.cancel(job.id).status is WaitStatus.CANCELLED
    append_later(log, ["DONE"], delay=0.0).wait()
    time.sleep(0.6)
    assert sched.status(job.id).status is WaitStatus.CANCELLED
    assert [j.id for j in sched.list(status="cancelled")] == [job.id]


RUNNER = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {src!r})
    from pathlib import Path
    from memoryd.waits import JsonFileJobStore, WaitPolicy, WaitRequest, WaitScheduler
    policy = WaitPolicy(allowed_roots=(Path({root!r}),))
    sched = WaitScheduler(policy=policy, jobs=JsonFileJobStore({jobs!r}))
    sched.start()
    job = sched.submit(WaitRequest({target!r}, "DEPLOYED", timeout_s=60))
    print(job.id, flush=True)
    time.sleep(600)
""")


def test_restart_mid_wait_resumes_and_resolves(tmp_path: Path, make_scheduler) -> None:
    """A process holding a wait is killed (SIGKILL: no clean shutdown); the text appears
    while nothing runs; a new scheduler on the same job file resumes and resolves."""
    log = tmp_path / "deploy.log"
    log.write_text("DEPLOYED (an old line, before the wait)\n")
    jobs = tmp_path / "jobs.json"
    script = RUNNER.format(src=SRC, root=str(tmp_path), jobs=str(jobs), target=f"file:{log}")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    job_id = proc.stdout.readline().strip()
    assert job_id.startswith("w_")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    with open(log, "a") as f:
        f.write("rollout 3/3\nDEPLOYED v2\n")
    saved = {j.id: j for j in JsonFileJobStore(jobs).load()}
    assert saved[job_id].status is WaitStatus.WATCHING
    sched = make_scheduler()  # same tmp_path/jobs.json
    done = sched.status(job_id, block_s=10)
    assert done.status is WaitStatus.RESOLVED
    assert done.result == "DEPLOYED v2"  # not the old line written before the wait


def test_job_past_its_deadline_at_restart_times_out(tmp_path: Path, make_scheduler) -> None:
    sched = make_scheduler()
    log = tmp_path / "x.log"
    log.write_text("")
    job = sched.submit(WaitRequest(str(log), "never", timeout_s=1))
    sched.close()
    time.sleep(1.2)
    again = make_scheduler()
    assert again.status(job.id).status is WaitStatus.TIMEOUT
