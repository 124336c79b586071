"""The CLI through its real entry point (the installed ``memoryd`` console script).

Each subprocess that embeds pays a model load of several seconds, so most checks use
commands that never embed (list, get, stats, export, backup, restore, delete, and
bad inputs that fail before embedding); the store is filled in-process with the
shared model. Several checks share one test.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from helpers.consistency import check_consistency
from helpers.embedders import HashEmbedder

import memoryd

T0 = datetime(2023, 1, 2, 3, 4, 5, tzinfo=UTC)


def ok(result) -> str:
    assert result.returncode == 0, f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert "Traceback" not in result.stderr
    return result.stdout


def fails(result, *fragments: str, code: int = 1) -> str:
    text = result.stderr + result.stdout
    assert result.returncode == code, f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert "Traceback" not in text, text
    flat = " ".join(text.split()).lower()  # Rich may wrap long messages
    for fragment in fragments:
        assert fragment.lower() in flat, f"{fragment!r} not in:\n{text}"
    return text


@pytest.fixture
def home_store(cli_env, shared_embedder) -> Path:
    """The default store (MEMORYD_HOME/memoryd.db) with three memories."""
    path = Path(cli_env["MEMORYD_HOME"]) / "memoryd.db"
    with memoryd.open(f"sqlite:///{path}", embedder=shared_embedder) as mem:
        mem.add_many([
            {"id": "pref", "content": "The user prefers tabs over spaces", "node_type": "preference",
             "tags": ["style"], "created_at": T0, "metadata": {"from": "cli-test"}},
            {"id": "fact", "content": "The staging database runs PostgreSQL 16", "tags": ["db"]},
            {"id": "todo", "content": "Renew the TLS certificate before March", "node_type": "task",
             "tags": ["ops", "db"]},
        ])
    return path


def test_read_and_maintenance_commands(run_cli, home_store, tmp_path) -> None:
    # list (default store under MEMORYD_HOME), with a filter
    listed = json.loads(ok(run_cli("list", "--json")))
    assert {m["id"] for m in listed} == {"pref", "fact", "todo"}
    assert {m["id"] for m in json.loads(ok(run_cli("list", "--json", "--tag", "db")))} == {"fact", "todo"}

    # get keeps the caller's created_at and metadata
    got = json.loads(ok(run_cli("get", "pref", "--json")))
    assert got["content"] == "The user prefers tabs over spaces"
    assert datetime.fromisoformat(got["created_at"]) == T0
    assert got["metadata"] == {"from": "cli-test"}

    # stats: counts, and the model was never loaded for it
    stats = json.loads(ok(run_cli("stats", "--json")))
    assert stats["memories"] == 3 and stats["vectors"] == 3
    assert stats["embedder"]["loaded"] is False

    # export to a file
    out = tmp_path / "export.jsonl"
    ok(run_cli("export", "-o", str(out)))
    assert {json.loads(line)["id"] for line in out.read_text().splitlines()} == {"pref", "fact", "todo"}

    # backup, delete, restore
    backup = tmp_path / "backup.db"
    ok(run_cli("backup", str(backup)))
    check_consistency(backup)
    ok(run_cli("delete", "fact"))
    fails(run_cli("get", "fact"), "no memory with id")
    ok(run_cli("restore", str(backup), "--yes"))
    assert json.loads(ok(run_cli("get", "fact", "--json")))["id"] == "fact"
    check_consistency(home_store)


def test_bad_inputs_fail_cleanly(run_cli, home_store, tmp_path, cli_env) -> None:
    """A few representative failures through the console script (the full matrix runs
    in-process through the same entry point below)."""
    fails(run_cli("list", "--timeframe", "2d"), "timeframe: input should be")
    fails(run_cli("add", "x" * (64 * 1024 + 1)), "65537 bytes", "limit is 65536 bytes")
    bad_utf8 = tmp_path / "bad.jsonl"
    bad_utf8.write_bytes(b'{"content": "good"}\n{"content": "caf\xe9"}\n{"content": "good too"}\n')
    fails(run_cli("import", str(bad_utf8)), "line 2", "invalid UTF-8")
    text_file = tmp_path / "notes.txt"
    text_file.write_text("just some notes\n" * 100)
    fails(run_cli("--store", f"sqlite:///{text_file}", "stats"), "not a memoryd store")
    assert json.loads(ok(run_cli("stats", "--json")))["memories"] == 3  # nothing half-imported


# --------------------------------------------------------------------------- in-process matrix


@pytest.fixture
def cli_main(cli_env, monkeypatch, capsys):
    """Call ``memoryd.cli.app:main`` (what the console script runs) in this process."""
    from memoryd.cli.app import main

    for key, value in cli_env.items():
        if key.startswith(("MEMORYD_", "XDG_")):
            monkeypatch.setenv(key, value)

    def run(*args: str, env: dict[str, str] | None = None):
        for key, value in (env or {}).items():
            monkeypatch.setenv(key, value)
        monkeypatch.setattr(sys, "argv", ["memoryd", *args])
        code = 0
        try:
            main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        captured = capsys.readouterr()
        return subprocess.CompletedProcess(["memoryd", *args], code, captured.out, captured.err)

    return run


def _foreign_sqlite(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE invoices (id INTEGER)")
    conn.commit()
    conn.close()
    return path


BAD_INVOCATIONS = [
    # (id, args builder, expected fragments, exit code)
    ("timeframe", lambda d: ["list", "--timeframe", "2d"], ["timeframe: input should be"], 1),
    ("node_type_filter", lambda d: ["list", "--type", "gossip"], ["node_types"], 1),
    ("scope_filter", lambda d: ["list", "--scope", "everyone"], ["scope"], 1),
    ("search_mode", lambda d: ["search", "anything", "--mode", "fuzzy"], ["mode"], 1),
    ("search_timeframe", lambda d: ["search", "anything", "--timeframe", "3w"], ["timeframe"], 1),
    ("empty_content", lambda d: ["add", ""], ["content is empty"], 1),
    ("blank_content", lambda d: ["add", "  \t "], ["content is empty"], 1),
    ("too_large", lambda d: ["add", "é" * (32 * 1024 + 1)], ["65538 bytes", "limit is 65536"], 1),
    ("bad_type", lambda d: ["add", "fine", "--type", "gossip"], ["node_type"], 1),
    ("bad_scope", lambda d: ["add", "fine", "--scope", "team"], ["scope"], 1),
    ("bad_metadata", lambda d: ["add", "fine", "--metadata", "{not json"], ["--metadata"], 1),
    ("metadata_not_object", lambda d: ["add", "fine", "--metadata", "[1]"], ["JSON object"], 1),
    ("missing_memory", lambda d: ["get", "no-such-id"], ["no memory with id"], 1),
    ("delete_missing", lambda d: ["delete", "no-such-id"], ["no memory with id"], 1),
    ("import_bad_utf8", lambda d: ["import", str(d["bad_utf8"])], ["line 2", "invalid UTF-8"], 1),
    ("import_malformed", lambda d: ["import", str(d["malformed"])], ["line 3", "malformed JSON"], 1),
    ("import_not_object", lambda d: ["import", str(d["not_object"])], ["line 1", "JSON object"], 1),
    ("import_too_large", lambda d: ["import", str(d["too_large"])], ["line 2", "limit"], 1),
    ("import_missing_file", lambda d: ["import", str(d["tmp"] / "missing.jsonl")], ["does not exist"], 2),
    ("text_file_store", lambda d: ["--store", f"sqlite:///{d['text']}", "stats"], ["not a memoryd store"], 1),
    ("foreign_store", lambda d: ["--store", f"sqlite:///{d['foreign']}", "list"], ["not a memoryd store"], 1),
    ("relative_url", lambda d: ["--store", "sqlite:relative.db", "stats"], ["absolute path"], 1),
    # Other URL schemes were taken for relative file names: a SQLite file './mysql:/u@h/db'.
    ("unknown_scheme", lambda d: ["--store", "mysql://u@localhost/db", "stats"],
     ["'mysql'", "sqlite:///", "postgresql://"], 1),
    ("driver_scheme", lambda d: ["--store", "postgresql+psycopg://u@localhost/db", "stats"],
     ["'postgresql+psycopg'"], 1),
    ("restore_text", lambda d: ["restore", str(d["text"]), "--yes"], ["not a memoryd store"], 1),
    ("backup_exists", lambda d: ["backup", str(d["text"])], ["already exists"], 1),
]


@pytest.mark.parametrize("case", BAD_INVOCATIONS, ids=[c[0] for c in BAD_INVOCATIONS])
def test_bad_invocations(cli_main, home_store, tmp_path, case) -> None:
    _, build, fragments, code = case
    files = {
        "tmp": tmp_path,
        "bad_utf8": tmp_path / "bad.jsonl",
        "malformed": tmp_path / "malformed.jsonl",
        "not_object": tmp_path / "list.jsonl",
        "too_large": tmp_path / "large.jsonl",
        "text": tmp_path / "notes.txt",
        "foreign": _foreign_sqlite(tmp_path / "foreign.db"),
    }
    files["bad_utf8"].write_bytes(b'{"content": "good"}\n{"content": "caf\xe9"}\n')
    files["malformed"].write_text('{"content": "a"}\n{"content": "b"}\n{"content": \n')
    files["not_object"].write_text("[1, 2, 3]\n")
    files["too_large"].write_text('{"content": "ok"}\n' + json.dumps({"content": "x" * 70000}) + "\n")
    files["text"].write_text("just some notes\n" * 100)
    fails(cli_main(*build(files)), *fragments, code=code)
    # nothing was written to the default store
    result = cli_main("stats", "--json")
    assert json.loads(ok(result))["memories"] == 3


def test_content_limit_from_environment(cli_main, home_store) -> None:
    result = cli_main("add", "this sentence is longer than twenty bytes",
                      env={"MEMORYD_MAX_CONTENT_BYTES": "20"})
    fails(result, "limit is 20 bytes", "MEMORYD_MAX_CONTENT_BYTES")


def test_model_mismatch_is_refused_by_the_cli(run_cli, tmp_path) -> None:
    path = tmp_path / "hash.db"
    with memoryd.open(f"sqlite:///{path}", embedder=HashEmbedder()) as mem:
        mem.add("embedded by another model")
    text = fails(run_cli("--store", f"sqlite:///{path}", "list"), "memoryd reembed")
    assert "test/hash-embedder" in text and "all-MiniLM-L6-v2" in text


def test_import_skip_errors_and_search(run_cli, tmp_path, shared_embedder) -> None:
    """Only `search` here loads the model in its subprocess; the import finds its good
    lines already stored (so it embeds nothing) and reports the bad ones."""
    path = tmp_path / "embed.db"
    store = f"sqlite:///{path}"
    good = [
        {"id": "i1", "content": "Backups run every night at 2am", "tags": ["ops"]},
        {"id": "i3", "content": "The user is allergic to peanuts", "node_type": "fact"},
        {"id": "i5", "content": "Standup is at 9:30 on weekdays", "created_at": "2020-06-01T09:30:00Z"},
    ]
    with memoryd.open(store, embedder=shared_embedder) as mem:
        mem.add_many(good)
    source = tmp_path / "in.jsonl"
    source.write_bytes(
        json.dumps(good[0]).encode() + b"\n"
        + b'{"id": "i2", "content": "caf\xe9 broken utf-8"}\n'
        + json.dumps(good[1]).encode() + b"\n"
        + b"{not json}\n"
        + json.dumps(good[2]).encode() + b"\n"
    )
    out = " ".join(ok(run_cli("--store", store, "import", "--skip-errors", str(source))).split())
    assert "imported 0, already present 3, skipped 2" in out
    assert "line 2" in out and "line 4" in out
    fails(run_cli("--store", store, "import", str(source)), "line 2", "invalid UTF-8")

    # the caller's created_at survives (read back without loading the model)
    got = json.loads(ok(run_cli("--store", store, "get", "i5", "--json")))
    assert datetime.fromisoformat(got["created_at"]) == datetime(2020, 6, 1, 9, 30, tzinfo=UTC)

    hits = json.loads(ok(run_cli("--store", store, "search", "peanut allergy", "--json", "-n", "2")))
    assert hits[0]["memory"]["id"] == "i3"
    assert {"score", "keyword_rank", "semantic_similarity"} <= set(hits[0])
    assert 0 < hits[0]["score"] <= 1
    with memoryd.open(store, create=False) as mem:
        assert {m.id for m in mem.store.iter_memories()} == {"i1", "i3", "i5"}
    check_consistency(path)


def test_piped_output_never_splits_an_id_or_a_command(run_cli, cli_env, shared_embedder) -> None:
    """Output to a pipe or file keeps every id and every printed command on one line (Rich
    would wrap it at 80 columns), so what a user copies is whole."""
    path = Path(cli_env["MEMORYD_HOME"]) / "memoryd.db"
    long_id = "decision-2026-11-28-release-branch-naming-" + "x" * 30
    content = "The release branch is called release/next and is cut every Tuesday " * 3
    with memoryd.open(f"sqlite:///{path}", embedder=shared_embedder) as mem:
        mem.add_many([{"id": long_id, "content": content}])
    env = {k: v for k, v in cli_env.items() if k != "COLUMNS"}  # as a user's pipe sees it
    listed = ok(run_cli("list", env=env))
    assert any(long_id in line for line in listed.splitlines()), listed
    doctor = run_cli("doctor", env=env).stdout
    http_line = [line for line in doctor.splitlines() if "--transport http" in line]
    assert http_line and "Authorization: Bearer" in http_line[0], doctor
