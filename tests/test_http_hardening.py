"""The HTTP face under hostile or careless clients, over real sockets to a real uvicorn server:
Host/Origin checks (DNS rebinding) on every route, 404/405 before 401, slow bodies, open
event streams, unhandled errors that must keep the connection, error bodies that must always
render, and query strings that must not reach the access log."""

from __future__ import annotations

import asyncio
import http.client
import logging
import socket
import time
from typing import Iterator

import httpx
import pytest
from api_fixtures import STANDARD_KEYS, LiveServer, clean_env, start_server
from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError

from memoryd.api import errors
from memoryd.api.access_log import RedactQueryFilter, redact_query
from memoryd.config import Settings
from memoryd.errors import InvalidInput
from memoryd.serving.http import HttpLimits, create_app

MCP_INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}
BODY_TIMEOUT = 1.0


def _add_failing_route(app: FastAPI) -> None:
    @app.get("/boom")
    def boom() -> None:
        raise RuntimeError("a bug the error barrier must contain")


@pytest.fixture(scope="module")
def server(shared_embedder, tmp_path_factory) -> Iterator[LiveServer]:
    base = tmp_path_factory.mktemp("hardening")
    with pytest.MonkeyPatch.context() as mp:
        clean_env(mp, base)
        live = start_server(
            base,
            shared_embedder,
            key_specs=STANDARD_KEYS,
            limits=HttpLimits(body_timeout=BODY_TIMEOUT, max_event_streams=2),
            log_level="info",
            prepare_app=_add_failing_route,
        )
        yield live
        live.stop()


@pytest.fixture(scope="module")
def anonymous(shared_embedder, tmp_path_factory) -> Iterator[LiveServer]:
    base = tmp_path_factory.mktemp("anonymous")
    with pytest.MonkeyPatch.context() as mp:
        clean_env(mp, base)
        live = start_server(
            base,
            shared_embedder,
            allow_anonymous=True,
            allowed_hosts=["memoryd.lan:*", "10.0.0.5:8765"],
            cors_origins=["http://app.local"],
        )
        yield live
        live.stop()


def _key(server: LiveServer, label: str = "admin") -> dict[str, str]:
    return {"Authorization": f"Bearer {server.keys[label]}"}


# --- Host and Origin --------------------------------------------------------------------
BAD_HOSTS = [
    ("localhost:80@evil.com", 400),
    ("127.0.0.1:1 evil", 400),
    ("localhost:0", 400),
    ("localhost:65536", 400),
    ("localhost:8765:1", 400),
    ("localhost:abc", 400),
    ("user@localhost", 400),
    ("[::1", 400),
    ("127.1", 400),
    ("evil.example", 421),
    ("evil.example:8765", 421),
    ("127.0.0.1.evil.example", 421),
    ("localhost.evil.example:80", 421),
    ("memoryd.lan", 421),  # allowed only on the server that lists it
]
ROUTES = [
    ("GET", "/health", None),
    ("GET", "/readyz", None),
    ("GET", "/openapi.json", None),
    ("GET", "/api/v1/stats", None),
    ("POST", "/search", {"query": "x"}),
    ("POST", "/api/v1/memories", {"content": "written through a rebound name"}),
    ("POST", "/mcp", MCP_INIT),
    ("GET", "/nope", None),
]


@pytest.mark.parametrize(("host", "status"), BAD_HOSTS, ids=[h for h, _ in BAD_HOSTS])
def test_bad_hosts_are_refused_on_every_route(server: LiveServer, host: str, status: int):
    before = server.engine.store.count()
    with httpx.Client(base_url=server.url, headers={**MCP_HEADERS, **_key(server)}) as client:
        for method, path, body in ROUTES:
            response = client.request(method, path, json=body, headers={"Host": host})
            assert response.status_code == status, (method, path, response.text)
            assert response.json()["code"] in ("bad_request", "bad_host")
    assert server.engine.store.count() == before


