"""Terminal waits on real terminals: a tmux server and pane (new output only, never the
echoed command line) and a command memoryd starts in a pty."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from waits_fixtures import make_scheduler, tmux_server, wait_until  # noqa: F401 - fixtures

from memoryd.waits import InvalidWait, TargetNotFound, WaitPolicy, WaitRequest, WaitStatus, WatcherKit
from memoryd.waits.criteria import parse_criteria
from memoryd.waits.watchers.termtext import render_line
from memoryd.waits.watchers.tmux import TmuxPaneWatcher


def scheduler_on(tmux, make_scheduler, tmp_path: Path):
    policy = WaitPolicy(allowed_roots=(tmp_path,), allow_spawn=True, tmux_socket=tmux.socket)
    return make_scheduler(policy, kit=WatcherKit(policy, tmux=tmux))


def type_line(tmux, text: str) -> None:
    tmux.run("send-keys", "-t", "work:0.0", text, "Enter")


def test_pane_printing_after_a_delay_resolves(tmux_server, make_scheduler, tmp_path) -> None:
    sched = scheduler_on(tmux_server, make_scheduler, tmp_path)
    job = sched.submit(WaitRequest("tmux:work:0.0", "/DONE_[0-9]+/", timeout_s=20))
    # The echoed command holds "DONE_$((40+2))", never "DONE_42": only the output can match.
    type_line(tmux_server, "sleep 1; echo DONE_$((40+2))")
    done = sched.status(job.id, block_s=10)
    assert done.status is WaitStatus.RESOLVED
    assert done.result == "DONE_42"


def test_echoed_command_line_never_matches(tmux_server, make_scheduler, tmp_path) -> None:
    sched = scheduler_on(tmux_server, make_scheduler, tmp_path)
    job = sched.submit(WaitRequest("tmux:work:0.0", "MARKER_XYZ", timeout_s=2.5))
    type_line(tmux_server, "true MARKER_XYZ")  # the shell echoes it; it prints nothing
    wait_until(lambda: "true MARKER_XYZ" in tmux_server.run(
        "capture-pane", "-p", "-t", "work:0.0").stdout)
    done = sched.status(job.id, block_s=6)
    assert done.status is WaitStatus.TIMEOUT
    assert done.last_observation is not None


def test_text_already_on_screen_does_not_match(tmux_server) -> None:
    type_line(tmux_server, "echo ALREADY_THERE")
    wait_until(lambda: tmux_server.run("capture-pane", "-p", "-t", "work:0.0").stdout
               .count("ALREADY_THERE") == 2)
    watcher = TmuxPaneWatcher(tmux_server, "work:0.0", parse_criteria("ALREADY_THERE"))
    try:
        assert watcher.filter.prompt == "agent$"
        time.sleep(0.3)
        assert not watcher.check().matched
        type_line(tmux_server, "echo fresh; echo ALREADY_''THERE")
        obs = wait_until(lambda: (o := watcher.check()).matched and o)
        assert obs.seen == "ALREADY_THERE"
    finally:
        watcher.close()
    assert tmux_server.pane_info("work:0.0")["pipe"] is False  # the pipe was closed
    assert not tmux_server.pipe_path(watcher.pane_id).exists()


def test_two_waits_share_one_pane_pipe(tmux_server) -> None:
    a = TmuxPaneWatcher(tmux_server, "work:0.0", parse_criteria("ONE"))
    b = TmuxPaneWatcher(tmux_server, "work:0.0", parse_criteria("TWO"))
    type_line(tmux_server, "echo O''NE; echo T''WO")
    assert wait_until(lambda: a.check().matched)
    assert wait_until(lambda: b.check().matched)
    a.close()
    assert tmux_server.pane_info("work:0.0")["pipe"] is True  # b still uses it
    b.close()
    assert tmux_server.pane_info("work:0.0")["pipe"] is False


def test_pane_output_while_memoryd_is_down_is_seen_after_restart(
        tmux_server, make_scheduler, tmp_path) -> None:
    sched = scheduler_on(tmux_server, make_scheduler, tmp_path)
    job = sched.submit(WaitRequest("tmux:work:0.0", "MIGRATION COMPLETE", timeout_s=30))
    time.sleep(0.3)
    sched.close()  # a clean stop keeps the pane's pipe open
    assert tmux_server.pane_info("work:0.0")["pipe"] is True
    type_line(tmux_server, "echo MIGRATION' 'COMPLETE")  # printed while nothing watches
    wait_until(lambda: tmux_server.run("capture-pane", "-p", "-t", "work:0.0").stdout
               .count("MIGRATION COMPLETE") == 1)
    again = scheduler_on(tmux_server, make_scheduler, tmp_path)  # same jobs.json
    done = again.status(job.id, block_s=10)
    assert done.status is WaitStatus.RESOLVED and done.result == "MIGRATION COMPLETE"
    wait_until(lambda: tmux_server.pane_info("work:0.0")["pipe"] is False)  # closed at the end


def test_missing_pane_is_a_clear_error(tmux_server, make_scheduler, tmp_path) -> None:
    sched = scheduler_on(tmux_server, make_scheduler, tmp_path)
    with pytest.raises(TargetNotFound, match="no tmux pane 'nosuch:0.0'"):
        sched.submit(WaitRequest("tmux:nosuch:0.0", "x", timeout_s=5))
    with pytest.raises(InvalidWait, match="SESSION:WINDOW.PANE"):
        sched.submit(WaitRequest("tmux:work", "x", timeout_s=5))
    assert sched.list() == []


def test_pty_command_output_resolves(make_scheduler) -> None:
    sched = make_scheduler()
    job = sched.submit(WaitRequest("pty:sh -c 'sleep 0.5; printf \"Listening on :8080\\n\"; sleep 30'",
                                   "/Listening on :(\\d+)/", timeout_s=15))
    done = sched.status(job.id, block_s=10)
    assert done.status is WaitStatus.RESOLVED
    assert done.result == "Listening on :8080"
    assert done.resolved_at - done.created_at < 3


def test_pty_command_exit_code_and_early_exit(make_scheduler) -> None:
    sched = make_scheduler()
    ok = sched.submit(WaitRequest("pty:sh -c 'echo working; exit 3'", "exit:3", timeout_s=10))
    early = sched.submit(WaitRequest("pty:sh -c 'echo nope; exit 1'", "READY", timeout_s=10))
    assert sched.status(ok.id, block_s=8).status is WaitStatus.RESOLVED
    failed = sched.status(early.id, block_s=8)
    assert failed.status is WaitStatus.ERROR
    assert "exited with code 1" in failed.result


def test_render_line_handles_progress_and_colours() -> None:
    assert render_line("\x1b[1;32mBUILD\x1b[0m 10%\r\x1b[1;32mBUILD\x1b[0m 100%\r") == "BUILD 100%"
    assert render_line("ecoh\b\b\bcho hi") == "echo hi"
