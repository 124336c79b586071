"""Bad wait requests get a clear error naming the field, and nothing is started."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from waits_fixtures import make_scheduler  # noqa: F401 - fixtures

from memoryd.errors import InvalidInput
from memoryd.waits import (
    InvalidWait,
    TargetNotAllowed,
    WaitNotFound,
    WaitPolicy,
    WaitRequest,
    parse_criteria,
    parse_target,
)
from memoryd.waits.netguard import check_url, refused_reason


@pytest.mark.parametrize(
    ("target", "criteria", "timeout", "error", "message"),
    [
        ("ftp://example.org/file", "x", 10, InvalidWait, "unknown kind"),
        ("file:///etc/passwd", "x", 10, TargetNotAllowed, "outside the allowed roots"),
        ("nonsense", "x", 10, InvalidWait, "has no kind"),
        ("gopher:thing", "x", 10, InvalidWait, "unknown kind"),
        ("file:relative/path.log", "x", 10, InvalidWait, "must be absolute"),
        ("pid:-4", "exit", 10, InvalidWait, "positive integer"),
        ("file:~no-such-user-xyz/build.log", "x", 10, InvalidWait, "must be absolute"),
        ("pid:1", "READY", 10, InvalidWait, "has no text"),
        ("http://127.0.0.1:9/", "exit", 10, InvalidWait, "does not exit"),
        ("http://169.254.169.254/latest/meta-data/", "status:200", 10, TargetNotAllowed,
         "metadata"),
        ("http://169.254.10.1/", "status:200", 10, TargetNotAllowed, "link-local"),
        ("http://[fe80::1]/", "status:200", 10, TargetNotAllowed, "link-local"),
        ("http://metadata.google.internal/", "status:200", 10, TargetNotAllowed, "metadata"),
        ("http://127.0.0.1:9/", "/unclosed(/", 10, InvalidWait, "does not compile"),
        ("http://127.0.0.1:9/", "status:abc", 10, InvalidWait, "whole number"),
        ("http://127.0.0.1:9/", {"status": 999}, 10, InvalidWait, "not an HTTP status"),
        ("http://127.0.0.1:9/", {"colour": "red"}, 10, InvalidWait, "unknown key"),
        ("http://127.0.0.1:9/", "", 10, InvalidWait, "criteria: is empty"),
        ("http://127.0.0.1:9/", "status:200", 0, InvalidWait, "timeout_s: 0 is outside"),
        ("http://127.0.0.1:9/", "status:200", 10**9, InvalidWait, "is outside"),
        ("http://127.0.0.1:9/", "status:200", float("nan"), InvalidWait, "is outside"),
        ("http://127.0.0.1:9/", "status:200", "soon", InvalidWait, "must be a number"),
        ("tmux:only-a-session", "x", 10, InvalidWait, "SESSION:WINDOW.PANE"),
        ("screen:0", "x", 10, InvalidWait, "takes no value"),
        ("http://127.0.0.1:9/", {"condition": "a dialog"}, 10, InvalidWait, "window or screen"),
    ],
)
def test_bad_requests_are_refused_and_nothing_starts(
    make_scheduler, tmp_path: Path, target, criteria, timeout, error, message
) -> None:
    sched = make_scheduler()
    with pytest.raises(error, match=message) as info:
        sched.submit(WaitRequest(target, criteria, timeout))
    assert isinstance(info.value, InvalidInput)  # faces map it to 400/invalid params
    assert sched.list() == []
    assert not (tmp_path / "jobs.json").exists()


def test_spawning_commands_is_off_by_default(make_scheduler, tmp_path: Path) -> None:
    sched = make_scheduler(WaitPolicy(allowed_roots=(tmp_path,)))
    marker = tmp_path / "ran"
    for kind in ("pty", "command"):
        with pytest.raises(TargetNotAllowed, match="allow_spawn"):
            sched.submit(WaitRequest(f"{kind}:touch {marker}", "exit", 10))
    assert not marker.exists()


def test_symlink_out_of_the_allowed_root_is_refused(make_scheduler, tmp_path: Path) -> None:
    outside = tmp_path.parent / f"{tmp_path.name}-outside.log"
    outside.write_text("")
    link = tmp_path / "innocent.log"
    os.symlink(outside, link)
    sched = make_scheduler()
    with pytest.raises(TargetNotAllowed, match="outside the allowed roots"):
        sched.submit(WaitRequest(f"file:{link}", "x", 10))
    outside.unlink()


def test_screen_targets_need_a_display_and_vision_for_conditions(make_scheduler, tmp_path) -> None:
    sched = make_scheduler(WaitPolicy(allowed_roots=(tmp_path,), display=None))
    with pytest.raises(InvalidWait, match="need an X display"):
        sched.submit(WaitRequest("screen", "BUILD OK", 10))
    sched2 = make_scheduler(WaitPolicy(allowed_roots=(tmp_path,), display=":0"))
    with pytest.raises(InvalidWait, match="no vision endpoint|none is configured"):
        sched2.submit(WaitRequest("screen", {"condition": "the progress bar is full"}, 10))


def test_unconfigured_wake_route_is_refused(make_scheduler, tmp_path: Path) -> None:
    sched = make_scheduler()
    (tmp_path / "a.log").write_text("")
    with pytest.raises(InvalidWait, match="wake: route 'openclaw' is not configured"):
        sched.submit(WaitRequest(str(tmp_path / "a.log"), "x", 10, wake={"to": "openclaw"}))


def test_unknown_job_ids(make_scheduler) -> None:
    sched = make_scheduler()
    with pytest.raises(WaitNotFound):
        sched.status("w_nope")
    with pytest.raises(WaitNotFound):
        sched.cancel("w_nope")


def test_parsers() -> None:
    assert parse_target("/var/log/x.log").kind == "file"
    assert parse_target("window:0x3a00007").window_id == 0x3A00007
    assert parse_target("window:Build output").window_id is None
    assert parse_target("https://example.org/x").kind == "http"
    assert parse_criteria("exit:0").exit_code == 0 and parse_criteria("exit").exits
    assert parse_criteria("re:^done$").regex == "^done$"
    assert parse_criteria({"contains": "ok", "ignore_case": True}).matches_line("OK!")
    assert not parse_criteria("/a+b/").matches_line("x" * 100_000)  # lines are cut first


def test_address_rules() -> None:
    assert refused_reason("127.0.0.1") is None and refused_reason("10.1.2.3") is None
    assert "metadata" in refused_reason("169.254.169.254")
    assert "link-local" in refused_reason("::ffff:169.254.1.1")
    check_url("http://169.254.169.254/", allow_link_local=True)  # allowed when asked


def test_denied_paths_are_never_watched(make_scheduler, tmp_path: Path) -> None:
    store = tmp_path / "memoryd.db"
    for name in ("memoryd.db", "memoryd.db-wal", "memoryd.db-shm"):
        (tmp_path / name).write_text("")
    (tmp_path / "build.log").write_text("")
    sched = make_scheduler(WaitPolicy(allowed_roots=(tmp_path,), denied_paths=(store,)))
    for name in ("memoryd.db", "memoryd.db-wal", "memoryd.db-shm"):
        with pytest.raises(TargetNotAllowed, match="memoryd's own files"):
            sched.submit(WaitRequest(f"file:{tmp_path / name}", "x", 10))
    assert sched.submit(WaitRequest(f"file:{tmp_path / 'build.log'}", "x", 10)).id


def test_confined_requests_get_the_narrow_policy(make_scheduler, tmp_path: Path) -> None:
    """A key bound to a scope or agent: files only under confined roots, no terminals or
    commands, URLs only to public addresses."""
    log = tmp_path / "build.log"
    log.write_text("")
    confined = {"confined": True}
    open_policy = WaitPolicy(allowed_roots=(tmp_path,), allow_spawn=True)
    sched = make_scheduler(open_policy)
    with pytest.raises(TargetNotAllowed, match="no confined roots"):
        sched.submit(WaitRequest(f"file:{log}", "x", 10, owner=confined))
    for target, criteria in (("tmux:main:0.0", "x"), ("command:true", "exit"),
                             ("pty:true", "exit")):
        with pytest.raises(TargetNotAllowed, match="not available to a key bound"):
            sched.submit(WaitRequest(target, criteria, 10, owner=confined))
    for url in ("http://127.0.0.1:9/", "http://10.0.0.7/", "http://[::1]:9/"):
        with pytest.raises(TargetNotAllowed, match="not a public address"):
            sched.submit(WaitRequest(url, "status:200", 10, owner=confined))
    assert sched.submit(WaitRequest("http://127.0.0.1:9/", "status:200", 10)).id  # unbound
    assert sched.submit(WaitRequest(f"pid:{os.getpid()}", "exit", 10, owner=confined)).id
    roots = make_scheduler(WaitPolicy(allowed_roots=(tmp_path,), confined_roots=(tmp_path,)))
    assert roots.submit(WaitRequest(f"file:{log}", "x", 10, owner=confined)).id


def test_public_only_addresses() -> None:
    from memoryd.waits.netguard import public_reason

    assert public_reason("93.184.216.34") is None and public_reason("2606:4700::1") is None
    for address in ("127.0.0.1", "10.1.2.3", "192.168.0.1", "172.16.0.1", "::1", "fd00::1",
                    "100.64.0.1", "::ffff:127.0.0.1", "0.0.0.0", "224.0.0.1"):
        assert public_reason(address), address
    with pytest.raises(TargetNotAllowed, match="not a public address"):
        check_url("http://localhost:9/", public_only=True, allow_link_local=True)
