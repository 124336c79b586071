"""Schemathesis against the OpenAPI schema of a real server: generated requests (valid and
invalid) to every route must never produce a 5xx. Examples are bounded to keep it short.

The schema is the app's own /openapi.json, generated at collection time (it needs no running
engine); the requests go to the module's live server on 127.0.0.1.
"""

from __future__ import annotations

from typing import Iterator

import pytest
import schemathesis
from api_fixtures import LiveServer, module_server
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig

from memoryd.api.app import create_app
from memoryd.config import Settings

MAX_EXAMPLES = 6

# Fuzzing (positive and negative data, bounded by MAX_EXAMPLES) plus the schema's examples;
# the exhaustive coverage phase ignores max_examples and would take minutes.
CONFIG = SchemathesisConfig.from_dict(
    {
        "phases": {"coverage": {"enabled": False}},
        "generation": {"mode": "all"},
    }
)
schema = schemathesis.openapi.from_dict(
    create_app(lambda: None, Settings()).openapi(),  # type: ignore[arg-type,return-value]
    config=CONFIG,
)


@pytest.fixture(scope="module")
def live_server(shared_embedder, tmp_path_factory) -> Iterator[LiveServer]:
    yield from module_server(shared_embedder, tmp_path_factory)


@pytest.fixture(scope="module", autouse=True)
def seeded(live_server: LiveServer) -> None:
    with live_server.client("admin") as admin:  # something to find, promote, delete
        for i in range(3):
            admin.post("/api/v1/memories", json={"content": f"schemathesis seed memory {i}"})


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
    database=None,
)
def test_no_server_errors(case, live_server: LiveServer):
    headers = {"Authorization": f"Bearer {live_server.keys['admin']}"}
    case.call_and_validate(
        base_url=live_server.url, headers=headers, checks=[not_a_server_error], timeout=60
    )
