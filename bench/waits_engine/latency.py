"""Detection latency end to end: 20 file waits started over REST on a real uvicorn server
(the engine's runner, jobs in the SQLite store) and 20 on the bare scheduler, at the same
time, each line written to one file of each at the same moment.

Each line carries the wall-clock time it was written (``READY <epoch>``); latency is the
job's ``resolved_at`` minus that time, by the same clock.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import uvicorn

import memoryd
from bench.waits.env import scheduler
from bench.waits.latency import CRITERIA, WRITER, delays
from memoryd.config import Settings
from memoryd.embed import LocalEmbedder
from memoryd.serving.http import create_app
from memoryd.waits import WaitRequest, WaitStatus


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _plan(root: Path, n: int, longest: float) -> list[tuple[float, str]]:
    files = []
    for i, d in enumerate(delays(n, longest)):
        path = root / f"f{i}.log"
        path.write_text("starting\n")
        files.append((d, str(path)))
    return files


def _latency_ms(result: str | None, resolved_at: float) -> float:
    return (resolved_at - float((result or "").split()[-1])) * 1000.0


class _RestServer:
    """The engine behind a real uvicorn server in this process (anonymous access)."""

    def __init__(self, root: Path, embedder: LocalEmbedder) -> None:
        settings = Settings(home=root, allow_anonymous=True, wait_allowed_roots=[str(root)],
                            wait_runner=f"bench-rest-{root.name}")
        engine = memoryd.open(f"sqlite:///{root / 'm.db'}", settings=settings, embedder=embedder)
        self.port = _port()
        self.server = uvicorn.Server(uvicorn.Config(create_app(lambda: engine, settings),
                                                    host="127.0.0.1", port=self.port,
                                                    log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        while not self.server.started:
            time.sleep(0.05)

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


def run(root: Path, n: int, longest: float, embedder: LocalEmbedder) -> dict[str, list[float]]:
    """Latencies (ms) of both paths at once: each line is written to a file watched by the
    bare scheduler and to one watched over REST at the same moment."""
    (root / "bare").mkdir()
    (root / "rest").mkdir()
    sched, rest = scheduler(root / "bare"), _RestServer(root / "rest", embedder)
    bare_files, rest_files = _plan(root / "bare", n, longest), _plan(root / "rest", n, longest)
    timeout = longest + 60
    bare_ids = [sched.submit(WaitRequest(f"file:{p}", CRITERIA, timeout)).id
                for _, p in bare_files]
    out: dict[str, list[float]] = {"bare scheduler": [], "over REST (engine runner)": []}
    with httpx.Client(base_url=f"http://127.0.0.1:{rest.port}", timeout=timeout) as http:
        rest_ids = [http.post("/api/v1/waits", json={"target": f"file:{p}", "criteria": CRITERIA,
                                                     "timeout_s": timeout}).json()["id"]
                    for _, p in rest_files]
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(time.time()),
                                   repr(bare_files + rest_files)])
        for job_id in bare_ids:
            job = sched.status(job_id, block_s=longest + 30)
            if job.status is WaitStatus.RESOLVED:
                out["bare scheduler"].append(_latency_ms(job.result, job.resolved_at or 0.0))
        for job_id in rest_ids:
            got: dict[str, Any] = http.get(f"/api/v1/waits/{job_id}",
                                           params={"block_s": min(300, longest + 30)}).json()
            if got["status"] == "resolved":
                resolved = datetime.fromisoformat(got["resolved_at"]).timestamp()
                out["over REST (engine runner)"].append(_latency_ms(got["result"], resolved))
        writer.wait()
    sched.close()
    rest.close()
    return out
