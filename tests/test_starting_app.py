"""Listening before the app is built (memoryd.serving.starting): /health and /readyz answer 503 at
once, other requests wait for the app (bounded) or get 503 with Retry-After, never a 500; the
app's lifespan runs inside the server's. A real uvicorn server on 127.0.0.1, a real FastAPI
app, and the real `memoryd serve` on a real store."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import httpx
import pytest
import uvicorn
from api_fixtures import free_port
from fastapi import FastAPI

from memoryd.serving.starting import StartingApp

MEMORYD_BIN = Path(sys.executable).parent / "memoryd"


def _inner(events: list[str]) -> FastAPI:
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def lifespan(app: FastAPI):  # type: ignore[no-untyped-def]
        events.append("started")
        yield
        events.append("stopped")

    app = FastAPI(lifespan=lifespan)

    @app.get("/readyz")
    def readyz() -> dict[str, bool]:
        return {"ready": True}

    @app.get("/hello")
    def hello() -> dict[str, str]:
        return {"hello": "world"}

    return app


def _serve(app: StartingApp) -> tuple[uvicorn.Server, threading.Thread, str]:
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "server did not start"
        time.sleep(0.02)
    return server, thread, f"http://127.0.0.1:{port}"


def _stop(server: uvicorn.Server, thread: threading.Thread) -> None:
    server.should_exit = True
    thread.join(30)


def _gated(events: list[str]) -> tuple[threading.Event, Callable[[], Any]]:
    gate = threading.Event()

    def build() -> FastAPI:
        assert gate.wait(30)
        return _inner(events)

    return gate, build


def test_health_and_readyz_answer_503_at_once_and_a_request_waits_for_the_app() -> None:
    events: list[str] = []
    gate, build = _gated(events)
    server, thread, url = _serve(StartingApp(build, wait_seconds=30))
    try:
        ready = httpx.get(f"{url}/readyz", timeout=5)
        assert (ready.status_code, ready.json()) == (503, {"ready": False})
        health = httpx.get(f"{url}/health", timeout=5)
        assert (health.status_code, health.json()) == (503, {"status": "starting"})
        answers: list[httpx.Response] = []
        waiting = threading.Thread(target=lambda: answers.append(
            httpx.get(f"{url}/hello", timeout=30)))
        waiting.start()
        time.sleep(0.3)
        assert answers == [] and events == []  # held while the app is built
        gate.set()
        waiting.join(30)
        assert answers[0].status_code == 200 and answers[0].json() == {"hello": "world"}
        assert events == ["started"]
        assert httpx.get(f"{url}/readyz", timeout=5).json() == {"ready": True}
    finally:
        gate.set()
        _stop(server, thread)
    assert events == ["started", "stopped"]


def test_a_request_that_waits_too_long_gets_503_with_retry_after() -> None:
    events: list[str] = []
    gate, build = _gated(events)
    server, thread, url = _serve(StartingApp(build, wait_seconds=0.2))
    try:
        answer = httpx.post(f"{url}/api/v1/search", json={"query": "x"}, timeout=10)
        assert answer.status_code == 503
        assert answer.headers["retry-after"] == "2"
        assert answer.json()["code"] == "starting" and answer.json()["success"] is False
    finally:
        gate.set()
        _stop(server, thread)
    assert events == ["started", "stopped"]  # a build under way finishes, then stops


def test_on_started_is_told_once_the_apps_lifespan_has_started() -> None:
    events: list[str] = []
    gate, build = _gated(events)
    told: list[list[str]] = []
    app = StartingApp(build, on_started=lambda: told.append(list(events)))
    server, thread, url = _serve(app)
    try:
        assert httpx.get(f"{url}/readyz", timeout=5).status_code == 503
        time.sleep(0.2)
        assert told == []  # not while the app is being built
        gate.set()
        deadline = time.monotonic() + 30
        while not told and time.monotonic() < deadline:
            time.sleep(0.02)
        assert told == [["started"]]  # after the app's own lifespan started, once
        assert app.started and httpx.get(f"{url}/hello", timeout=5).status_code == 200
    finally:
        gate.set()
        _stop(server, thread)
    assert len(told) == 1


def test_a_failed_build_is_reported_and_every_request_gets_503() -> None:
    failures: list[BaseException] = []

    def build() -> FastAPI:
        raise ValueError("no app today")

    started: list[bool] = []
    app = StartingApp(build, on_failure=failures.append, on_started=lambda: started.append(True))
    server, thread, url = _serve(app)
    try:
        deadline = time.monotonic() + 10
        while not failures and time.monotonic() < deadline:
            time.sleep(0.02)
        assert [str(f) for f in failures] == ["no app today"]
        answer = httpx.get(f"{url}/hello", timeout=10)
        assert answer.status_code == 503 and "failed to start" in answer.json()["error"]
        assert httpx.get(f"{url}/readyz", timeout=5).status_code == 503
        assert not app.started and started == []
    finally:
        _stop(server, thread)


def test_memoryd_serve_listens_before_it_is_ready_and_never_answers_500(
        tmp_path: Path, shared_embedder) -> None:
    import memoryd

    store = tmp_path / "m.db"
    with memoryd.open(f"sqlite:///{store}", embedder=shared_embedder) as mem:
        mem.add_many([{"content": f"Service {i} deploys on day {i % 5}"} for i in range(50)])
        key = mem.admin.create_key("t", scopes=["read"]).secret
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    env.update(MEMORYD_HOME=str(tmp_path / "home"), MEMORYD_STORE_URL=f"sqlite:///{store}",
               MEMORYD_CONFIG=str(tmp_path / "none.toml"))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([str(MEMORYD_BIN), "serve", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    statuses: list[int] = []
    searches: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while 200 not in statuses and time.monotonic() < deadline:
            try:
                statuses.append(httpx.get(f"{url}/readyz", timeout=5).status_code)
                searches.append(httpx.post(
                    f"{url}/api/v1/search", json={"query": "deploys"}, timeout=60,
                    headers={"Authorization": f"Bearer {key}"}).status_code)
            except httpx.TransportError:
                time.sleep(0.02)
        assert statuses and statuses[-1] == 200
        assert set(statuses) <= {200, 503} and 500 not in searches
        assert set(searches) <= {200, 503}
        assert 503 in statuses  # it answered before it was ready
    finally:
        proc.terminate()
        assert proc.wait(60) in (0, -15)


def test_the_serve_socket_sends_each_response_at_once() -> None:
    """``memoryd serve``'s socket gets Nagle's algorithm turned off on every connection: a
    response goes out as headers, then body, and with Nagle on the body waited for the
    client's delayed ACK, about 40 ms on every keep-alive request."""
    from memoryd.cli.server import listening_socket

    sock = listening_socket("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(_inner([]), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "server did not start"
        time.sleep(0.02)
    port = sock.getsockname()[1]
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
            for _ in range(3):  # one keep-alive connection
                assert client.get("/hello").json() == {"hello": "world"}
            accepted = [c.transport.get_extra_info("socket")
                        for c in server.server_state.connections]
            assert len(accepted) == 1
            assert accepted[0].getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    finally:
        _stop(server, thread)
