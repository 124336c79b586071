"""JSONL import/export: round trip, idempotent re-import, and every bad line (with its
line number, nothing half-imported unless skip_errors)."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers.consistency import check_consistency

from memoryd.errors import ImportFormatError, InvalidInput
from memoryd.models import SearchFilters

T0 = datetime(2022, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)
USER_FIELDS = ("id", "content", "summary", "node_type", "category", "subcategory", "tags", "source",
               "agent_id", "session_id", "scope", "importance", "severity", "created_at",
               "valid_from", "valid_until", "metadata")


def write_lines(path: Path, lines: list[bytes | str]) -> Path:
    with open(path, "wb") as fh:
        for line in lines:
            fh.write(line if isinstance(line, bytes) else line.encode("utf-8"))
            fh.write(b"\n")
    return path


def good(i: int, **extra) -> str:
    return json.dumps({"id": f"imp-{i:04d}", "content": f"imported memory number {i}", **extra})


def export_text(mem, **kwargs) -> str:
    buf = io.StringIO()
    mem.admin.export_jsonl(buf, **kwargs)
    return buf.getvalue()


def user_view(text: str) -> dict[str, dict]:
    out = {}
    for line in text.splitlines():
        record = json.loads(line)
        out[record["id"]] = {k: record.get(k) for k in USER_FIELDS}
    return out


# --------------------------------------------------------------------------- round trip


@pytest.fixture
def source(mem):
    mem.add_many(
        [
            {"id": "a", "content": "The user prefers dark mode", "node_type": "preference",
             "tags": ["ui", "prefs"], "created_at": T0, "metadata": {"origin": "chat", "n": [1, 2]}},
            {"id": "b", "content": "Ünïcödé 🎉 \"quotes\" and\nnewlines\tand tabs", "summary": "unicode",
             "created_at": T0 + timedelta(days=1), "scope": "project:memoryd", "agent_id": "agent-1",
             "session_id": "s-1", "importance": 0.9, "severity": "high", "category": "cat",
             "subcategory": "sub", "source": "import-test"},
            {"id": "c", "content": "A fact valid for a while", "created_at": T0 + timedelta(days=2),
             "valid_from": T0, "valid_until": T0 + timedelta(days=36500)},
        ]
    )
    return mem


def test_export_import_round_trip(source, tmp_path, open_mem) -> None:
    exported = export_text(source)
    assert len(exported.splitlines()) == 3
    assert [json.loads(l)["id"] for l in exported.splitlines()] == ["a", "b", "c"]  # oldest first
    path = tmp_path / "export.jsonl"
    path.write_text(exported, encoding="utf-8")
    assert len([l for l in path.read_text().splitlines() if l.strip()]) == 3
    target = open_mem(f"sqlite:///{tmp_path}/target.db")
    seen: list[int] = []
    report = target.admin.import_jsonl(path, progress=seen.append)
    assert (report.imported, report.skipped_existing, report.errors) == (3, 0, [])
    assert sum(seen) == 3
    assert user_view(export_text(target)) == user_view(exported)
    assert target.get("a").created_at == T0
    assert target.search("dark theme preference", limit=1)[0].memory.id == "a"
    assert target.history("a")[0].actor == "import"
    check_consistency(tmp_path / "target.db")


def test_reimport_is_idempotent(source, tmp_path) -> None:
    path = tmp_path / "export.jsonl"
    path.write_text(export_text(source), encoding="utf-8")
    report = source.admin.import_jsonl(path)
    assert (report.imported, report.skipped_existing) == (0, 3)
    assert source.store.count() == 3
    # a partially present file: only the missing lines are imported
    write_lines(path, [good(1), good(2)])
    source.admin.import_jsonl(path)
    write_lines(path, [good(1), good(2), good(3)])
    report = source.admin.import_jsonl(path)
    assert (report.imported, report.skipped_existing) == (1, 2)
    assert source.store.count() == 6


def test_export_with_filters(source) -> None:
    text = export_text(source, filters=SearchFilters(node_types=["preference"]))
    assert [json.loads(l)["id"] for l in text.splitlines()] == ["a"]


def test_minimal_lines_and_blank_lines(mem, tmp_path) -> None:
    path = write_lines(tmp_path / "in.jsonl", [
        '{"content": "only content"}',
        "",
        "   ",
        '{"content": "with crlf", "tags": ["x"]}\r',
        '  {"content": "leading spaces", "created_at": "2020-01-01T00:00:00Z"}  ',
    ])
    report = mem.admin.import_jsonl(path)
    assert report.imported == 3 and report.errors == []
    dated = [m for m in mem.list() if m.content == "leading spaces"][0]
    assert dated.created_at == datetime(2020, 1, 1, tzinfo=UTC)


def test_round_trip_keeps_supersession(mem, tmp_path, open_mem) -> None:
    old = mem.add("The office is in Berlin")
    new = mem.add("The office moved to Munich")
    mem.update(old.id, superseded_by=new.id, tier="cold")
    path = tmp_path / "export.jsonl"
    path.write_text(export_text(mem), encoding="utf-8")
    target = open_mem(f"sqlite:///{tmp_path}/target.db")
    target.admin.import_jsonl(path)
    assert target.get(old.id).superseded_by == new.id
    assert target.get(old.id).tier == "cold"
    assert [m.id for m in target.list()] == [new.id]  # superseded memories stay hidden


# --------------------------------------------------------------------------- bad files


BAD_LINES = {
    "invalid_utf8": (b'{"content": "caf\xe9 au lait"}', "invalid UTF-8"),
    "truncated_utf8": (b'{"content": "emoji \xf0\x9f"}', "invalid UTF-8"),
    "malformed_json": ('{"content": "missing brace"', "malformed JSON"),
    "trailing_garbage": ('{"content": "x"} extra', "malformed JSON"),
    "single_quotes": ("{'content': 'python dict'}", "malformed JSON"),
    "not_an_object": ('["content", "in a list"]', "JSON object"),
    "a_string": ('"just a string"', "JSON object"),
    "null": ("null", "JSON object"),
    "no_content": ('{"summary": "no content field"}', "content"),
    "empty_content": ('{"content": "   "}', "empty"),
    "content_not_string": ('{"content": 12345}', "content"),
    "unknown_field": ('{"content": "x", "colour": "red"}', "colour"),
    "bad_node_type": ('{"content": "x", "node_type": "gossip"}', "node_type"),
    "bad_date": ('{"content": "x", "created_at": "last tuesday"}', "created_at"),
    "bad_scope": ('{"content": "x", "scope": "everyone"}', "scope"),
    "too_large": (json.dumps({"content": "x" * (64 * 1024 + 1)}), "limit"),
    # Ids no route could name: blank, padded, with a control character or a '/'.
    "blank_id": ('{"content": "x", "id": "   "}', "id"),
    "padded_id": ('{"content": "x", "id": " imp-0009"}', "id"),
    "id_with_newline": ('{"content": "x", "id": "imp\\n9"}', "id"),
    "id_with_slash": ('{"content": "x", "id": "imp/9"}', "id"),
    "bad_domain": ('{"content": "x", "domains": ["Not A Domain"]}', "domain"),
    "bad_superseded_by": ('{"content": "x", "superseded_by": ""}', "superseded_by"),
}


@pytest.mark.parametrize("case", sorted(BAD_LINES))
def test_bad_line_fails_whole_import_with_line_number(mem, tmp_path, case: str) -> None:
    bad, fragment = BAD_LINES[case]
    lines = [good(i) for i in range(1, 4)] + [bad] + [good(i) for i in range(5, 8)]
    path = write_lines(tmp_path / "in.jsonl", lines)
    with pytest.raises(ImportFormatError) as info:
        mem.admin.import_jsonl(path)
    assert info.value.line_number == 4
    assert str(info.value).startswith("line 4:")
    assert fragment.lower() in str(info.value).lower()
    assert mem.store.count() == 0  # nothing half-imported
    assert mem.stats()["last_seq"] == 0


def test_bad_line_at_the_end_of_a_long_file_imports_nothing(mem, tmp_path) -> None:
    lines = [good(i) for i in range(1, 300)] + [b'{"content": "\xff\xfe"}']
    path = write_lines(tmp_path / "in.jsonl", lines)
    with pytest.raises(ImportFormatError) as info:
        mem.admin.import_jsonl(path, batch_size=50)
    assert info.value.line_number == 300
    assert mem.store.count() == 0


def test_skip_errors_imports_the_good_lines(mem, tmp_path) -> None:
    lines = [good(1), BAD_LINES["invalid_utf8"][0], good(3), BAD_LINES["malformed_json"][0],
             good(5), BAD_LINES["empty_content"][0]]
    path = write_lines(tmp_path / "in.jsonl", lines)
    report = mem.admin.import_jsonl(path, skip_errors=True)
    assert report.imported == 3
    assert [e.split(":")[0] for e in report.errors] == ["line 2", "line 4", "line 6"]
    assert {m.id for m in mem.list()} == {"imp-0001", "imp-0003", "imp-0005"}


def test_repeated_id_in_file_is_refused(mem, tmp_path) -> None:
    path = write_lines(tmp_path / "in.jsonl", [good(1), good(2), good(1)])
    with pytest.raises(InvalidInput, match="repeats"):
        mem.admin.import_jsonl(path)
    assert mem.store.count() == 0


def test_empty_file(mem, tmp_path) -> None:
    path = write_lines(tmp_path / "in.jsonl", [])
    report = mem.admin.import_jsonl(path)
    assert (report.imported, report.skipped_existing, report.errors) == (0, 0, [])


def test_escaped_lone_surrogate_is_a_format_error(mem, tmp_path) -> None:
    path = write_lines(tmp_path / "in.jsonl", [good(1), '{"content": "bad \\ud800 text"}'])
    with pytest.raises(ImportFormatError) as info:
        mem.admin.import_jsonl(path)
    assert info.value.line_number == 2
    report = mem.admin.import_jsonl(path, skip_errors=True)
    assert report.imported == 1 and report.errors[0].startswith("line 2")
