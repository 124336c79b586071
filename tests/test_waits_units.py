"""Pure mechanics of the waits layer: polling ladders, the gate's arithmetic, verdict
parsing, OCR line grouping, job round trips, wake messages, and the layer boundary."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np

import memoryd.waits
from memoryd.waits import LADDERS, Observation, Verdict, WaitJob, WaitStatus, WakeAttempt
from memoryd.waits.diffgate import (
    FlickerMask,
    GateParams,
    diff_frames,
    fixed_fraction_gate,
    gate_opens,
)
from memoryd.waits.ocr import group_lines
from memoryd.waits.policy import next_interval
from memoryd.waits.vision import parse_verdicts
from memoryd.waits.wake import MAX_MESSAGE, wake_message

WAITS_DIR = Path(memoryd.waits.__file__).parent


def test_polling_ladder_rules() -> None:
    text, screen = LADDERS["text"], LADDERS["screen"]
    assert next_interval(screen, since_change_s=1, changed=True, bursting=False) == 1.5
    assert next_interval(screen, since_change_s=10, changed=False, bursting=False) == 5.0
    assert next_interval(screen, since_change_s=31, changed=False, bursting=False) == 15.0
    assert next_interval(screen, since_change_s=31, changed=False, bursting=True) == 0.5
    assert max(text.changed, text.static, text.long_static) <= 1.0  # text stays under 1 s


def test_gate_counts_tiles_not_pixel_share() -> None:
    blank = np.full((316, 484, 3), 255, np.uint8)
    line = blank.copy()
    line[100:110, 0:60] = 0  # ten characters of dark text: 4 tiles in a row
    d = diff_frames(blank, line)
    assert d.pixel_fraction < 0.01 and not fixed_fraction_gate(d)
    assert d.changed_tiles == 4 and gate_opens(d)
    word = blank.copy()
    word[100:110, 0:12] = 0  # "OK" ...
    word[113:126, 0:6] = 0  # ... and the cursor moved to the next line
    assert gate_opens(diff_frames(blank, word))
    cursor = blank.copy()
    cursor[200:213, 300:306] = 0  # a 6x13 cursor block across a tile corner: 4 tiles
    flicker = FlickerMask()
    for frame in (blank, cursor, blank):  # it blinks: on, then off again
        flicker.add(frame)
    assert gate_opens(diff_frames(blank, cursor))
    assert not gate_opens(diff_frames(blank, cursor, ignore=flicker.mask))  # learned
    both = cursor.copy()
    both[100:110, 0:60] = 0
    assert gate_opens(diff_frames(blank, both, ignore=flicker.mask))  # real text still opens
    assert diff_frames(blank, blank[:100]).changed_tiles == diff_frames(blank, blank[:100]).total_tiles
    noisy = (blank.astype(int) - np.random.default_rng(1).integers(0, 20, blank.shape)).astype(np.uint8)
    assert not gate_opens(diff_frames(blank, noisy, GateParams()))  # sub-threshold noise


def test_verdict_parsing_variants() -> None:
    assert parse_verdicts("YES - the dialog is gone", 1) == {1: (Verdict.YES, "the dialog is gone")}
    text = "**1: PARTIAL** - 60% done\nImage 2: NO, still compiling\n3) YES: finished"
    got = parse_verdicts(text, 3)
    assert [got[i][0] for i in (1, 2, 3)] == [Verdict.PARTIAL, Verdict.NO, Verdict.YES]
    assert got[2][1] == "still compiling"
    assert parse_verdicts("I cannot tell.", 2) == {}


def test_ocr_words_group_into_lines() -> None:
    words = [(20.0, 80, 12, "FINISHED"), (8.0, 0, 12, "waiting"), (21.0, 0, 12, "DEPLOY"),
             (7.5, 60, 12, "for")]
    assert group_lines(words) == ["waiting for", "DEPLOY FINISHED"]


def test_job_round_trips_through_json() -> None:
    job = WaitJob("w_1", "file:/tmp/x", {"regex": "ok"}, 60.0, 100.0, 160.0,
                  status=WaitStatus.RESOLVED, resolved_at=130.0, result="ok",
                  last_observation=Observation(matched=True, seen="ok", verdict=Verdict.YES,
                                               frame=np.zeros(3)),
                  cursor={"inode": 5, "offset": 10},
                  wake_attempts=(WakeAttempt(131.0, "webhook", True, 200),))
    again = WaitJob.from_dict(json.loads(json.dumps(job.to_dict())))
    assert again == job and "frame" not in job.to_dict()["last_observation"]


def test_callback_store_round_trips_dicts(tmp_path) -> None:
    import sqlite3

    from memoryd.waits import CallbackJobStore, WaitPolicy, WaitRequest, WaitScheduler

    db = sqlite3.connect(tmp_path / "waits.db", check_same_thread=False)
    db.execute("create table wait_jobs (id text primary key, body text)")

    def save(row: dict) -> None:
        db.execute("insert or replace into wait_jobs values (?, ?)", (row["id"], json.dumps(row)))
        db.commit()

    def load() -> list[dict]:
        return [json.loads(b) for (b,) in db.execute("select body from wait_jobs")]

    (tmp_path / "a.log").write_text("")
    sched = WaitScheduler(policy=WaitPolicy(allowed_roots=(tmp_path,)),
                          jobs=CallbackJobStore(load, save))
    sched.start()
    job = sched.submit(WaitRequest(str(tmp_path / "a.log"), "x", 30))
    sched.close()
    (again,) = CallbackJobStore(load, save).load()
    assert again.id == job.id and again.status is WaitStatus.WATCHING
    assert again.cursor["offset"] == 0


def test_wake_message_is_short_and_says_what_was_seen() -> None:
    job = WaitJob("w_9", "tmux:build:0.0", {"contains": "x"}, 600, 1000.0, 1600.0,
                  status=WaitStatus.TIMEOUT, resolved_at=1600.0, result="step 41/50")
    assert wake_message(job) == ('[smart_wait] w_9 timed out after 600s watching tmux:build:0.0;'
                                 ' last seen "step 41/50"')
    long = WaitJob("w_9", "file:/" + "a" * 500, {"contains": "x"}, 60, 0.0, 60.0,
                   status=WaitStatus.RESOLVED, resolved_at=5.0, result="b" * 1000)
    assert len(wake_message(long)) == MAX_MESSAGE


def test_public_names_are_sorted_and_importable() -> None:
    names = memoryd.waits.__all__
    assert names == sorted(names, key=str.casefold) or names == sorted(names)
    for name in names:
        assert getattr(memoryd.waits, name) is not None


def test_waits_imports_neither_the_engine_nor_a_store() -> None:
    forbidden = ("memoryd.engine", "memoryd.store", "memoryd.operations", "memoryd.api",
                 "memoryd.mcp", "memoryd.cli", "memoryd.serving", "memoryd.gateway",
                 "memoryd.opening")
    for path in WAITS_DIR.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                modules = [node.module]
            elif isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            else:
                continue
            for module in modules:
                assert not module.startswith(forbidden), f"{path.name} imports {module}"
        assert len(path.read_text().splitlines()) <= 500, path
