"""The graph package stays pure: no engine, store or face imports, and no torch."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

GRAPH = Path(__file__).resolve().parents[1] / "src" / "memoryd" / "graph"
FORBIDDEN = (
    "memoryd.engine",
    "memoryd.store",
    "memoryd.operations",
    "memoryd.api",
    "memoryd.cli",
    "memoryd.mcp",
    "memoryd.serving",
    "memoryd.gateway",
    "memoryd.retrieval",
    "memoryd.opening",
)


def imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_graph_modules_import_no_engine_store_or_face() -> None:
    files = sorted(GRAPH.glob("*.py"))
    assert len(files) >= 10
    for path in files:
        bad = sorted(n for n in imported(path) if n.startswith(FORBIDDEN))
        assert bad == [], f"{path.name} imports {bad}"
        assert len(path.read_text().splitlines()) <= 500, path.name


def test_graph_modules_load_without_torch() -> None:
    code = (
        "import sys, memoryd.graph.core, memoryd.graph.compact, memoryd.graph.jsonfile, "
        "memoryd.graph.merge, memoryd.graph.scan, memoryd.graph.importers, memoryd.graph.chat; "
        "print('torch' in sys.modules, 'sentence_transformers' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False"]
