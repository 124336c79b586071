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
