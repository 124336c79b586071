"""The secret probe: a realistic credential in every string field of every operation, through
a real server (REST where the operation has a route, MCP where it is a tool only), found from
the registry's own input schemas, so a new operation or field is probed without anyone listing
it. Each must be refused (or redacted, in redact mode) and never come back: not in the
response, the error message, the store's tables (history and the keyword index included) or
any file the server writes. Refuse mode on SQLite, redact mode on PostgreSQL.

A field a search reads but never stores (``Operation.unscreened``) may be echoed to the caller
who sent it; it must still not be stored.
"""

from __future__ import annotations

import copy
import json
import random
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import quote

import httpx
import pytest
from api_fixtures import STANDARD_KEYS, LiveServer, clean_env, start_server
from secret_probe_plan import BASES, KEY, Probe, probes_of

from memoryd.api.routes import BINDINGS
from memoryd.operations import REGISTRY

ALPHANUM = string.ascii_letters + string.digits


def _random(alphabet: str, n: int) -> str:
    while True:  # provider formats want letters and digits
        value = "".join(random.choice(alphabet) for _ in range(n))
        if any(c.isdigit() for c in value) and any(c.isalpha() for c in value):
            return value


def aws_key() -> str:
    return "AKIA" + _random(string.ascii_uppercase + "234567", 16)


def github_token() -> str:
    return "ghp_" + _random(ALPHANUM, 36)


def memoryd_key() -> str:
    return "mk_" + _random(ALPHANUM, 43)


def private_key() -> str:
    body = "\n".join(_random(ALPHANUM + "+/", 64) for _ in range(3))
    return f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----"


MAKERS = [(len(private_key()), private_key), (len(memoryd_key()), memoryd_key),
          (len(github_token()), github_token), (len(aws_key()), aws_key)]


def secret_for(room: int, turn: int) -> str:
    """A secret that fits ``room`` characters, rotating over the kinds that do."""
    fitting = [make for length, make in MAKERS if length <= room]
    return fitting[turn % len(fitting)]()


def core(secret: str) -> str:
    """A piece of the secret no other text contains (what a leak check looks for)."""
    return secret.splitlines()[1][:24] if "PRIVATE KEY" in secret else secret[-16:]


@dataclass
class World:
    server: LiveServer
    mode: str
    ids: dict[str, str] = field(default_factory=dict)
    sent: list[tuple[str, str]] = field(default_factory=list)  # (probe, secret core)


@pytest.fixture(scope="module", params=["refuse-sqlite", "redact-postgresql"])
def world(request, shared_embedder, tmp_path_factory) -> Iterator[World]:
    mode, backend = request.param.split("-")
    base = tmp_path_factory.mktemp(f"probe-{mode}")
    url, drop = None, None
    if backend == "postgresql":
        pg = request.getfixturevalue("pg_server")
        url = pg.create_database()
        drop = lambda: pg.drop_database(url)  # noqa: E731
    with pytest.MonkeyPatch.context() as mp:
        clean_env(mp, base)
        server = start_server(base, shared_embedder, key_specs=STANDARD_KEYS, store_url=url,
                              mcp_tools="full", secrets_mode=mode,
                              wait_allowed_roots=[str(base)])
        state = World(server, mode, {"waitfile": str(base / "probe.log")})
        with server.client("admin") as admin:
            state.ids["memory"] = admin.post("/api/v1/memories", json={
                "content": "The kiln fires at 1240 degrees"}).json()["id"]
            state.ids["task"] = admin.post("/api/v1/tasks", json={"name": "glaze"}).json()[
                "task"]["id"]
        try:
            yield state
        finally:
            server.stop()
            if drop is not None:
                drop()


ROUTES = {b.op: b for b in reversed(BINDINGS)}  # the first binding of each operation


