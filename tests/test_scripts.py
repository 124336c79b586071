"""The set-up scripts' decisions (scripts/_venv.sh): install once, say so, skip when nothing
changed. pip itself is replaced by a recorder in a throwaway venv directory, so these tests
check what the script decides and prints, in seconds, without downloading anything."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def fake_venv(tmp_path: Path) -> tuple[Path, Path]:
    """A venv directory whose python records pip calls (and answers -VV for real)."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    log = tmp_path / "pip.log"
    python = venv / "bin" / "python"
    python.write_text(
        "#!/usr/bin/env bash\n"
        f'if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then echo "$*" >> "{log}"; exit 0; fi\n'
        f'exec "{sys.executable}" "$@"\n'
    )
    python.chmod(0o755)
    return venv, log


def ensure(venv: Path, extras: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MEMORYD_VENV": str(venv)}
    return subprocess.run(["bash", "-c", f'source "{ROOT}/scripts/_venv.sh"; ensure_venv "{extras}"'],
                          env=env, capture_output=True, text=True, timeout=60)


def test_install_runs_once_says_so_and_again_only_when_the_extras_change(tmp_path) -> None:
    venv, log = fake_venv(tmp_path)
    first = ensure(venv, "")
    assert first.returncode == 0, first.stderr
    assert "installing memoryd" in first.stderr
    assert log.read_text().count("install --quiet -e") == 1

    again = ensure(venv, "")  # nothing changed: no pip, no noise
    assert again.returncode == 0 and again.stderr == ""
    assert log.read_text().count("install --quiet -e") == 1

    other = ensure(venv, "test")
    assert "installing memoryd with [test]" in other.stderr
    assert log.read_text().splitlines()[-1].endswith(f"-e {ROOT}[test]")
    assert ensure(venv, "test").stderr == ""
