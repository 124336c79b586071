"""A person editing ``.knowledge/graph.json`` by hand, on both backends, with real files: a node
written without the bookkeeping fields is taken (``created`` is the merge's time), one bad
node or edge is reported at its path, line and column and kept in the file while every other
edit is merged, and fixing it merges it too."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from test_kg_engine import SHOP, file_of, kg, write_basics  # noqa: F401 - kg is a fixture

from memoryd.graph.jsonfile import GraphFileError, read_graph_file
from memoryd.graph.memories import node_memory_id

KINDS = "'insight', 'decision'"


def _edit(path: Path, change) -> str:
    data = json.loads(path.read_text())
    change(data)
    text = json.dumps(data, indent=2)
    path.write_text(text)
    return text


def _position(text: str, needle: str) -> tuple[int, int]:
    """Line and column (1-based) of the first ``needle``."""
    offset = text.index(needle)
    return text.count("\n", 0, offset) + 1, offset - (text.rfind("\n", 0, offset) + 1) + 1


def test_a_node_written_by_hand_without_created_is_merged(kg) -> None:
    mem, root = kg
    write_basics(mem, root)
    before = datetime.now(UTC)

    def add(data: dict) -> None:
        data["nodes"].append({"id": "deploy-tuesday", "name": "Deploys on Tuesday",
                              "type": "fact", "body": "We deploy on Tuesdays."})
        data["nodes"][0]["body"] = "Eight writers, not four."  # lock-storm

    _edit(file_of(root), add)
    core = mem.kg.read(str(root))
    assert core.problems == [] and core.conflicts == []
    assert "- deploy-tuesday (fact) Deploys on Tuesday: We deploy on Tuesdays." in core.text
    assert "Eight writers, not four." in core.text
    on_file = read_graph_file(file_of(root), scope=SHOP)
    assert on_file is not None
    created = on_file.node("deploy-tuesday").created
    assert before <= created <= datetime.now(UTC)  # the time of the merge, now in the file
    assert mem.get(node_memory_id(SHOP, "deploy-tuesday")).created_at == created


def _break(data: dict) -> None:
    nodes = {n["id"]: n for n in data["nodes"]}
    nodes["wal-busy"]["type"] = "nonsense"  # an existing node made invalid
    nodes["lock-storm"]["body"] = "Eight writers, not four."  # a good edit beside it
    data["nodes"].append({"id": "a-note", "name": "A note", "type": "note"})  # a new bad one
    data["nodes"].append({"id": "good-new", "name": "Good new node", "body": "Taken."})
    data["edges"].append({"source": "good-new", "target": "no-such-node"})


def test_one_bad_node_is_reported_where_it_is_and_blocks_nothing_else(kg) -> None:
    mem, root = kg
    write_basics(mem, root)
    path = file_of(root)
    _edit(path, _break)
    core = mem.kg.read(str(root))
    text = path.read_text()  # merged and written again: the problems point into this text
    assert len(core.problems) == 3, core.problems
    wal, note, edge = core.problems
    line, column = _position(text, '"nonsense"')
    assert f"graph.json:{line}:{column}: node 'wal-busy'.type: Input should be {KINDS}" in wal
    line, column = _position(text, '"note"')
    assert f"graph.json:{line}:{column}: node 'a-note'.type: Input should be" in note
    line, column = _position(text, '{"source": "good-new", "target": "no-such-node"')
    assert f"graph.json:{line}:{column}: edge 2 (good-new -> no-such-node): no node " \
           "'no-such-node'" in edge
    # the rest was merged; the existing node stands as stored, not archived, its edge kept
    assert "Eight writers, not four." in core.text and "- good-new (insight)" in core.text
    stored = mem.get(node_memory_id(SHOP, "wal-busy"))
    assert stored.metadata["kg"]["kind"] == "gotcha" and not stored.metadata["kg"]["archived"]
    assert "→ caused_by lock-storm" in core.text
    # the bad items stay in the file as written, and a write neither fails nor drops them
    written = mem.kg.write(str(root), nodes=[{"name": "Written meanwhile"}])
    assert written.created == ["written-meanwhile"] and len(written.problems) == 3
    kept = path.read_text()
    assert '"type": "nonsense"' in kept and '"type": "note"' in kept and "no-such-node" in kept
    assert len(mem.kg.read(str(root)).problems) == 3  # reported until fixed
    # fixed by hand: merged like any edit
    def fix(data: dict) -> None:
        for node in data["nodes"]:
            if node["id"] in ("wal-busy", "a-note"):
                node["type"] = "fact"
        data["edges"] = [e for e in data["edges"] if e["target"] != "no-such-node"]

    _edit(path, fix)
    fixed = mem.kg.read(str(root))
    assert fixed.problems == [] and "- a-note (fact) A note" in fixed.text
    assert "- wal-busy (fact)" in fixed.text and "→ caused_by lock-storm" in fixed.text


def test_a_graph_import_without_created_takes_the_import_time(kg) -> None:
    mem, root = kg
    write_basics(mem, root)
    text = json.dumps({"format": "memoryd-knowledge-graph", "version": 1, "nodes": [
        {"id": "from-review", "name": "From review", "type": "convention"},
        {"id": "wal-busy", "name": "SQLite busy timeout", "type": "gotcha",
         "body": "Set busy_timeout before WAL writes.", "touches": ["src/db.py"]}]})
    created = mem.get(node_memory_id(SHOP, "wal-busy")).created_at
    before = datetime.now(UTC)
    result = mem.kg.import_text(text, project=str(root))
    assert result.created == ["from-review"] and result.conflicts == []
    assert result.updated == []  # wal-busy: the stored created stands for the missing one
    assert mem.get(node_memory_id(SHOP, "wal-busy")).created_at == created
    assert before <= mem.get(node_memory_id(SHOP, "from-review")).created_at <= datetime.now(UTC)


@pytest.mark.parametrize("change, key, message", [
    (lambda t: t.replace('"version": 1', '"version": 9'), '"version": ',
     "version 9 is not supported"),
    (lambda t: t.replace('"project:shop"', '"project:other"'), '"scope": ',
     "holds graph 'project:other'"),
    (lambda t: t.replace('"scope"', '"colour": "blue",\n  "scope"'), '"colour": ',
     "unknown field 'colour'"),
])
def test_a_file_refused_whole_says_line_and_column(kg, change, key, message) -> None:
    """Only what makes the whole file unreadable refuses it; at the value it is about."""
    mem, root = kg
    write_basics(mem, root)
    path = file_of(root)
    text = change(path.read_text())
    path.write_text(text)
    with pytest.raises(GraphFileError, match=message) as refused:
        read_graph_file(path, scope=SHOP)
    line, column = _position(text, key)
    column += len(key)
    assert (refused.value.line, refused.value.column) == (line, column), str(refused.value)
    assert f"graph.json:{line}:{column}: " in str(refused.value)
    if "holds graph" not in message:  # (a read by root follows the scope the file declares)
        assert "not merged" in mem.kg.read(str(root)).problems[0]
