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

import json
import os
import re
import tomllib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memoryd.graph.model import MAX_BODY_CHARS, GraphEdge, GraphNode, NodeKind

SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", ".venv", "venv", "env", "__pycache__",
             "dist", "build", "target", ".mypy_cache", ".pytest_cache", ".ruff_cache",
             ".tox", ".next", ".cache", ".knowledge", "vendor", ".idea", ".vscode"}
LANGUAGES = {
    ".py": "Python", ".ts": "TypeScript", ".tsx": "TypeScript", ".js": "JavaScript",
    ".jsx": "JavaScript", ".mjs": "JavaScript", ".cjs": "JavaScript", ".rs": "Rust",
    ".go": "Go", ".java": "Java", ".kt": "Kotlin", ".rb": "Ruby", ".php": "PHP",
    ".c": "C", ".h": "C", ".cc": "C++", ".cpp": "C++", ".hpp": "C++", ".cs": "C#",
    ".swift": "Swift", ".scala": "Scala", ".sh": "Shell", ".sql": "SQL", ".lua": "Lua",
    ".ex": "Elixir", ".exs": "Elixir", ".dart": "Dart", ".zig": "Zig", ".vue": "Vue",
    ".svelte": "Svelte",
}
TEST_PATTERNS = (
    re.compile(r"(^|/)test_[^/]+\.py$"), re.compile(r"[^/]+_test\.(py|go)$"),
    re.compile(r"\.(test|spec)\.[jt]sx?$"), re.compile(r"(^|/)__tests__/"),
)
_REQUIREMENT_NAME = re.compile(r"[<>=!~\[ ;@]")
MAX_FILES = 50_000
MAX_CONFIG_BYTES = 1_000_000


@dataclass
class ScanResult:
    """Nodes (and ``part_of`` edges to the overview node) found in a project."""

    nodes: list[GraphNode] = field(default_factory=list)
    edges: list[GraphEdge] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    files_seen: int = 0
    truncated: bool = False


def walk_files(root: Path, limit: int = MAX_FILES) -> Iterator[str]:
    """Relative POSIX paths of the project's files, skipping vendored and generated dirs."""
    count = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.endswith(".egg-info"))
        rel = Path(dirpath).relative_to(root)
        for name in sorted(filenames):
            yield (rel / name).as_posix()
            count += 1
            if count >= limit:
                return


class _Finder:
    """Collects nodes while reading config files; remembers what could not be parsed."""

    def __init__(self, root: Path, now: datetime) -> None:
        self.root, self.now = root, now
        self.result = ScanResult()

    def add(self, node_id: str, name: str, kind: NodeKind, body: str,
            touches: list[str], tags: list[str]) -> None:
        if len(body) > MAX_BODY_CHARS:
            body = body[: MAX_BODY_CHARS - 1].rstrip() + "…"
        self.result.nodes.append(GraphNode(
            id=node_id, name=name, type=kind, body=body, touches=touches[:32],
            tags=["scan", *tags], created=self.now, updated=self.now))

    def read_text(self, rel: str) -> str | None:
        path = self.root / rel
        try:
            if path.stat().st_size > MAX_CONFIG_BYTES:
                self.result.warnings.append(f"{rel}: larger than {MAX_CONFIG_BYTES} bytes, skipped")
                return None
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            self.result.warnings.append(f"{rel}: cannot be read ({exc.__class__.__name__})")
            return None

    def toml(self, rel: str) -> dict[str, Any] | None:
        text = self.read_text(rel)
        if text is None:
            return None
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            self.result.warnings.append(f"{rel}: invalid TOML ({exc})")
            return None

    def json(self, rel: str) -> dict[str, Any] | None:
        text = self.read_text(rel)
        if text is None:
            return None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            self.result.warnings.append(f"{rel}: invalid JSON at line {exc.lineno} column {exc.colno}")
            return None
        return data if isinstance(data, dict) else None


def _languages(f: _Finder, files: list[str]) -> None:
    counts = Counter(LANGUAGES[ext] for p in files if (ext := Path(p).suffix.lower()) in LANGUAGES)
    if not counts:
        return
    total = sum(counts.values())
    parts = [f"{lang} {n} files ({round(100 * n / total)}%)" for lang, n in counts.most_common(8)]
    top_dirs = Counter(p.split("/", 1)[0] for p in files if "/" in p)
    dirs = [d for d, _ in top_dirs.most_common(6)]
    f.add("scan-languages", f"{f.root.name}: languages and layout", "component",
          "Languages: " + ", ".join(parts) + ". Top-level directories: " + ", ".join(dirs) + ".",
          dirs, ["structure"])


