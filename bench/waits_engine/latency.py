"""Detection latency end to end: 20 file waits started over REST on a real uvicorn server
(the engine's runner, jobs in the SQLite store), against the same plan on the bare
scheduler, one after the other in the same run.

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
from memoryd.api.app import create_app
from memoryd.config import Settings
from memoryd.embed import LocalEmbedder
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


def bare(root: Path, n: int, longest: float) -> list[float]:
    """Latencies (ms) of the watcher layer alone."""
    sched = scheduler(root)
    files = _plan(root, n, longest)
    ids = [sched.submit(WaitRequest(f"file:{p}", CRITERIA, longest + 60)).id for _, p in files]
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(time.time()), repr(files)])
    out = []
    for job_id in ids:
        job = sched.status(job_id, block_s=longest + 30)
        if job.status is WaitStatus.RESOLVED:
            out.append(_latency_ms(job.result, job.resolved_at or 0.0))
    writer.wait()
    sched.close()
    return out


def over_rest(root: Path, n: int, longest: float, embedder: LocalEmbedder) -> list[float]:
    """Latencies (ms) of waits started and long-polled over REST."""
    settings = Settings(home=root, allow_anonymous=True, wait_allowed_roots=[str(root)],
                        wait_runner=f"bench-rest-{root.name}")
    engine = memoryd.open(f"sqlite:///{root / 'm.db'}", settings=settings, embedder=embedder)
    port = _port()
    server = uvicorn.Server(uvicorn.Config(create_app(lambda: engine, settings), host="127.0.0.1",
                                           port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    files = _plan(root, n, longest)
    out = []
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=longest + 60) as http:
        ids = [http.post("/api/v1/waits", json={"target": f"file:{p}", "criteria": CRITERIA,
                                                "timeout_s": longest + 60}).json()["id"]
               for _, p in files]
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(time.time()), repr(files)])
        for job_id in ids:
            job: dict[str, Any] = http.get(f"/api/v1/waits/{job_id}",
                                           params={"block_s": min(300, longest + 30)}).json()
            if job["status"] == "resolved":
                resolved = datetime.fromisoformat(job["resolved_at"]).timestamp()
                out.append(_latency_ms(job["result"], resolved))
        writer.wait()
    server.should_exit = True
    thread.join(timeout=30)
    return out
