"""The OpenClaw plugin's own test suite (node's test runner) against a real `memoryd serve`.

The node tests start memoryd themselves (tests/memoryd-server.mjs); this wrapper builds
the plugin with its TypeScript compiler and runs them, so ``scripts/test`` covers them.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from node_tools import NODE_BIN_DIR, OPENCLAW_PLUGIN, node_env, require


def test_plugin_builds_and_its_node_tests_pass():
    require(OPENCLAW_PLUGIN / "node_modules" / ".bin" / "tsc")
    env = node_env(MEMORYD_BIN=str(Path(sys.executable).parent / "memoryd"))
    npm = shutil.which("npm", path=env["PATH"])
    assert npm, "npm is not on PATH"
    build = subprocess.run(
        [npm, "run", "--silent", "build"],
        cwd=OPENCLAW_PLUGIN, env=env, capture_output=True, text=True, timeout=600,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    run = subprocess.run(
        [str(NODE_BIN_DIR / "node"), "--test", "--test-reporter=spec", "test/"],
        cwd=OPENCLAW_PLUGIN, env=env, capture_output=True, text=True, timeout=900,
    )
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
    passed = int(re.search(r"ℹ pass (\d+)", run.stdout).group(1))
    failed = int(re.search(r"ℹ fail (\d+)", run.stdout).group(1))
    assert failed == 0 and passed >= 20, run.stdout[-3000:]


def test_the_plugin_passes_memoryds_default_recall_threshold():
    """memory_search sends min_score = the plugin's minScore, whose default must be memoryd's
    recall threshold (the node tests check that a question nothing answers finds nothing)."""
    from memoryd.retrieval.answer import DEFAULT_RECALL_THRESHOLD

    source = (OPENCLAW_PLUGIN / "src" / "config.ts").read_text(encoding="utf-8")
    default = re.search(r"export const DEFAULT_MIN_SCORE = ([0-9.]+);", source)
    assert default and float(default.group(1)) == DEFAULT_RECALL_THRESHOLD
    manifest = (OPENCLAW_PLUGIN / "openclaw.plugin.json").read_text(encoding="utf-8")
    assert f'"default": {DEFAULT_RECALL_THRESHOLD}' in manifest