def _tests(f: _Finder, files: list[str]) -> None:
    tests = [p for p in files if any(rx.search(p) for rx in TEST_PATTERNS)]
    if not tests:
        return
    dirs = Counter(str(Path(p).parent) for p in tests)
    where = ", ".join(f"{d}/ ({n})" for d, n in dirs.most_common(5))
    styles = sorted({"test_*.py" if re.search(r"test_[^/]+\.py$", p) else
                     "*_test.go" if p.endswith("_test.go") else
                     "*.test/spec.[jt]s" if re.search(r"\.(test|spec)\.", p) else "other"
                     for p in tests})
    f.add("scan-tests", "Test layout", "convention",
          f"{len(tests)} test files ({', '.join(styles)}), in {where}.",
          [d for d, _ in dirs.most_common(5) if d != "."], ["tests"])


def _python(f: _Finder, files: set[str]) -> None:
    data = f.toml("pyproject.toml") if "pyproject.toml" in files else None
    if not data:
        return
    project = data.get("project", {}) or {}
    tool = data.get("tool", {}) or {}
    scripts = project.get("scripts", {}) or {}
    if scripts:
        body = "Console scripts: " + ", ".join(f"`{k}` -> {v}" for k, v in scripts.items())
        f.add("scan-entry-python", "Python entry points", "component", body, ["pyproject.toml"], ["entry-point"])
    facts = []
    if project.get("requires-python"):
        facts.append(f"requires Python {project['requires-python']}")
    backend = (data.get("build-system", {}) or {}).get("build-backend")
    if backend:
        facts.append(f"build backend {backend}")
    deps = project.get("dependencies") or []
    if deps:
        names = ", ".join(_REQUIREMENT_NAME.split(d, maxsplit=1)[0] for d in deps[:8])
        facts.append(f"{len(deps)} dependencies ({names}{', ...' if len(deps) > 8 else ''})")
    pytest_opts = ((tool.get("pytest") or {}).get("ini_options") or {})
    if pytest_opts.get("testpaths"):
        facts.append(f"pytest testpaths {pytest_opts['testpaths']}")
    if facts:
        f.add("scan-build-python", f"Python project {project.get('name', '')}".strip(), "fact",
              "; ".join(facts) + ".", ["pyproject.toml"], ["build", "python"])
    ruff = tool.get("ruff")
    if isinstance(ruff, dict):
        bits = [f"{k} = {ruff[k]}" for k in ("line-length", "target-version") if k in ruff]
        lint = ruff.get("lint") or {}
        if lint.get("select"):
            bits.append(f"lint.select = {lint['select']}")
        f.add("scan-convention-ruff", "Ruff settings", "convention",
              "Ruff in pyproject.toml: " + (", ".join(bits) or "default settings") + ".",
              ["pyproject.toml"], ["lint", "python"])


def _node(f: _Finder, files: set[str]) -> None:
    data = f.json("package.json") if "package.json" in files else None
    if not data:
        return
    scripts = data.get("scripts") or {}
    if scripts:
        shown = [f"`npm run {k}`: {v}" for k, v in list(scripts.items())[:12]]
        f.add("scan-build-node", "npm scripts", "command", "; ".join(shown) + ".",
              ["package.json"], ["build", "javascript"])
    entry = {k: data[k] for k in ("main", "module", "bin", "type") if k in data}
    if entry:
        f.add("scan-entry-node", f"Node package {data.get('name', '')}".strip(), "component",
              "; ".join(f"{k}: {json.dumps(v)}" for k, v in entry.items()) + ".",
              ["package.json"], ["entry-point"])


def _rust(f: _Finder, files: set[str]) -> None:
    data = f.toml("Cargo.toml") if "Cargo.toml" in files else None
    if not data:
        return
    package = data.get("package") or {}
    facts = [f"crate {package.get('name')}" if package.get("name") else "workspace"]
    if package.get("edition"):
        facts.append(f"edition {package['edition']}")
    bins = [b.get("name") for b in data.get("bin", []) if isinstance(b, dict)]
    if bins or "src/main.rs" in files:
        facts.append("binaries: " + ", ".join(bins or ["src/main.rs"]))
    members = (data.get("workspace") or {}).get("members")
    if members:
        facts.append(f"workspace members {members}")
    f.add("scan-build-rust", "Rust crate", "fact",
          "; ".join(facts) + ". Build `cargo build`, test `cargo test`.", ["Cargo.toml"], ["build", "rust"])


def _make(f: _Finder, files: set[str]) -> None:
    if "Makefile" not in files:
        return
    text = f.read_text("Makefile") or ""
    targets = [m.group(1) for m in re.finditer(r"^([A-Za-z0-9][\w.-]*)\s*:(?!=)", text, re.M)]
    if targets:
        f.add("scan-build-make", "Makefile targets", "command",
              "`make` targets: " + ", ".join(dict.fromkeys(targets[:20])) + ".", ["Makefile"], ["build"])


