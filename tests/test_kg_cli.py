"""``memoryd kg ...`` and ``memoryd import claude-code|openclaw`` as real processes."""

from __future__ import annotations

import json
from pathlib import Path

from test_graph_importers import assistant, line, text, user


def ok(result) -> str:
    assert result.returncode == 0, result.stderr + result.stdout
    return result.stdout


def test_kg_commands_round_trip_a_project_graph(run_cli, tmp_path: Path) -> None:
    root = tmp_path / "shop"
    (root / "src").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "shop"\n[tool.ruff]\nline-length = 99\n')
    (root / "src" / "main.py").write_text("print('hi')\n")
    p = ["--project", str(root)]
    nodes = {"nodes": [{"id": "wal-busy", "name": "SQLite busy timeout", "type": "gotcha",
                        "body": "Set busy_timeout before WAL writes.", "touches": ["src/db.py"]},
                       {"id": "pool", "name": "Connection pool of 4"}],
             "edges": [{"source": "wal-busy", "target": "pool", "type": "relates_to"}]}
    out = ok(run_cli("kg", "write", *p, input=json.dumps(nodes)))
    assert "2 created" in out and str(root / ".knowledge" / "graph.json") in out
    core = json.loads(ok(run_cli("kg", "read", *p, "--json")))
    assert core["scopes"] == ["user", "project:shop"] and core["shown"] == 2
    assert "- wal-busy (gotcha) SQLite busy timeout" in core["text"]
    exported = tmp_path / "graph.json"
    ok(run_cli("kg", "export", *p, "-o", str(exported)))
    assert json.loads(exported.read_text())["scope"] == "project:shop"
    other = tmp_path / "web"
    other.mkdir()
    imported = json.loads(ok(run_cli("kg", "import", str(exported), "--project", str(other),
                                     "--json")))
    assert imported["scope"] == "project:web" and sorted(imported["created"]) == ["pool",
                                                                                    "wal-busy"]
    scanned = ok(run_cli("kg", "scan", str(root)))
    assert "project:shop" in scanned and "nodes created" in scanned
    dry = json.loads(ok(run_cli("kg", "archive", *p, "--budget", "60", "--json")))
    assert dry["dry_run"] and dry["archived"]
    done = json.loads(ok(run_cli("kg", "archive", *p, "--budget", "60", "--apply", "--json")))
    gone = done["archived"][0]["id"]
    assert f"- {gone} " not in ok(run_cli("kg", "read", *p))
    assert "brought back from the archive" in ok(run_cli("kg", "recall", gone, *p))
    feed = json.loads(ok(run_cli("kg", "sync", "--since", "0", *p, "--json")))
    assert {"kg_archive", "kg_recall"} <= {c["operation"] for c in feed["changes"]}
    bad = run_cli("kg", "write", *p, input='{"nodes": [{"name": "x", "type": "nonsense"}]}')
    assert bad.returncode == 1 and "nodes.0.type" in bad.stderr
    broken = run_cli("kg", "write", *p, input='{"nodes": [{"name": "x"]}')
    assert broken.returncode == 1 and "line 1 column" in broken.stderr


def test_import_claude_code_and_openclaw_are_idempotent(run_cli, tmp_path: Path) -> None:
    projects = tmp_path / ".claude" / "projects" / "-home-dev-shop"
    projects.mkdir(parents=True)
    session = [
        json.dumps({"type": "summary", "summary": "Fix flaky order tests", "leafUuid": "a1"}),
        line("user", "u1", None, user("The order tests fail randomly on CI; fix them."),
             cwd="/home/dev/shop"),
        line("assistant", "a1", "u1", assistant(text("Each test now gets its own database.")),
             cwd="/home/dev/shop"),
    ]
    (projects / "s1.jsonl").write_text("\n".join(session) + "\n")
    first = ok(run_cli("import", "claude-code", str(tmp_path / ".claude" / "projects")))
    assert "1 files" in first and "imported 3" in first
    again = ok(run_cli("import", "claude-code", str(tmp_path / ".claude" / "projects")))
    assert "imported 0, already present 3" in again
    listed = ok(run_cli("list", "--json"))
    assert "Each test now gets its own database." in listed and "project:shop" in listed
    workspace = tmp_path / "claw"
    (workspace / "memory").mkdir(parents=True)
    (workspace / "MEMORY.md").write_text("# Preferences\n- Prefers fish over bash\n")
    (workspace / "memory" / "2026-03-01.md").write_text("- Deployed v2 to staging\n")
    claw = ok(run_cli("import", "openclaw", str(workspace)))
    assert "2 files" in claw and "imported 2" in claw
    assert "imported 0" in ok(run_cli("import", "openclaw", str(workspace)))
    missing = run_cli("import", "openclaw")
    assert missing.returncode == 2 and "workspace" in missing.stderr


def test_import_with_a_bad_scope_is_a_one_line_error(run_cli, tmp_path: Path) -> None:
    # `--scope 'bad scope'` ended in a pydantic traceback once a file had an item, and was
    # accepted without a word when none had.
    workspace = tmp_path / "claw"
    workspace.mkdir()
    (workspace / "MEMORY.md").write_text("- Prefers fish over bash\n")
    projects = tmp_path / "projects"
    projects.mkdir()
    for args in (("openclaw", str(workspace)), ("openclaw", str(projects)),
                 ("claude-code", str(projects))):
        for scope in ("bad scope", "project:"):
            result = run_cli("import", *args, "--scope", scope)
            assert result.returncode == 1, result.stdout + result.stderr
            assert "Traceback" not in result.stderr
            assert result.stderr.strip().startswith("error: scope: scope must be"), result.stderr
    assert json.loads(ok(run_cli("list", "--json"))) == []
