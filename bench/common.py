"""Shared bench helpers: timing, percentiles, RSS, machine load, writing JSON + markdown."""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterable

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"
CACHE_DIR = BENCH_DIR / ".cache"


def percentile(samples: Iterable[float], q: float) -> float:
    """The q-th percentile (0-100) with linear interpolation (NumPy's default method)."""
    data = sorted(samples)
    if not data:
        return float("nan")
    pos = (len(data) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def summarize(samples_ms: list[float]) -> dict[str, float]:
    """n, p50, p95, p99, mean, min, max of samples in milliseconds (rounded)."""
    n = len(samples_ms)
    out = {
        "n": n,
        "p50_ms": percentile(samples_ms, 50),
        "p95_ms": percentile(samples_ms, 95),
        "p99_ms": percentile(samples_ms, 99),
        "mean_ms": sum(samples_ms) / n if n else float("nan"),
        "min_ms": min(samples_ms) if n else float("nan"),
        "max_ms": max(samples_ms) if n else float("nan"),
    }
    return {k: (v if k == "n" else round(v, 3)) for k, v in out.items()}


def time_calls(fn: Callable[[Any], Any], args: list[Any], *, warmup: int = 10) -> list[float]:
    """Call ``fn(a)`` for each a (after ``warmup`` untimed calls on the first args); ms each."""
    for a in args[:warmup]:
        fn(a)
    out = []
    for a in args:
        t0 = time.perf_counter()
        fn(a)
        out.append((time.perf_counter() - t0) * 1000.0)
    return out


class Stopwatch:
    """``with Stopwatch() as sw: ...; sw.seconds``."""

    def __enter__(self) -> Stopwatch:
        self._t0 = time.perf_counter()
        self._c0 = time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self._t0
        self.cpu_seconds = time.process_time() - self._c0


def _status_kb(field: str) -> float | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return float(line.split()[1])
    except OSError:
        return None
    return None


def rss_mb() -> float:
    """Resident set size of this process in MB (psutil if installed, else VmRSS)."""
    try:
        import psutil  # type: ignore

        return psutil.Process().memory_info().rss / 2**20
    except ImportError:
        return (_status_kb("VmRSS") or float("nan")) / 1024


def peak_rss_mb() -> float:
    """Peak resident set size (VmHWM) of this process in MB."""
    return (_status_kb("VmHWM") or float("nan")) / 1024


def _cpu_jiffies() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


def _own_jiffies() -> int:
    """CPU jiffies used by this process and its waited-for children."""
    parts = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(x) for x in parts[11:15])


def other_load(window: float = 1.0) -> float:
    """Cores kept busy by other processes over ``window`` seconds (0 = machine idle)."""
    try:
        b0, t0 = _cpu_jiffies()
        o0 = _own_jiffies()
        time.sleep(window)
        b1, t1 = _cpu_jiffies()
        o1 = _own_jiffies()
    except (OSError, ValueError, IndexError):
        return float("nan")
    cores = os.cpu_count() or 1
    if t1 == t0:
        return 0.0
    busy = max(0, (b1 - b0) - (o1 - o0))
    return round(cores * busy / (t1 - t0), 2)


def wait_quiet(
    max_wait: float = 60.0, threshold: float = 0.3, log: Callable[[str], None] = print
) -> float:
    """Wait (up to ``max_wait`` s) until other processes use < ``threshold`` cores.

    Returns the last load measured.
    """
    deadline = time.monotonic() + max_wait
    load = other_load()
    while load >= threshold and time.monotonic() < deadline:
        log(f"  (machine busy: other processes use {load:.2f} cores; waiting)")
        load = other_load(2.0)
    return load


def source_fingerprint(package_dir: Path) -> dict[str, Any]:
    """Which code was measured: a hash over the package's .py files and the newest mtime."""
    import hashlib

    h = hashlib.sha256()
    newest = 0.0
    files = sorted(package_dir.rglob("*.py"))
    for f in files:
        h.update(str(f.relative_to(package_dir)).encode())
        h.update(f.read_bytes())
        newest = max(newest, f.stat().st_mtime)
    return {
        "files": len(files),
        "sha256": h.hexdigest()[:16],
        "newest_mtime": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(newest)),
    }


def raise_priority(niceness: int = -10) -> dict[str, Any]:
    """Lower this process's nice value (needs root) so other load disturbs timings less.

    With sched_autogroup (the default on this machine) a process's nice value only
    counts inside its session's group, so the group's nice value is set as well
    (/proc/self/autogroup; it covers only this session's processes).
    """
    out: dict[str, Any] = {}
    try:
        out["process_nice"] = os.nice(niceness - os.nice(0))
    except OSError as exc:
        out["process_nice_error"] = str(exc)
    group = Path("/proc/self/autogroup")
    try:
        if group.exists():
            group.write_text(str(niceness))
            out["autogroup"] = group.read_text().strip()
    except OSError as exc:
        out["autogroup_error"] = str(exc)
    return out


def machine_info() -> dict[str, Any]:
    """What the numbers were measured on."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    # Read from the installed metadata, never imported: importing usearch here, before the
    # store imports onnxruntime, crashed a bench process (see _usearch_index in
    # memoryd.store.sqlite.vector_index), and importing torch took seconds and memory.
    versions: dict[str, str] = {}
    for name in ("numpy", "usearch", "onnxruntime", "torch", "sentence-transformers", "memoryd"):
        try:
            versions[name.replace("-", "_")] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name.replace("-", "_")] = "n/a"
    mem_total = ""
    try:
        mem_total = Path("/proc/meminfo").read_text().splitlines()[0].split(":", 1)[1].strip()
    except OSError:
        pass
    return {
        "cpus": os.cpu_count(),
        "cpu_model": model,
        "mem_total": mem_total,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "sqlite": sqlite3.sqlite_version,
        **versions,
    }


def write_results(name: str, data: dict[str, Any], markdown: str) -> tuple[Path, Path]:
    """Write bench/results/<name>.json and <name>.md; returns both paths."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    jpath = RESULTS_DIR / f"{name}.json"
    mpath = RESULTS_DIR / f"{name}.md"
    jpath.write_text(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")
    mpath.write_text(markdown.rstrip() + "\n")
    return jpath, mpath


def md_table(headers: list[str], rows: list[list[Any]]) -> str:
    """A GitHub markdown table."""

    def cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.3g}" if abs(v) < 100 else f"{v:.0f}"
        return str(v)

    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join("---" for _ in headers) + " |"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)