def _scripts_dir(f: _Finder, files: list[str]) -> None:
    scripts = [p for p in files if p.startswith("scripts/") and p.count("/") == 1]
    if scripts:
        f.add("scan-scripts", "Project scripts", "command",
              "Run from the project root: " + ", ".join(f"./{p}" for p in scripts[:15]) + ".",
              scripts[:15], ["build"])


def _entry_files(f: _Finder, files: list[str]) -> None:
    found = [p for p in files if Path(p).name in ("__main__.py", "main.go", "main.rs", "main.py",
                                                  "index.ts", "index.js", "cli.py", "app.py")]
    found = [p for p in found if not any(rx.search(p) for rx in TEST_PATTERNS)][:10]
    if found:
        f.add("scan-entry-files", "Entry-point files", "component",
              "Likely entry points: " + ", ".join(found) + ".", found, ["entry-point"])


def _editorconfig(f: _Finder, files: set[str]) -> None:
    if ".editorconfig" not in files:
        return
    text = f.read_text(".editorconfig") or ""
    rules, section = [], "*"
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
        elif "=" in line and not line.startswith(("#", ";")):
            key, value = (p.strip() for p in line.split("=", 1))
            if key in ("indent_style", "indent_size", "max_line_length", "end_of_line", "charset"):
                rules.append(f"{section}: {key}={value}")
    if rules:
        f.add("scan-convention-editorconfig", "Editor settings", "convention",
              "; ".join(rules[:15]) + ".", [".editorconfig"], ["style"])


def _named_configs(f: _Finder, files: set[str]) -> None:
    groups = {
        "scan-convention-eslint": ("ESLint config", "lint", [".eslintrc", ".eslintrc.js", ".eslintrc.cjs",
            ".eslintrc.json", ".eslintrc.yml", "eslint.config.js", "eslint.config.mjs", "eslint.config.ts"]),
        "scan-convention-prettier": ("Prettier config", "style", [".prettierrc", ".prettierrc.json",
            ".prettierrc.js", "prettier.config.js", ".prettierrc.yaml"]),
        "scan-convention-ruff-file": ("Ruff config file", "lint", ["ruff.toml", ".ruff.toml"]),
        "scan-convention-rustfmt": ("rustfmt config", "style", ["rustfmt.toml", ".rustfmt.toml"]),
        "scan-convention-typescript": ("TypeScript config", "types", ["tsconfig.json"]),
        "scan-convention-precommit": ("pre-commit hooks", "lint", [".pre-commit-config.yaml"]),
        "scan-build-docker": ("Container build", "build", ["Dockerfile", "docker-compose.yml", "compose.yaml"]),
        "scan-build-go": ("Go module", "build", ["go.mod"]),
    }
    for node_id, (name, tag, names) in groups.items():
        present = [n for n in names if n in files]
        if not present:
            continue
        body = f"Configured in {', '.join(present)}."
        if present[0] == "tsconfig.json" and (data := f.json("tsconfig.json")):
            opts = data.get("compilerOptions") or {}
            keys = [f"{k}={opts[k]}" for k in ("strict", "target", "module") if k in opts]
            body += (" " + ", ".join(keys) + ".") if keys else ""
        f.add(node_id, name, "convention" if "convention" in node_id else "fact", body, present, [tag])
    workflows = sorted(p for p in files if p.startswith(".github/workflows/"))
    if workflows:
        f.add("scan-ci", "Continuous integration", "fact",
              "CI workflows: " + ", ".join(Path(p).name for p in workflows[:10]) + ".", workflows[:10], ["ci"])


def scan_project(root: Path | str, *, now: datetime, max_files: int = MAX_FILES) -> ScanResult:
    """Scan ``root`` and return its structure as nodes (ids ``scan-…``), never raising on
    a malformed config file (see ``warnings``). ``root`` must be a directory."""
    root = Path(root).resolve()
    if not root.is_dir():
        raise NotADirectoryError(f"not a project directory: {root}")
    finder = _Finder(root, now)
    files = list(walk_files(root, max_files))
    finder.result.files_seen = len(files)
    finder.result.truncated = len(files) >= max_files
    names = set(files)
    _languages(finder, files)
    _tests(finder, files)
    _python(finder, names)
    _node(finder, names)
    _rust(finder, names)
    _make(finder, names)
    _scripts_dir(finder, files)
    _entry_files(finder, files)
    _editorconfig(finder, names)
    _named_configs(finder, names)
    overview = "scan-languages"
    ids = {n.id for n in finder.result.nodes}
    if overview in ids:
        finder.result.edges = [GraphEdge(source=i, target=overview, type="part_of", weight=0.3,
                                         created=now) for i in sorted(ids - {overview})]
    finder.result.nodes.sort(key=lambda n: n.id)
    return finder.result