@pytest.mark.parametrize(("host", "status"), BAD_HOSTS[:-1])
def test_anonymous_mode_checks_the_host_too(anonymous: LiveServer, host: str, status: int):
    """DNS rebinding against an open server: a page on evil.example must not write."""
    before = anonymous.engine.store.count()
    response = httpx.post(
        f"{anonymous.url}/api/v1/memories",
        json={"content": "planted through DNS rebinding"},
        headers={"Host": host},
    )
    assert response.status_code == status
    assert anonymous.engine.store.count() == before


def test_allowed_hosts_and_loopback_names_pass(server: LiveServer, anonymous: LiveServer):
    for host in ("127.0.0.1", f"127.0.0.1:{server.port}", "localhost:1", "LOCALHOST", "[::1]:9"):
        response = httpx.get(f"{server.url}/api/v1/stats", headers={**_key(server), "Host": host})
        assert response.status_code == 200, host
    for host in ("memoryd.lan", "memoryd.lan:9000", "10.0.0.5:8765"):
        assert httpx.get(f"{anonymous.url}/health", headers={"Host": host}).status_code == 200
    assert httpx.get(f"{anonymous.url}/health", headers={"Host": "10.0.0.5:1"}).status_code == 421


def test_foreign_origins_are_refused_and_local_ones_pass(server: LiveServer, anonymous: LiveServer):
    headers = {**MCP_HEADERS, **_key(server)}
    for origin in ("http://evil.example", "null", "file://", "http://localhost:80@evil.example"):
        for method, path, body in ROUTES[:7]:
            response = httpx.request(
                method, f"{server.url}{path}", json=body, headers={**headers, "Origin": origin}
            )
            assert response.status_code == 403, (origin, path)
    for origin in ("http://localhost:3000", "http://127.0.0.1", "https://[::1]:8443"):
        response = httpx.post(
            f"{server.url}/mcp", json=MCP_INIT, headers={**headers, "Origin": origin}
        )
        assert response.status_code == 200, origin
    ok = httpx.post(
        f"{anonymous.url}/search", json={"query": "x"}, headers={"Origin": "http://app.local"}
    )
    assert ok.status_code == 200 and ok.headers["access-control-allow-origin"] == "http://app.local"


def test_repeated_host_headers_are_refused(server: LiveServer):
    raw = (
        "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n"
        "Connection: close\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(raw)
        head = sock.recv(4096).split(b"\r\n", 1)[0]
    assert b" 400 " in head


def test_a_bad_allowed_hosts_entry_stops_the_app_from_being_built():
    with pytest.raises(InvalidInput, match="MEMORYD_ALLOWED_HOSTS"):
        create_app(lambda: None, Settings(allowed_hosts=["evil.example:80@x"]))  # type: ignore


# --- 404 and 405 before 401 ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/.well-known/oauth-authorization-server"),
        ("GET", "/.well-known/oauth-protected-resource"),
        ("GET", "/.well-known/oauth-protected-resource/mcp"),
        ("GET", "/.well-known/openid-configuration"),
        ("POST", "/register"),
        ("GET", "/authorize"),
        ("POST", "/token"),
    ],
)
def test_oauth_paths_are_404_not_401_and_say_to_use_a_key(server: LiveServer, method: str,
                                                           path: str):
    response = httpx.request(method, f"{server.url}{path}")
    assert response.status_code == 404
    assert "www-authenticate" not in response.headers
    assert "does not use OAuth" in response.json()["error"]


def test_other_unknown_paths_are_a_plain_404(server: LiveServer):
    for path in ("/registered", "/tokens", "/.well-known/security.txt", "/nothing"):
        response = httpx.get(f"{server.url}{path}")
        assert response.status_code == 404 and "OAuth" not in response.text, path


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("TRACE", "/api/v1/memories", "GET, POST"),
        ("PUT", "/api/v1/memories/abc", "DELETE, GET, PATCH"),
        ("TRACE", "/mcp", "DELETE, GET, POST"),
        ("PUT", "/mcp", "DELETE, GET, POST"),
        ("TRACE", "/health", "GET"),
        ("OPTIONS", "/search", "POST"),
        ("CONNECT", "/api/v1/stats", "GET"),
        ("GET", "/search", "POST"),
    ],
)
def test_unsupported_methods_are_405_with_allow(server: LiveServer, method, path, allow):
    for headers in ({}, _key(server)):
        response = httpx.request(method, f"{server.url}{path}", headers=headers)
        assert response.status_code == 405, (method, path, headers)
        assert response.headers["allow"] == allow
        assert response.json()["code"] == "method_not_allowed"


