"""`kg scan`: a real project tree on disk becomes structure nodes with touches."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from memoryd.models.kg import Graph
from memoryd.graph.scan import scan_project

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)


def write(root: Path, rel: str, text: str = "") -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    write(
        root,
        "pyproject.toml",
        """
[build-system]
build-backend = "setuptools.build_meta"
[project]
name = "shop"
requires-python = ">=3.11"
dependencies = ["fastapi>=0.110", "httpx[http2]>=0.27", "pydantic"]
[project.scripts]
shop = "shop.cli:main"
[tool.pytest.ini_options]
testpaths = ["tests"]
[tool.ruff]
line-length = 100
[tool.ruff.lint]
select = ["E", "F", "I"]
""",
    )
    write(root, "src/shop/__init__.py")
    write(root, "src/shop/__main__.py", "main()")
    write(root, "src/shop/cli.py")
    write(root, "tests/test_cart.py")
    write(root, "tests/api/test_orders.py")
    write(root, "web/package.json", "{}")
    write(
        root,
        "package.json",
        '{"name": "shop-web", "type": "module", "main": "web/index.js",'
        ' "scripts": {"build": "vite build", "test": "vitest run"}}',
    )
    write(root, "web/index.js")
    write(root, "web/cart.test.js")
    write(root, "Makefile", "test:\n\tpytest\nlint: deps\n\truff check .\nVERSION := 1\n")
    write(
        root,
        ".editorconfig",
        "root = true\n[*]\nindent_style = space\nindent_size = 4\n[Makefile]\nindent_style = tab\n",
    )
    write(root, "tsconfig.json", '{"compilerOptions": {"strict": true, "target": "es2022"}}')
    write(root, ".github/workflows/ci.yml", "on: push")
    write(root, "scripts/test", "#!/bin/sh")
    write(root, "node_modules/left-pad/index.js")  # vendored: ignored
    write(root, ".venv/lib/site.py")
    return root


def test_scan_finds_languages_entry_points_tests_commands_and_conventions(project: Path) -> None:
    result = scan_project(project, now=NOW)
    nodes = {n.id: n for n in result.nodes}
    assert result.warnings == []
    assert {
        "scan-languages",
        "scan-tests",
        "scan-entry-python",
        "scan-build-python",
        "scan-convention-ruff",
        "scan-build-node",
        "scan-entry-node",
        "scan-build-make",
        "scan-convention-editorconfig",
        "scan-convention-typescript",
        "scan-ci",
        "scan-scripts",
        "scan-entry-files",
    } <= set(nodes)
    assert (
        "Python 5 files (71%)" in nodes["scan-languages"].body
        and "JavaScript 2 files (29%)" in nodes["scan-languages"].body
    )
    assert "node_modules" not in nodes["scan-languages"].body
    assert "`shop` -> shop.cli:main" in nodes["scan-entry-python"].body
    assert "3 dependencies (fastapi, httpx, pydantic)" in nodes["scan-build-python"].body
    assert "line-length = 100" in nodes["scan-convention-ruff"].body
    assert "`npm run test`: vitest run" in nodes["scan-build-node"].body
    assert (
        "test, lint" in nodes["scan-build-make"].body
        and "VERSION" not in nodes["scan-build-make"].body
    )
    assert "Makefile: indent_style=tab" in nodes["scan-convention-editorconfig"].body
    assert "strict=True" in nodes["scan-convention-typescript"].body
    assert "3 test files" in nodes["scan-tests"].body
    assert set(nodes["scan-tests"].touches) == {"tests", "tests/api", "web"}
    assert nodes["scan-entry-files"].touches == [
        "src/shop/__main__.py",
        "src/shop/cli.py",
        "web/index.js",
    ]
    assert all(n.touches for n in result.nodes) and all("scan" in n.tags for n in result.nodes)
    # Every node joins the overview; the result is a valid graph.
    graph = Graph(scope="project:shop", nodes=result.nodes, edges=result.edges)
    assert len(graph.edges) == len(graph.nodes) - 1


def test_rescanning_gives_the_same_ids(project: Path) -> None:
    first = scan_project(project, now=NOW)
    write(project, "src/shop/extra.py")
    second = scan_project(project, now=NOW)
    assert [n.id for n in first.nodes] == [n.id for n in second.nodes]
    assert "Python 6 files" in {n.id: n for n in second.nodes}["scan-languages"].body


def test_broken_config_files_are_warnings_not_failures(project: Path) -> None:
    write(project, "pyproject.toml", "[project\nname = ")
    write(project, "package.json", '{"scripts": {"build": }')
    write(project, "Cargo.toml", "[package]\nname = 'x'\nedition = '2021'\n")
    (project / "Makefile").write_bytes(b"\xff\xfe bad")
    result = scan_project(project, now=NOW)
    assert any(w.startswith("pyproject.toml: invalid TOML") for w in result.warnings)
    assert "package.json: invalid JSON at line 1 column 23" in result.warnings
    assert "Makefile: cannot be read (UnicodeDecodeError)" in result.warnings
    ids = {n.id for n in result.nodes}
    assert "scan-build-python" not in ids and "scan-build-rust" in ids


def test_scan_limits_and_refuses_a_file(project: Path) -> None:
    result = scan_project(project, now=NOW, max_files=3)
    assert result.truncated and result.files_seen == 3
    with pytest.raises(NotADirectoryError):
        scan_project(project / "Makefile", now=NOW)
