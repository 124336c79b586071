"""Cold start of `memoryd serve` on a large SQLite store: what the time goes to.

    python -m bench.scale.cold_start [--store bench/.cache/scale/sqlite-100000.db] [--runs 5]
        [--previous-ref main | --previous DIR/src]

The store is bench/scale's (``python -m bench.scale --n 100000`` builds it). Each run is a
fresh process (the OS page cache stays warm: the store was just read by the run before; a
first start after a reboot reads the file from disk too), this version and a previous one
(exported from git as bench/latency/ingest_versions.py does) in turn, the order flipped
every run:

Each version opens a copy of the store of its own (with the files beside it), so that what
one version saves beside the store when it closes does not decide how the other loads.
Python's bytecode is cached, as ``pip install`` leaves it (under bench/.cache/pycache, whatever
PYTHONDONTWRITEBYTECODE says: without it every start compiles memoryd's source again, about
0.6 s more), and one start of each version before the timed ones compiles it and warms the
page cache; it is not counted.

* **steps**: a worker times, one after another, importing the server's modules, opening
  the store (schema check and the in-memory vector index: the table's vectors read and
  the saved HNSW graph loaded, unless that happens in the background), the rest of the
  engine, the key check, waiting for the vector index, and loading the embedding model
  (one inference).
* **serve**: the real ``memoryd serve``, polled every 20 ms: when ``/health`` first answers,
  whatever it answers (the port listens: 200, or 503 while the app is still being built),
  when ``/readyz`` first says ready (and the CPU seconds the process had used by then, all
  its threads: on a shared machine a steadier measure of the work than the wall clock), and
  when the first hybrid search is answered.

Results: results/cold_start.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from bench.common import CACHE_DIR, machine_info, md_table, write_results
from bench.latency.ingest_versions import REPO_ROOT, export_ref

STEPS = r"""
import json, sys, time
t = time.perf_counter()
out = {}
def lap(name):
    global t
    now = time.perf_counter()
    out[name] = round(now - t, 3)
    t = now
import memoryd, uvicorn
from memoryd.config import Settings
from memoryd.embed import make_embedder
from memoryd.engine import Engine
from memoryd.opening import open_store
try:
    from memoryd.serving.http import create_app
except ImportError:  # versions before the serving package
    from memoryd.api.app import create_app
lap("import")
settings = Settings()
store = open_store(sys.argv[1], settings)
lap("open_store")
engine = Engine(store, make_embedder(settings), settings)
lap("engine")
engine.has_active_key()
lap("key_check")
store.vector_cache.index
lap("index_wait")
engine.warm()
lap("model")
engine.close()
print(json.dumps(out))
"""


def _env(store: Path, src: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MEMORYD_") and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=str(src), PYTHONPYCACHEPREFIX=str(CACHE_DIR / "pycache"),
               MEMORYD_HOME=str(CACHE_DIR / "work" / "cold_start"),
               MEMORYD_STORE_URL=f"sqlite:///{store}",
               MEMORYD_CONFIG=str(CACHE_DIR / "no-such-config.toml"))
    return env


def steps(store: Path, src: Path) -> dict[str, float]:
    """One fresh process timing each start-up step in turn."""
    done = subprocess.run([sys.executable, "-c", STEPS, f"sqlite:///{store}"], env=_env(store, src),
                          capture_output=True, text=True, timeout=600, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve(store: Path, key: str, src: Path) -> dict[str, float]:
    """Spawn `memoryd serve`; seconds until it listens, says ready, answers a search."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    memoryd_bin = Path(sys.executable).parent / "memoryd"
    t0 = time.perf_counter()
    proc = subprocess.Popen([str(memoryd_bin), "serve", "--port", str(port)], env=_env(store, src),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out: dict[str, float] = {}
    try:
        while "ready" not in out and time.perf_counter() - t0 < 300:
            try:
                if "listening" not in out:
                    httpx.get(f"{url}/health", timeout=2)  # any answer: 200, or 503 starting
                    out["listening"] = round(time.perf_counter() - t0, 3)
                if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                    out["ready"] = round(time.perf_counter() - t0, 3)
                    out["cpu_at_ready"] = _cpu_seconds(proc.pid)
            except httpx.HTTPError:
                pass
            time.sleep(0.02)
        httpx.post(f"{url}/api/v1/search", json={"query": "deploy the release"}, timeout=300,
                   headers={"Authorization": f"Bearer {key}"}).raise_for_status()
        out["first_search"] = round(time.perf_counter() - t0, 3)
    finally:
        proc.terminate()
        proc.wait(60)
    return out


def _cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system, all threads) a process has used so far: the work a start
    took, which depends much less on what else the machine runs than the wall clock."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return round((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), 2)