def test_without_a_key_existing_routes_still_ask_for_one(server: LiveServer):
    response = httpx.get(f"{server.url}/api/v1/memories/abc")
    assert response.status_code == 401 and response.headers["www-authenticate"] == "Bearer"


# --- slow bodies and open streams ---------------------------------------------------------
def _read_response(sock: socket.socket) -> tuple[int, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    status = int(data.split(b" ", 2)[1]) if data else 0
    return status, data


def test_a_body_that_trickles_in_is_cut_off_with_408(server: LiveServer):
    head = (
        f"POST /api/v1/memories HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {server.keys['admin']}\r\n"
        "Content-Type: application/json\r\nContent-Length: 200\r\n\r\n"
    ).encode()
    before = server.engine.store.count()
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(head + b'{"content": "slow')
        started = time.monotonic()
        data = b""
        while chunk := sock.recv(4096):  # until the server answers and closes the connection
            data += chunk
        waited = time.monotonic() - started
    assert data.startswith(b"HTTP/1.1 408 ") and b"did not arrive" in data
    assert b"connection: close" in data.lower()
    assert BODY_TIMEOUT * 0.5 <= waited < 30
    assert server.engine.store.count() == before


def test_a_body_that_arrives_in_time_in_pieces_is_accepted(server: LiveServer):
    body = b'{"content": "a body sent in three pieces"}'
    head = (
        f"POST /api/v1/memories HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {server.keys['admin']}\r\nConnection: close\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(head)
        for piece in (body[:10], body[10:20], body[20:]):
            time.sleep(BODY_TIMEOUT / 5)
            sock.sendall(piece)
        status, _ = _read_response(sock)
    assert status == 201


def _open_stream(server: LiveServer) -> tuple[socket.socket, int]:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    sock.sendall(
        (
            f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
            f"Authorization: Bearer {server.keys['reader']}\r\n"
            "Mcp-Protocol-Version: 2025-06-18\r\n\r\n"
        ).encode()
    )
    status, _ = _read_response(sock)
    return sock, status


def test_open_event_streams_are_capped_and_outlive_the_body_timeout(server: LiveServer):
    first, second = _open_stream(server), _open_stream(server)
    try:
        assert first[1] == second[1] == 200
        third, status = _open_stream(server)
        third.close()
        assert status == 503
        refused = httpx.get(
            f"{server.url}/mcp", headers={**_key(server), "Accept": "text/event-stream"}
        )
        assert refused.status_code == 503 and refused.headers["retry-after"] == "5"
        # A stream is not a slow body: it stays open past the body timeout.
        time.sleep(BODY_TIMEOUT * 1.5)
        first[0].settimeout(0.5)
        with pytest.raises(socket.timeout):
            first[0].recv(1)  # nothing sent, and not closed
        # Other requests are not affected by the cap.
        assert httpx.post(f"{server.url}/search", json={"query": "x"}, headers=_key(server))
    finally:
        first[0].close()
        second[0].close()
    deadline = time.monotonic() + 10
    while True:  # the server notices the closed streams and frees their slots
        again, status = _open_stream(server)
        again.close()
        if status == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert status == 200


# --- unhandled errors ---------------------------------------------------------------------
def test_an_unhandled_error_is_a_clean_500_and_the_connection_stays_usable(server: LiveServer):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    headers = {"Authorization": f"Bearer {server.keys['admin']}"}
    try:
        conn.request("GET", "/boom", headers=headers)
        first = conn.getresponse()
        body = first.read()
        sock = conn.sock
        assert first.status == 500
        assert body == b'{"success":false,"data":null,"error":"internal error","code":"internal"}'
        assert b"barrier" not in body  # the exception's text stays in the log
        conn.request("GET", "/api/v1/stats", headers=headers)
        second = conn.getresponse()
        second.read()
        assert second.status == 200
        assert conn.sock is sock  # the same keep-alive connection
    finally:
        conn.close()


# --- error bodies that always render ------------------------------------------------------
class _Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no")


ODD_VALUES = [
    float("nan"),
    float("inf"),
    -float("inf"),
    float("1e400"),
    10**400,
    b"\xff\xfe bytes",
    "lone \ud800 surrogate",
    _Unprintable(),
    ValueError("an exception"),
    {("tuple", "key"): {1, 2}},
    [[[[[[[[[[[["deep"]]]]]]]]]]]],
]


@pytest.mark.parametrize("value", ODD_VALUES, ids=lambda v: type(v).__name__)
def test_the_422_handler_renders_any_value(value):
    exc = RequestValidationError(
        [
            {
                "type": "value_error",
                "loc": ("body", "importance", value),
                "msg": value if isinstance(value, str) else "bad",
                "input": value,
                "ctx": {"error": value, "limit": value},
            }
        ]
    )
    response = asyncio.run(errors.validation_error(None, exc))  # type: ignore[arg-type]
    assert response.status_code == 422
    body = response.body.decode("utf-8")
    assert '"code":"invalid_input"' in body and "NaN" not in body.replace("'nan'", "")
    assert '"input"' not in body  # rejected input is never echoed


@pytest.mark.parametrize("value", ODD_VALUES, ids=lambda v: type(v).__name__)
def test_error_responses_render_any_value(value):
    response = errors.error_response(400, value, "odd", detail=value)  # type: ignore[arg-type]
    assert response.status_code == 400
    response.body.decode("utf-8")  # valid UTF-8 JSON


def test_the_422_handler_survives_an_exception_object_that_cannot_list_its_errors():
    class Broken(RequestValidationError):
        def errors(self):  # type: ignore[override]
            raise RuntimeError("broken")

    response = asyncio.run(errors.validation_error(None, Broken([])))  # type: ignore[arg-type]
    assert response.status_code == 422 and b"invalid request" in response.body


# --- the access log -----------------------------------------------------------------------
def test_redact_query_keeps_names_only():
    assert redact_query("/x") == "/x"
    assert redact_query("/x?api_key=mk_abc&limit=5") == "/x?api_key=***&limit=***"
    assert redact_query("/x?token") == "/x?token=***"
    assert redact_query("/x?" + "&".join(f"p{i}=v" for i in range(100))).count("=***") == 40


def test_query_strings_never_reach_the_access_log(server: LiveServer):
    secret = server.keys["admin"]
    records: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    access = logging.getLogger("uvicorn.access")
    assert any(isinstance(f, RedactQueryFilter) for f in access.filters)
    handler, level = Collect(), access.level
    access.addHandler(handler)
    access.setLevel(logging.INFO)  # servers share the process's loggers; one set WARNING
    try:
        for query in (f"api_key={secret}", f"token={secret}&after=3", f"x={secret}"):
            httpx.get(f"{server.url}/api/v1/ledger?{query}", headers=_key(server))
        httpx.get(f"{server.url}/nope?password=hunter22", headers=_key(server))
        deadline = time.monotonic() + 5
        while len(records) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        access.removeHandler(handler)
        access.setLevel(level)
    logged = "\n".join(records)
    assert "/api/v1/ledger?api_key=***" in logged and "token=***&after=***" in logged
    assert secret not in logged and "hunter22" not in logged and "mk_" not in logged


def test_serve_accepts_the_address_it_was_bound_to():
    from memoryd.api.hosts import host_policy
    from memoryd.cli.server import with_bound_host

    for bound, host in (("10.0.0.5", "10.0.0.5:8765"), ("fe80::1", "[fe80::1]:8765")):
        policy = host_policy(with_bound_host(Settings(), bound))
        assert policy.check_host(host)
    for wildcard in ("0.0.0.0", "::", "127.0.0.1"):
        assert with_bound_host(Settings(), wildcard).allowed_hosts == []
