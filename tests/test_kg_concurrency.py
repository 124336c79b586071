"""Three real processes write one project graph at once, through the engine: the store and
graph.json both end up with every node and edge, and the file is valid JSON throughout."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.embedders import HashEmbedder

import memoryd
from memoryd.graph.jsonfile import GraphFileError, read_graph_file

HELPER = Path(__file__).parent / "helpers" / "kg_writer.py"
PER_WRITER = 25


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_three_processes_writing_one_project_graph_lose_nothing(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = (f"sqlite:///{tmp_path / 'm.db'}" if backend == "sqlite"
           else request.getfixturevalue("pg_database")())
    home, root, go = tmp_path / "home", tmp_path / "race", tmp_path / "go"
    root.mkdir()
    memoryd.open(url, home=home, embedder=HashEmbedder()).close()  # schema in place first
    env = {**os.environ, "MEMORYD_HOME": str(home)}
    writers = [subprocess.Popen([sys.executable, str(HELPER), url, str(home), str(root), str(w),
                                 str(PER_WRITER), str(go)], env=env) for w in range(3)]
    path = root / ".knowledge" / "graph.json"
    time.sleep(1.0)
    go.touch()
    valid_reads = 0
    while any(p.poll() is None for p in writers):
        try:
            valid_reads += read_graph_file(path, scope="project:race") is not None
        except GraphFileError as exc:  # pragma: no cover - the failure this test looks for
            pytest.fail(f"a reader saw a broken graph file: {exc}")
        time.sleep(0.01)
    assert [p.wait(timeout=600) for p in writers] == [0, 0, 0]
    expected = sorted(f"w{w}-{i}" for w in range(3) for i in range(PER_WRITER))
    on_file = read_graph_file(path, scope="project:race")
    assert on_file is not None and sorted(n.id for n in on_file.nodes) == expected
    assert len(on_file.edges) == 3 * (PER_WRITER - 1)
    assert valid_reads > 0 and not list(path.parent.glob("*.tmp"))
    with memoryd.open(url, home=home, embedder=HashEmbedder()) as mem:
        core = mem.kg.read(str(root), include_user=False)
        assert core.active == 3 * PER_WRITER and core.problems == [] and core.conflicts == []
        assert sorted(n.id for n in on_file.nodes) == sorted(
            line.split()[1] for line in core.text.splitlines() if line.startswith("- "))