def _fill(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {k: _fill(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, ids) for v in value]
    if isinstance(value, str):
        for name, given in ids.items():
            value = value.replace(f"{{{name}}}", given)
    return value


def _call(world: World, op: str, arguments: dict[str, Any]) -> tuple[int, str]:
    """Call ``op`` with the admin key: its REST route, else its MCP tool."""
    headers = {"Authorization": f"Bearer {world.server.keys['admin']}"}
    with httpx.Client(base_url=world.server.url, headers=headers, timeout=120) as client:
        binding = ROUTES.get(op)
        if binding is None:
            rpc = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": REGISTRY[op].tools[0], "arguments": arguments}}
            response = client.post("/mcp", json=rpc,
                                   headers={"Accept": "application/json, text/event-stream"})
            result = response.json().get("result", {})
            return (422 if result.get("isError") else 200), response.text
        path, rest = binding.path, dict(arguments)
        for name in [p[1:-1] for p in path.split("/") if p.startswith("{")]:
            path = path.replace(f"{{{name}}}", quote(str(rest.pop(name, "")), safe=""))
        if binding.method in ("GET", "DELETE"):
            response = client.request(binding.method, path, params=rest)
        else:
            response = client.request(binding.method, path, json=rest)
        return response.status_code, response.text


def test_every_operation_with_text_has_a_probe_plan():
    missing = [name for name, op in sorted(REGISTRY.items())
               if probes_of(op.input) and name not in BASES]
    assert not missing, f"add a valid base call for: {missing}"


def _check_probe(world: World, probe: Probe, turn: int) -> None:
    secret = secret_for(probe.room, turn)
    arguments = probe.apply(_fill(copy.deepcopy(BASES[probe.op]), world.ids), secret)
    status, text = _call(world, probe.op, arguments)
    world.sent.append((probe.name, core(secret)))
    assert status < 500, (probe.name, status, text[:300])
    if not probe.echoes:
        assert core(secret) not in text, (probe.name, status, text[:300])
    if world.mode == "refuse" and not probe.constrained and not probe.unscreened:
        assert status == 422 and "secret" in text, (probe.name, status, text[:300])


def test_a_secret_in_any_field_is_refused_or_redacted_and_never_echoed(world: World):
    failures = []
    ops = sorted(op for op in BASES if op in REGISTRY)
    for turn, probe in enumerate(p for op in ops for p in probes_of(REGISTRY[op].input, op)):
        try:
            _check_probe(world, probe, turn)
        except AssertionError as exc:
            failures.append(str(exc).splitlines()[0][:300])
    assert not failures, "\n".join(failures)


def test_an_agent_id_header_holding_a_secret_is_refused(world: World):
    secret = github_token()
    world.sent.append(("X-Agent-Id", core(secret)))
    with world.server.client("writer", agent=secret) as client:
        response = client.post("/api/v1/memories", json={"content": "labelled by a token"})
    assert response.status_code == 400 and core(secret) not in response.text, response.text


def _store_text(world: World) -> str:
    """Everything the store holds, as text: every row of every table."""
    store = world.server.engine.store
    if store.backend == "sqlite":
        path = Path(store.path)
        raw = b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*") if p.is_file())
        return raw.decode("utf-8", "replace")
    import psycopg

    with psycopg.connect(store.url) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
            (store.schema,))]
        return "\n".join(str(row) for t in tables for row in conn.execute(
            f'SELECT t::text FROM "{store.schema}"."{t}" t'))


def test_no_probed_secret_was_stored_anywhere(world: World):
    """Runs after the probes: the store's rows and the files under the server's home."""
    assert world.sent, "the probes did not run"
    home = world.server.settings.home
    files = "".join(p.read_text("utf-8", "replace") for p in Path(home).rglob("*")
                    if p.is_file() and p.stat().st_size < 5_000_000 and ".db" not in p.name)
    stored = _store_text(world) + files
    leaked = sorted({name for name, piece in world.sent if piece in stored})
    assert not leaked, f"stored: {leaked}"
