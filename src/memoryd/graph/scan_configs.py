"""Readers of a project's config files for ``kg scan`` (see memoryd.graph.scan).

Each reader looks for one kind of file (pyproject.toml, package.json, Cargo.toml,
Makefile, .editorconfig, linter and formatter configs, CI workflows) and adds what it
finds as nodes through a :class:`Finder`, which also records the files it could not parse.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memoryd.models.kg import MAX_BODY_CHARS, GraphEdge, GraphNode, NodeKind

_REQUIREMENT_NAME = re.compile(r"[<>=!~\[ ;@]")
MAX_CONFIG_BYTES = 1_000_000


@dataclass
class ScanResult:
    """Nodes (and ``part_of`` edges to the overview node) found in a project."""

    nodes: list[GraphNode] = field(default_factory=list)
    edges: list[GraphEdge] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    files_seen: int = 0
    truncated: bool = False


class Finder:
    """Collects nodes while reading config files; remembers what could not be parsed."""

    def __init__(self, root: Path, now: datetime) -> None:
        self.root, self.now = root, now
        self.result = ScanResult()

    def add(
        self,
        node_id: str,
        name: str,
        kind: NodeKind,
        body: str,
        touches: list[str],
        tags: list[str],
    ) -> None:
        if len(body) > MAX_BODY_CHARS:
            body = body[: MAX_BODY_CHARS - 1].rstrip() + "…"
        self.result.nodes.append(
            GraphNode(
                id=node_id,
                name=name,
                type=kind,
                body=body,
                touches=touches[:32],
                tags=["scan", *tags],
                created=self.now,
                updated=self.now,
            )
        )

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
            self.result.warnings.append(
                f"{rel}: invalid JSON at line {exc.lineno} column {exc.colno}"
            )
            return None
        return data if isinstance(data, dict) else None


def python_config(f: Finder, files: set[str]) -> None:
    data = f.toml("pyproject.toml") if "pyproject.toml" in files else None
    if not data:
        return
    project = data.get("project", {}) or {}
    tool = data.get("tool", {}) or {}
    scripts = project.get("scripts", {}) or {}
    if scripts:
        body = "Console scripts: " + ", ".join(f"`{k}` -> {v}" for k, v in scripts.items())
        f.add(
            "scan-entry-python",
            "Python entry points",
            "component",
            body,
            ["pyproject.toml"],
            ["entry-point"],
        )
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
    pytest_opts = (tool.get("pytest") or {}).get("ini_options") or {}
    if pytest_opts.get("testpaths"):
        facts.append(f"pytest testpaths {pytest_opts['testpaths']}")
    if facts:
        f.add(
            "scan-build-python",
            f"Python project {project.get('name', '')}".strip(),
            "fact",
            "; ".join(facts) + ".",
            ["pyproject.toml"],
            ["build", "python"],
        )
    ruff = tool.get("ruff")
    if isinstance(ruff, dict):
        bits = [f"{k} = {ruff[k]}" for k in ("line-length", "target-version") if k in ruff]
        lint = ruff.get("lint") or {}
        if lint.get("select"):
            bits.append(f"lint.select = {lint['select']}")
        f.add(
            "scan-convention-ruff",
            "Ruff settings",
            "convention",
            "Ruff in pyproject.toml: " + (", ".join(bits) or "default settings") + ".",
            ["pyproject.toml"],
            ["lint", "python"],
        )


def node_config(f: Finder, files: set[str]) -> None:
    data = f.json("package.json") if "package.json" in files else None
    if not data:
        return
    scripts = data.get("scripts") or {}
    if scripts:
        shown = [f"`npm run {k}`: {v}" for k, v in list(scripts.items())[:12]]
        f.add(
            "scan-build-node",
            "npm scripts",
            "command",
            "; ".join(shown) + ".",
            ["package.json"],
            ["build", "javascript"],
        )
    entry = {k: data[k] for k in ("main", "module", "bin", "type") if k in data}
    if entry:
        f.add(
            "scan-entry-node",
            f"Node package {data.get('name', '')}".strip(),
            "component",
            "; ".join(f"{k}: {json.dumps(v)}" for k, v in entry.items()) + ".",
            ["package.json"],
            ["entry-point"],
        )


def rust_config(f: Finder, files: set[str]) -> None:
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
    f.add(
        "scan-build-rust",
        "Rust crate",
        "fact",
        "; ".join(facts) + ". Build `cargo build`, test `cargo test`.",
        ["Cargo.toml"],
        ["build", "rust"],
    )


def make_config(f: Finder, files: set[str]) -> None:
    if "Makefile" not in files:
        return
    text = f.read_text("Makefile") or ""
    targets = [m.group(1) for m in re.finditer(r"^([A-Za-z0-9][\w.-]*)\s*:(?!=)", text, re.M)]
    if targets:
        f.add(
            "scan-build-make",
            "Makefile targets",
            "command",
            "`make` targets: " + ", ".join(dict.fromkeys(targets[:20])) + ".",
            ["Makefile"],
            ["build"],
        )


def editorconfig_config(f: Finder, files: set[str]) -> None:
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
        f.add(
            "scan-convention-editorconfig",
            "Editor settings",
            "convention",
            "; ".join(rules[:15]) + ".",
            [".editorconfig"],
            ["style"],
        )


def named_configs(f: Finder, files: set[str]) -> None:
    groups = {
        "scan-convention-eslint": (
            "ESLint config",
            "lint",
            [
                ".eslintrc",
                ".eslintrc.js",
                ".eslintrc.cjs",
                ".eslintrc.json",
                ".eslintrc.yml",
                "eslint.config.js",
                "eslint.config.mjs",
                "eslint.config.ts",
            ],
        ),
        "scan-convention-prettier": (
            "Prettier config",
            "style",
            [
                ".prettierrc",
                ".prettierrc.json",
                ".prettierrc.js",
                "prettier.config.js",
                ".prettierrc.yaml",
            ],
        ),
        "scan-convention-ruff-file": ("Ruff config file", "lint", ["ruff.toml", ".ruff.toml"]),
        "scan-convention-rustfmt": ("rustfmt config", "style", ["rustfmt.toml", ".rustfmt.toml"]),
        "scan-convention-typescript": ("TypeScript config", "types", ["tsconfig.json"]),
        "scan-convention-precommit": ("pre-commit hooks", "lint", [".pre-commit-config.yaml"]),
        "scan-build-docker": (
            "Container build",
            "build",
            ["Dockerfile", "docker-compose.yml", "compose.yaml"],
        ),
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
        f.add(
            node_id, name, "convention" if "convention" in node_id else "fact", body, present, [tag]
        )
    workflows = sorted(p for p in files if p.startswith(".github/workflows/"))
    if workflows:
        f.add(
            "scan-ci",
            "Continuous integration",
            "fact",
            "CI workflows: " + ", ".join(Path(p).name for p in workflows[:10]) + ".",
            workflows[:10],
            ["ci"],
        )
