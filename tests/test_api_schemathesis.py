"""Schemathesis against the OpenAPI schema of a real server: generated requests (valid and
invalid) to every operation, with a read, a write and an admin key. Every response must be a
non-5xx status the schema documents, a request that violates the schema must be refused (the
schema states no more than the server enforces), and a refused request must not have changed
the store.

The schema is the app's own /openapi.json, generated at collection time (it needs no running
engine); the requests go to the module's live server on 127.0.0.1. The fuzzing phase runs
schemathesis's default example count per operation with the admin key and a share of it with
the read and write keys; the coverage phase (boundary values of every parameter) runs with
the admin key. ``CASES`` counts what ran; the total is printed at the end of the module.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterator

import pytest
import schemathesis
from api_fixtures import STANDARD_KEYS, LiveServer, module_server
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import negative_data_rejection, status_code_conformance

from memoryd.config import Settings
from memoryd.serving.http import create_app

DEFAULT_EXAMPLES = 100  # schemathesis's (and hypothesis's) default max_examples
# Examples per operation for each key: admin gets the default; read and write keys a share
# (most of their refusals are decided before any operation runs).
EXAMPLES = {"admin": DEFAULT_EXAMPLES, "writer": 10, "reader": 10}
CASES: Counter[str] = Counter()

# A body over MEMORYD_MAX_BODY_BYTES is refused too (413), besides the usual 4xx.
REFUSED = [400, 401, 403, 404, 405, 406, 409, 413, 415, 422, 428, 429, "5XX"]
CHECK_CONFIG = {"negative_data_rejection": {"expected-statuses": REFUSED}}
CONFIG = SchemathesisConfig.from_dict(
    {"phases": {"coverage": {"enabled": False}}, "generation": {"mode": "all"},
     "checks": CHECK_CONFIG}
)
COVERAGE_CONFIG = SchemathesisConfig.from_dict(
    {
        "phases": {
            "examples": {"enabled": False},
            "fuzzing": {"enabled": False},
            "stateful": {"enabled": False},
            "coverage": {"enabled": True},
        },
        "generation": {"mode": "all"},
        "checks": CHECK_CONFIG,
    }
)
_DOCUMENT = create_app(lambda: None, Settings()).openapi()  # type: ignore[arg-type,return-value]
schema = schemathesis.openapi.from_dict(_DOCUMENT, config=CONFIG)
coverage_schema = schemathesis.openapi.from_dict(_DOCUMENT, config=COVERAGE_CONFIG)
CHECKS = [not_a_server_error, status_code_conformance, negative_data_rejection]


@pytest.fixture(scope="module")
def live_server(shared_embedder, tmp_path_factory) -> Iterator[LiveServer]:
    yield from module_server(shared_embedder, tmp_path_factory)
    print(f"\nschemathesis cases run: {sum(CASES.values())} {dict(CASES)}")


@pytest.fixture(scope="module", autouse=True)
def seeded(live_server: LiveServer) -> None:
    with live_server.client("admin") as admin:  # something to find, promote, delete
        for i in range(3):
            admin.post("/api/v1/memories", json={"content": f"schemathesis seed memory {i}"})


def _state(server: LiveServer) -> tuple[Any, ...]:
    """What any accepted write changes: memories, the change sequence, keys, intentions."""
    engine = server.engine
    return (
        engine.store.count(),
        engine.stats().get("last_seq"),
        len(engine.store.keys.list_keys()),
        len(engine.tasks.list_intentions("all")),
    )


def _run(case: Any, server: LiveServer, key: str, phase: str) -> None:
    CASES[f"{phase}:{key}"] += 1
    before = _state(server)
    headers = {"Authorization": f"Bearer {server.keys[key]}"}
    response = case.call(base_url=server.url, headers=headers, timeout=60)
    case.validate_response(response, checks=CHECKS)
    if response.status_code >= 400:
        assert _state(server) == before, f"{response.status_code} but the store changed"


def _fuzzing_test(key: str) -> Any:
    """The fuzzing test for one key, with that key's example count."""

    @schema.parametrize()
    @settings(
        max_examples=EXAMPLES[key],
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
        database=None,
    )
    def test(case: Any, live_server: LiveServer) -> None:
        _run(case, live_server, key, "fuzzing")

    return test


test_fuzzing_admin = _fuzzing_test("admin")
test_fuzzing_writer = _fuzzing_test("writer")
test_fuzzing_reader = _fuzzing_test("reader")


@coverage_schema.parametrize()
@settings(deadline=None, suppress_health_check=list(HealthCheck), database=None)
def test_coverage(case, live_server: LiveServer):
    _run(case, live_server, "admin", "coverage")


STATEFUL_EXAMPLES = 10


def _stateful(server: LiveServer, machine_of: Any, label: str) -> None:
    """Run schemathesis's state machine for ``machine_of`` (a schema) with the admin key."""
    headers = {"Authorization": f"Bearer {server.keys['admin']}"}

    class Machine(machine_of.as_state_machine()):  # type: ignore[misc]
        before: tuple[Any, ...] = ()

        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            return {"base_url": server.url, "headers": headers, "timeout": 60}

        def before_call(self, case: Any) -> None:
            CASES[label] += 1
            self.before = _state(server)

        def validate_response(self, response: Any, case: Any, *args: Any, **kwargs: Any) -> None:
            case.validate_response(response, checks=CHECKS)
            if response.status_code >= 400:
                assert _state(server) == self.before, f"{response.status_code}: store changed"

    Machine.run(
        settings=settings(
            max_examples=STATEFUL_EXAMPLES,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
            database=None,
        )
    )


def test_stateful_links(live_server: LiveServer):
    """Sequences that follow the schema's links: create a memory, then get, promote, demote,
    explore, delete it; create a key, then revoke it. (PATCH: the next test.)"""
    _stateful(live_server, schema.exclude(method="PATCH"), "stateful:admin")
    assert CASES["stateful:admin"] >= STATEFUL_EXAMPLES


def test_stateful_patch(live_server: LiveServer):
    """Create a memory, then PATCH it with generated bodies (``null`` fields answered 500)."""
    _stateful(
        live_server,
        schema.include(path_regex=r"^/api/v1/memories(/\{id\})?$", method=["POST", "PATCH"]),
        "stateful-patch:admin",
    )


def test_the_standard_keys_are_the_ones_used():
    assert set(EXAMPLES) <= set(STANDARD_KEYS)
