"""A server started with ``consolidate_every_minutes`` consolidates on its own, and stops
doing so when it shuts down."""

from __future__ import annotations

import threading
import time

from api_fixtures import clean_env, start_server


def _reports(server) -> list:
    return server.engine.store.bookkeeping.list_reports("consolidation")


def test_the_server_consolidates_on_schedule_and_stops_with_it(shared_embedder, tmp_path,
                                                                 monkeypatch):
    clean_env(monkeypatch, tmp_path)
    live = start_server(tmp_path, shared_embedder, key_specs={"admin": {"scopes": ["admin"]}},
                        consolidate_every_minutes=0.005)  # every 0.3 s
    try:
        with live.client("admin") as admin:
            for text in ("The VPN gateway is vpn.example.org", "The VPN gateway is vpn.example.org"):
                assert admin.post("/api/v1/memories", json={"content": text}).status_code == 201
        deadline = time.monotonic() + 60
        while not _reports(live) and time.monotonic() < deadline:
            time.sleep(0.2)
        reports = _reports(live)
        assert reports, "no scheduled consolidation ran within a minute"
        assert reports[0]["examined"] >= 2
    finally:
        live.stop()
    assert not [t for t in threading.enumerate() if t.name == "memoryd-consolidate"]