def _copy_store(store: Path, target: Path) -> Path:
    """``store`` and the files beside it (``<name>.*``) copied to ``target``."""
    import shutil

    target.parent.mkdir(parents=True, exist_ok=True)
    for old in target.parent.glob(target.name + "*"):
        old.unlink()
    for source in store.parent.glob(store.name + "*"):
        if source.suffix not in (".lock",) and not source.name.endswith(("-wal", "-shm")):
            shutil.copy(source, target.parent / (target.name + source.name[len(store.name):]))
    return target


def render(r: dict[str, Any]) -> str:
    """The markdown summary."""
    m = r["median"]
    step_names = list(r["runs"]["this"][0]["steps"])
    serve_names = list(r["runs"]["this"][0]["serve"])
    return "\n".join([
        f"# Cold start of `memoryd serve` on a {r['memories']:,}-memory SQLite store", "",
        f"Run {r['started']} (`{r['command']}`) on {r['machine']['cpus']} CPUs shared with "
        f"other work (1-minute load average {min(r['load_1m']):.1f}-{max(r['load_1m']):.1f}); "
        f"{r['runs_each']} fresh processes per version, the order flipped every run, medians; "
        "the page cache is warm and Python's bytecode cached (one untimed start of each "
        f"version first). Previous: `{r['previous']}`.", "",
        "Steps, one after another in one process (seconds):", "",
        md_table(["step", "previous", "this"],
                 [[n, m["previous"]["steps"][n], m["this"]["steps"][n]] for n in step_names]),
        "", "`memoryd serve`, seconds from spawning the process until it listens (`/health` "
        "answers, 200 or 503 starting), is ready (`/readyz` 200) and answers a first hybrid "
        "search, and the CPU seconds it had used when it was ready (all its threads):", "",
        md_table(["moment", "previous", "this"],
                 [[n, m["previous"]["serve"][n], m["this"]["serve"][n]] for n in serve_names]),
        ""])


def version_arguments(prog: str, doc: str | None, name: str) -> argparse.ArgumentParser:
    """The options of a bench that runs this version of ``memoryd serve`` against a previous
    one on a large store."""
    p = argparse.ArgumentParser(prog=prog, description=doc)
    p.add_argument("--store", type=Path, default=CACHE_DIR / "scale" / "sqlite-100000.db")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--previous", type=Path, help="src/ of the previous version")
    p.add_argument("--previous-ref", default="main", help="git ref to export when no --previous")
    p.add_argument("--name", default=name)
    return p


def prepare_versions(args: argparse.Namespace, key_name: str
                     ) -> tuple[int, str, dict[str, Path]]:
    """The store's memory count, a read key for the servers, and each version's src/."""
    import memoryd

    args.store = args.store.absolute()  # sqlite:///relative/path would name /relative/path
    with memoryd.open(f"sqlite:///{args.store}") as mem:
        memories = mem.store.count()
        key = mem.admin.create_key(key_name, scopes=["read"]).secret
    return memories, key, {"previous": args.previous or export_ref(args.previous_ref),
                           "this": REPO_ROOT / "src"}


def main(argv: list[str] | None = None) -> None:
    """Time the steps and the real server; write results/cold_start.{json,md}."""
    p = version_arguments("python -m bench.scale.cold_start", __doc__, "cold_start")
    argv = sys.argv[1:] if argv is None else argv
    args = p.parse_args(argv)
    memories, key, sources = prepare_versions(args, "bench-cold-start")
    # Each version opens a copy of its own: what one writes beside the store when it closes
    # (the saved graph, and this version's saved vectors) must not decide how the other loads.
    stores = {v: _copy_store(args.store, CACHE_DIR / "work" / "cold_start" / v / args.store.name)
              for v in sources}
    for version, src in sources.items():  # compile the bytecode, warm the page cache
        steps(stores[version], src)
        serve(stores[version], key, src)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    runs: dict[str, list[dict[str, Any]]] = {v: [] for v in sources}
    load: list[float] = []
    for i in range(args.runs):
        for version in (list(sources) if i % 2 == 0 else list(reversed(sources))):
            load.append(round(os.getloadavg()[0], 2))
            src = sources[version]
            runs[version].append({"steps": steps(stores[version], src),
                                  "serve": serve(stores[version], key, src)})
            print(f"run {i + 1} {version}: {runs[version][-1]}", flush=True)
    median = {v: {kind: {name: round(statistics.median(r[kind][name] for r in rs), 3)
                         for name in rs[0][kind]} for kind in ("steps", "serve")}
              for v, rs in runs.items()}
    result = {"benchmark": "cold_start", "started": started, "memories": memories,
              "command": "python -m bench.scale.cold_start " + " ".join(argv),
              "previous": str(args.previous or args.previous_ref), "runs_each": args.runs,
              "machine": machine_info(), "load_1m": load, "median": median, "runs": runs}
    jpath, mpath = write_results(args.name, result, render(result))
    print(f"wrote {jpath} and {mpath}")


if __name__ == "__main__":
    main()
