"""``memoryd kg scan``: a project's structure as graph nodes, read from its files.

Found without running anything or calling a model: languages (by file extension),
entry points (console scripts, ``bin``/``main``, ``[[bin]]``, ``__main__.py``,
``main.go``), the test layout, build/test/lint commands (``[project.scripts]``,
``package.json`` scripts, Makefile targets, ``scripts/``), and conventions in config
files (.editorconfig, ruff, pytest, eslint, prettier, rustfmt, TypeScript). Each finding
is one node with ``touches`` naming the files it came from, under a fixed id
(``scan-…``), so scanning again updates the same nodes instead of adding new ones.

A config file that cannot be parsed is reported in ``ScanResult.warnings`` and skipped.

    >>> result = scan_project(Path("."), now=now)
    >>> [n.id for n in result.nodes]
    ['scan-build-python', 'scan-convention-ruff', 'scan-languages', ...]
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from memoryd.models.kg import GraphEdge
from memoryd.graph.scan_configs import (
    MAX_CONFIG_BYTES,
    Finder,
    ScanResult,
    editorconfig_config,
    make_config,
    named_configs,
    node_config,
    python_config,
    rust_config,
)

__all__ = ["MAX_CONFIG_BYTES", "ScanResult", "scan_project", "walk_files"]

SKIP_DIRS = {
    ".git",
    ".hg",
    ".svn",
    "node_modules",
    ".venv",
    "venv",
    "env",
    "__pycache__",
    "dist",
    "build",
    "target",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".tox",
    ".next",
    ".cache",
    ".knowledge",
    "vendor",
    ".idea",
    ".vscode",
}
LANGUAGES = {
    ".py": "Python",
    ".ts": "TypeScript",
    ".tsx": "TypeScript",
    ".js": "JavaScript",
    ".jsx": "JavaScript",
    ".mjs": "JavaScript",
    ".cjs": "JavaScript",
    ".rs": "Rust",
    ".go": "Go",
    ".java": "Java",
    ".kt": "Kotlin",
    ".rb": "Ruby",
    ".php": "PHP",
    ".c": "C",
    ".h": "C",
    ".cc": "C++",
    ".cpp": "C++",
    ".hpp": "C++",
    ".cs": "C#",
    ".swift": "Swift",
    ".scala": "Scala",
    ".sh": "Shell",
    ".sql": "SQL",
    ".lua": "Lua",
    ".ex": "Elixir",
    ".exs": "Elixir",
    ".dart": "Dart",
    ".zig": "Zig",
    ".vue": "Vue",
    ".svelte": "Svelte",
}
TEST_PATTERNS = (
    re.compile(r"(^|/)test_[^/]+\.py$"),
    re.compile(r"[^/]+_test\.(py|go)$"),
    re.compile(r"\.(test|spec)\.[jt]sx?$"),
    re.compile(r"(^|/)__tests__/"),
)
MAX_FILES = 50_000


def walk_files(root: Path, limit: int = MAX_FILES) -> Iterator[str]:
    """Relative POSIX paths of the project's files, skipping vendored and generated dirs."""
    count = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(
            d for d in dirnames if d not in SKIP_DIRS and not d.endswith(".egg-info")
        )
        rel = Path(dirpath).relative_to(root)
        for name in sorted(filenames):
            yield (rel / name).as_posix()
            count += 1
            if count >= limit:
                return


def _languages(f: Finder, files: list[str]) -> None:
    counts = Counter(LANGUAGES[ext] for p in files if (ext := Path(p).suffix.lower()) in LANGUAGES)
    if not counts:
        return
    total = sum(counts.values())
    parts = [f"{lang} {n} files ({round(100 * n / total)}%)" for lang, n in counts.most_common(8)]
    top_dirs = Counter(p.split("/", 1)[0] for p in files if "/" in p)
    dirs = [d for d, _ in top_dirs.most_common(6)]
    f.add(
        "scan-languages",
        f"{f.root.name}: languages and layout",
        "component",
        "Languages: " + ", ".join(parts) + ". Top-level directories: " + ", ".join(dirs) + ".",
        dirs,
        ["structure"],
    )


def _tests(f: Finder, files: list[str]) -> None:
    tests = [p for p in files if any(rx.search(p) for rx in TEST_PATTERNS)]
    if not tests:
        return
    dirs = Counter(str(Path(p).parent) for p in tests)
    where = ", ".join(f"{d}/ ({n})" for d, n in dirs.most_common(5))
    styles = sorted(
        {
            "test_*.py"
            if re.search(r"test_[^/]+\.py$", p)
            else "*_test.go"
            if p.endswith("_test.go")
            else "*.test/spec.[jt]s"
            if re.search(r"\.(test|spec)\.", p)
            else "other"
            for p in tests
        }
    )
    f.add(
        "scan-tests",
        "Test layout",
        "convention",
        f"{len(tests)} test files ({', '.join(styles)}), in {where}.",
        [d for d, _ in dirs.most_common(5) if d != "."],
        ["tests"],
    )


def _scripts_dir(f: Finder, files: list[str]) -> None:
    scripts = [p for p in files if p.startswith("scripts/") and p.count("/") == 1]
    if scripts:
        f.add(
            "scan-scripts",
            "Project scripts",
            "command",
            "Run from the project root: " + ", ".join(f"./{p}" for p in scripts[:15]) + ".",
            scripts[:15],
            ["build"],
        )


def _entry_files(f: Finder, files: list[str]) -> None:
    found = [
        p
        for p in files
        if Path(p).name
        in (
            "__main__.py",
            "main.go",
            "main.rs",
            "main.py",
            "index.ts",
            "index.js",
            "cli.py",
            "app.py",
        )
    ]
    found = [p for p in found if not any(rx.search(p) for rx in TEST_PATTERNS)][:10]
    if found:
        f.add(
            "scan-entry-files",
            "Entry-point files",
            "component",
            "Likely entry points: " + ", ".join(found) + ".",
            found,
            ["entry-point"],
        )


def scan_project(root: Path | str, *, now: datetime, max_files: int = MAX_FILES) -> ScanResult:
    """Scan ``root`` and return its structure as nodes (ids ``scan-…``), never raising on
    a malformed config file (see ``warnings``). ``root`` must be a directory."""
    root = Path(root).resolve()
    if not root.is_dir():
        raise NotADirectoryError(f"not a project directory: {root}")
    finder = Finder(root, now)
    files = list(walk_files(root, max_files))
    finder.result.files_seen = len(files)
    finder.result.truncated = len(files) >= max_files
    names = set(files)
    _languages(finder, files)
    _tests(finder, files)
    python_config(finder, names)
    node_config(finder, names)
    rust_config(finder, names)
    make_config(finder, names)
    _scripts_dir(finder, files)
    _entry_files(finder, files)
    editorconfig_config(finder, names)
    named_configs(finder, names)
    overview = "scan-languages"
    ids = {n.id for n in finder.result.nodes}
    if overview in ids:
        finder.result.edges = [
            GraphEdge(source=i, target=overview, type="part_of", weight=0.3, created=now)
            for i in sorted(ids - {overview})
        ]
    finder.result.nodes.sort(key=lambda n: n.id)
    return finder.result
