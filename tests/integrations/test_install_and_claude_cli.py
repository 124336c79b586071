"""scripts/install in a temp HOME, then the README's Claude Code lines with the real CLI.

``scripts/install`` links the venv's ``memoryd`` into ``~/.local/bin``; with only that on
PATH, ``claude mcp add memoryd -- memoryd mcp`` (exactly as the README prints it) must show
"Connected" in ``claude mcp list``, and so must the HTTP form with a key. The CLI works
offline for these commands; HOME is a temp dir so no real Claude Code config is touched.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest
from api_fixtures import LiveServer, module_server
from node_tools import CLAUDE_BIN, ROOT, require

VENV = Path(sys.executable).parent.parent
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


@pytest.fixture(scope="module")
def live_server(shared_embedder, tmp_path_factory) -> Iterator[LiveServer]:
    yield from module_server(shared_embedder, tmp_path_factory)


def run_install(home: Path, *args: str, path: str = SYSTEM_PATH) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "XDG_"))}
    env.update(HOME=str(home), PATH=path, MEMORYD_VENV=str(VENV))
    return subprocess.run(
        [str(ROOT / "scripts" / "install"), *args],
        env=env, capture_output=True, text=True, timeout=900,
    )


@pytest.fixture(scope="module")
def installed_home(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("home")
    result = run_install(home)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    link = home / ".local" / "bin" / "memoryd"
    assert link.is_symlink() and link.resolve() == (VENV / "bin" / "memoryd").resolve()
    assert f"Linked {link}" in result.stdout
    assert "is not on your PATH" in result.stdout  # ~/.local/bin was not on PATH
    assert "claude mcp add memoryd -- memoryd mcp" in result.stdout
    return home


def test_install_is_idempotent_and_quiet_about_path_when_it_is_on_it(installed_home):
    bin_dir = installed_home / ".local" / "bin"
    again = run_install(installed_home, path=f"{bin_dir}:{SYSTEM_PATH}")
    assert again.returncode == 0, again.stderr
    assert "not on your PATH" not in again.stdout
    assert (bin_dir / "memoryd").resolve() == (VENV / "bin" / "memoryd").resolve()


def test_install_leaves_a_foreign_memoryd_alone(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "memoryd").write_text("#!/bin/sh\necho mine\n")
    refused = run_install(tmp_path, "--bin-dir", str(bin_dir))
    assert refused.returncode == 1 and "not replacing it (use --force)" in refused.stderr
    assert (bin_dir / "memoryd").read_text().endswith("echo mine\n")
    forced = run_install(tmp_path, "--bin-dir", str(bin_dir), "--force")
    assert forced.returncode == 0 and (bin_dir / "memoryd").is_symlink()


def test_install_rejects_an_unknown_option(tmp_path):
    result = run_install(tmp_path, "--frobnicate")
    assert result.returncode == 2 and "unknown option --frobnicate" in result.stderr


def claude(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    require(CLAUDE_BIN)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "XDG_", "ANTHROPIC_"))}
    env.update(
        HOME=str(home),
        PATH=f"{home / '.local' / 'bin'}:{SYSTEM_PATH}",
        MEMORYD_HOME=str(home / "memoryd"),
        DISABLE_TELEMETRY="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
    )
    project = home / "project"
    project.mkdir(exist_ok=True)
    return subprocess.run(
        [str(CLAUDE_BIN), *args], cwd=project, env=env, capture_output=True, text=True, timeout=300
    )


def listed(home: Path) -> dict[str, str]:
    result = claude(home, "mcp", "list")
    assert result.returncode in (0, 1), result.stderr
    lines = {}
    for line in result.stdout.splitlines():
        name, sep, rest = line.partition(": ")
        if sep and rest:
            lines[name.strip()] = rest
    return lines


def test_claude_code_connects_over_stdio_and_http(installed_home, live_server):
    added = claude(installed_home, "mcp", "add", "memoryd", "--", "memoryd", "mcp")
    assert added.returncode == 0, added.stderr
    key = live_server.keys["writer"]
    url = f"{live_server.url}/mcp"
    http = claude(installed_home, "mcp", "add", "--transport", "http", "memoryd-http", url,
                  "--header", f"Authorization: Bearer {key}")
    assert http.returncode == 0, http.stderr
    bad = claude(installed_home, "mcp", "add", "--transport", "http", "memoryd-badkey", url,
                 "--header", "Authorization: Bearer mk_not_a_key")
    assert bad.returncode == 0, bad.stderr

    status = listed(installed_home)
    assert "✔ Connected" in status["memoryd"], status
    assert "✔ Connected" in status["memoryd-http"], status
    assert "Failed to connect" in status["memoryd-badkey"], status
    assert "rejected the configured Authorization header (HTTP 401)" in status["memoryd-badkey"]


def test_without_a_key_claude_code_reports_authentication_not_oauth(installed_home, live_server):
    added = claude(installed_home, "mcp", "add", "--transport", "http", "memoryd-nokey",
                   f"{live_server.url}/mcp")
    assert added.returncode == 0, added.stderr
    status = listed(installed_home)["memoryd-nokey"]
    # Claude Code meets the 401, looks for OAuth and tries to register a client; the 404 it
    # gets says that memoryd takes an API key instead, and Claude Code shows that message.
    assert "Failed to connect" in status, status
    assert "does not use OAuth" in status and "Authorization: Bearer" in status, status
