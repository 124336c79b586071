"""Input is read as JSON is read, on every face: a date is an ISO 8601 string (never epoch
seconds), a boolean is not a number and a number not a string; and a path that names one
resource answers 405 with that resource's methods. A real server on 127.0.0.1.
"""

from __future__ import annotations

import json
from typing import Any, Iterator

import httpx
import pytest
from api_fixtures import LiveServer, module_server

import memoryd
from memoryd.errors import InvalidInput


@pytest.fixture(scope="module")
def live_server(shared_embedder, tmp_path_factory) -> Iterator[LiveServer]:
    yield from module_server(shared_embedder, tmp_path_factory)


@pytest.fixture(scope="module")
def admin(live_server: LiveServer) -> Iterator[httpx.Client]:
    with live_server.client("admin") as client:
        yield client


LOOSE_BODIES: list[tuple[str, str, dict[str, Any], str]] = [
    ("POST", "/api/v1/memories", {"content": "c", "created_at": 0}, "created_at"),
    ("POST", "/api/v1/memories", {"content": "c", "created_at": "0"}, "created_at"),
    ("POST", "/api/v1/memories", {"content": "c", "valid_from": 1e9}, "valid_from"),
    ("POST", "/api/v1/memories", {"content": "c", "valid_until": "1700000000"}, "valid_until"),
    ("POST", "/api/v1/memories", {"content": "c", "importance": True}, "importance"),
    ("POST", "/api/v1/memories", {"content": "c", "importance": "0.5"}, "importance"),
    ("POST", "/api/v1/ingest", {"content": "c", "force_create": 1}, "force_create"),
    ("POST", "/api/v1/gc", {"dry_run": 0}, "dry_run"),
    ("POST", "/api/v1/search", {"query": "q", "limit": True}, "limit"),
    ("POST", "/api/v1/search", {"query": "q", "limit": "5"}, "limit"),
    ("POST", "/api/v1/search", {"query": "q", "as_of": 1e9}, "as_of"),
    ("POST", "/intention", {"action": "set", "description": "d",
                            "trigger": {"type": "time", "at": 0}}, "trigger.at"),
]


@pytest.mark.parametrize("method,path,body,field", LOOSE_BODIES,
                         ids=[f"{b[1]} {json.dumps(b[2])}" for b in LOOSE_BODIES])
def test_loose_values_in_a_body_are_refused_naming_the_field(admin, live_server, method, path,
                                                             body, field):
    before = live_server.engine.store.count()
    response = admin.request(method, path, json=body)
    assert response.status_code == 422, response.text[:300]
    assert response.json()["error"].startswith(f"{field}: "), response.json()["error"]
    assert live_server.engine.store.count() == before


@pytest.mark.parametrize("params,field", [
    ({"as_of": "-3.7e-65"}, "as_of"), ({"since": "0"}, "since"), ({"until": "1e9"}, "until"),
    ({"limit": "true"}, "limit"),
])
def test_loose_values_in_a_query_string_are_refused(admin, params, field):
    response = admin.get("/api/v1/memories", params=params)
    assert response.status_code == 422, response.text[:300]
    assert response.json()["error"].startswith(f"{field}: "), response.json()["error"]


@pytest.mark.parametrize("when", ["2024-05-17T09:30:00Z", "2024-05-17T09:30:00.5+02:00",
                                  "2024-05-17 09:30", "2024-05-17t09:30:00z"])
def test_iso_dates_are_accepted_with_or_without_an_offset(admin, when):
    response = admin.post("/api/v1/memories", json={"content": f"dated {when}",
                                                    "created_at": when})
    assert response.status_code == 201, response.text[:300]
    assert response.json()["created_at"].startswith("2024-05-17T")


def test_mcp_reads_arguments_as_strictly(live_server: LiveServer):
    rpc = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
           "params": {"name": "smart_ingest", "arguments": {"content": "c", "importance": True}}}
    response = httpx.post(f"{live_server.url}/mcp", json=rpc, timeout=60, headers={
        "Authorization": f"Bearer {live_server.keys['admin']}",
        "Accept": "application/json, text/event-stream"})
    result = response.json()["result"]
    assert result["isError"] and "importance" in result["content"][0]["text"]


def test_the_python_api_refuses_epoch_dates_and_boolean_numbers(tmp_path, shared_embedder):
    with memoryd.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=shared_embedder) as mem:
        with pytest.raises(InvalidInput, match="created_at"):
            mem.add("dated by a number", created_at=0)
        with pytest.raises(InvalidInput, match="importance"):
            mem.add("weighed by a boolean", importance=True)
        assert mem.count() == 0


@pytest.mark.parametrize("method,path,allow", [
    ("GET", "/api/v1/domains/merge", "POST"),
    ("PATCH", "/api/v1/domains/threshold", "POST"),
    ("DELETE", "/api/v1/domains/proposals", "GET"),
    ("OPTIONS", "/api/v1/domains/discover", "POST"),
    ("PUT", "/api/v1/memories/some-id", "DELETE, GET, PATCH"),
])
def test_a_wrong_method_is_405_with_the_methods_of_that_resource(admin, method, path, allow):
    response = admin.request(method, path)
    assert response.status_code == 405, response.text[:300]
    assert response.headers["allow"] == allow
