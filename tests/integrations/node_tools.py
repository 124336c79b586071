"""Where scripts/node-tools put Node and the npm packages the integration tests drive.

``scripts/test`` runs ``scripts/node-tools`` first; when the npm registry was unreachable
the tools are missing and the tests that need them skip with this module's message.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NODE_BIN_DIR = ROOT / ".cache" / "node" / "node_modules" / ".bin"
OPENCLAW_PLUGIN = ROOT / "integrations" / "openclaw"
OPENCLAW_BIN = OPENCLAW_PLUGIN / "node_modules" / ".bin" / "openclaw"
CLAUDE_BIN = ROOT / "integrations" / "claude-code" / "node_modules" / ".bin" / "claude"
MISSING = "not installed: run scripts/node-tools (it needs the npm registry)"


def require(path: Path) -> Path:
    """``path`` if scripts/node-tools installed it; otherwise skip the test, saying why."""
    if not path.exists():
        pytest.skip(f"{path.relative_to(ROOT)} {MISSING}")
    return path


def node_env(**extra: str) -> dict[str, str]:
    """The environment for Node tools: Node 26 first on PATH, no MEMORYD_* settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    env["PATH"] = f"{require(NODE_BIN_DIR / 'node').parent}{os.pathsep}{env.get('PATH', '')}"
    env.update(extra)
    return env
