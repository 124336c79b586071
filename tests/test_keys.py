"""API keys: generation, hashing, verification, revocation, scopes, and the CLI."""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest

import memoryd
from memoryd import keys
from memoryd.engine import Access
from memoryd.errors import Forbidden, InvalidInput, InvalidKey, KeyNotFound
from memoryd.keys import check_made_secret
from memoryd.models import NewMemory, SearchFilters, utcnow
from memoryd.operations import Caller
from memoryd.store.base import Actor


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = utcnow()

    def __call__(self):
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def engine(tmp_path: Path, shared_embedder, clock):
    e = memoryd.open(f"sqlite:///{tmp_path / 'k.db'}", embedder=shared_embedder, clock=clock)
    yield e
    e.close()


def test_created_key_is_random_prefixed_and_only_its_hash_is_stored(engine, tmp_path):
    a = engine.admin.create_key("claude", scopes=["read"])
    b = engine.admin.create_key("claude", scopes=["read"])
    assert a.secret.startswith("mk_") and len(a.secret) >= 40
    assert a.secret != b.secret and a.key.id != b.key.id
    assert a.key.key_hash == hashlib.sha256(a.secret.encode()).hexdigest()
    assert a.key.prefix == a.secret[:9]
    # The secret itself is nowhere in the database file.
    raw = sqlite3.connect(tmp_path / "k.db").execute("SELECT * FROM api_keys").fetchall()
    assert a.secret not in json.dumps(raw)


def test_verify_accepts_the_key_and_rejects_others(engine):
    made = engine.admin.create_key("agent", scopes=["read", "write"])
    assert engine.admin.verify_key(made.secret).id == made.key.id
    for bad in (None, "", "mk_nope", made.secret[:-1] + "x", "Bearer " + made.secret, "x" * 500):
        with pytest.raises(InvalidKey):
            engine.admin.verify_key(bad)


def test_revoked_key_stops_working_and_revoke_is_idempotent(engine):
    made = engine.admin.create_key("old")
    revoked = engine.admin.revoke_key(made.key.prefix)
    assert revoked.revoked_at is not None
    with pytest.raises(InvalidKey, match="revoked"):
        engine.admin.verify_key(made.secret)
    again = engine.admin.revoke_key(made.key.id)
    assert again.revoked_at == revoked.revoked_at
    with pytest.raises(KeyNotFound):
        engine.admin.revoke_key("nope")
    assert not engine.admin.has_active_key()


def test_scopes_are_validated_ordered_and_hierarchical(engine):
    assert keys.normalise_scopes(["admin", "read", "read"]) == ["read", "admin"]
    with pytest.raises(InvalidInput):
        keys.normalise_scopes(["root"])
    with pytest.raises(InvalidInput):
        keys.normalise_scopes([])
    assert keys.grants(["admin"], "write") and keys.grants(["write"], "read")
    assert not keys.grants(["read"], "write") and not keys.grants(["write"], "admin")
    with pytest.raises(InvalidInput):
        engine.admin.create_key("x", memory_scope="team:x")
    with pytest.raises(InvalidInput):
        engine.admin.create_key("  ")


def test_last_used_is_recorded_at_most_once_a_minute(engine, clock):
    made = engine.admin.create_key("t")
    assert engine.admin.touch_key(made.key)
    key = engine.admin.verify_key(made.secret)
    assert key.last_used is not None
    clock.now += timedelta(seconds=30)
    assert not engine.admin.touch_key(key)
    clock.now += timedelta(seconds=31)
    assert engine.admin.touch_key(key)


def test_a_key_made_elsewhere_is_registered_once(engine):
    secret = "mk_" + secrets.token_urlsafe(32)
    key, stored = engine.admin.register_key("deploy", secret, scopes=["read"])
    assert stored and engine.admin.verify_key(secret).id == key.id and key.scopes == ["read"]
    again, stored = engine.admin.register_key("deploy", secret)
    assert not stored and again.id == key.id
    for bad in ("mk_short", "not-a-key" + "x" * 40, "mk_" + "a" * 20 + " " + "b" * 20):
        with pytest.raises(InvalidInput):
            engine.admin.register_key("bad", bad)


@pytest.mark.parametrize("placeholder", [
    "mk_replace_me_with_a_random_secret_of_32_chars",  # deploy/*.example
    "mk_" + "A" * 43,                                   # no variety
    "mk_CHANGEME-CHANGEME-CHANGEME-CHANGEME-1234",
    "mk_this_is_my_own_key_for_the_agent_on_box",     # words, not random
])
def test_a_placeholder_is_not_accepted_as_a_key(engine, placeholder):
    with pytest.raises(InvalidInput) as refused:
        engine.admin.register_key("deploy", placeholder)
    assert placeholder not in str(refused.value) and placeholder[3:] not in str(refused.value)
    assert engine.admin.list_keys() == []


def test_the_example_files_hold_a_refused_placeholder():
    root = Path(__file__).resolve().parents[1] / "deploy"
    for name in ("memoryd.env.example", "k8s/secret.example.yaml"):
        token = re.search(r"(?m)^[^#]*?(mk_\w+)", (root / name).read_text()).group(1)
        with pytest.raises(InvalidInput, match="placeholder"):
            check_made_secret(token)
    for _ in range(200):  # what the docs tell people to run is always accepted
        check_made_secret("mk_" + secrets.token_urlsafe(32))
        check_made_secret("mk_" + secrets.token_hex(16))


def test_key_management_is_refused_to_a_bound_engine(engine):
    bound = engine.acting_as(access=Access(agent_id="bot-1"))
    admin = bound.admin
    for call in (lambda: admin.create_key("x"), admin.list_keys, lambda: admin.revoke_key("x")):
        with pytest.raises(Forbidden):
            call()


def test_caller_from_bound_key_cannot_claim_another_agent(engine):
    made = engine.admin.create_key("bot", agent_id="bot-1", memory_scope="project:x")
    caller = Caller.from_key(made.key, None)
    assert caller.agent_id == "bot-1" and caller.memory_scope == "project:x" and caller.bound
    assert Caller.from_key(made.key, "bot-1").agent_id == "bot-1"
    with pytest.raises(Forbidden):
        Caller.from_key(made.key, "bot-2")
    access = caller.access()
    assert access == Access(scope="project:x", agent_id="bot-1")
    assert access.narrow(SearchFilters()) == SearchFilters(scope="project:x", agent_id="bot-1")
    with pytest.raises(Forbidden):
        access.narrow(SearchFilters(scope="user"))
    with pytest.raises(Forbidden):
        access.stamp(NewMemory(content="x", scope="project:y"), caller.actor())
    unbound = Caller.from_key(engine.admin.create_key("free").key, "claude")
    assert unbound.agent_id == "claude" and not unbound.bound


def test_a_key_is_bound_only_to_an_agent_id_its_header_can_carry(engine):
    # X-Agent-Id is printable ASCII without surrounding spaces; a key bound to any other
    # agent id could never send its own agent id (403), so such an id is refused up front.
    for bad in ("  ", "bot-1 ", " bot-1", "b\u00f6t", "bot\n1", "bot\t1"):
        with pytest.raises(InvalidInput, match="agent_id"):
            engine.admin.create_key("bot", agent_id=bad)
    with pytest.raises(InvalidInput, match="agent_id"):
        engine.admin.register_key("bot", "mk_" + secrets.token_urlsafe(32), agent_id="bot-1 ")
    made = engine.admin.create_key("bot", agent_id="bot 1")  # inner spaces travel in a header
    assert Caller.from_key(made.key, "bot 1").agent_id == "bot 1"
    for bad in ("k\n1", "k\x00", "tab\there"):
        with pytest.raises(InvalidInput, match="label"):
            engine.admin.create_key(bad)
    assert [k.label for k in engine.admin.list_keys()] == ["bot"]


def test_an_agent_with_its_own_key_cannot_be_impersonated(engine):
    engine.admin.create_key("bot", agent_id="bot-2")
    free = engine.acting_as(Actor("key:free"))
    with pytest.raises(Forbidden, match="key of its own"):
        free.labelled("bot-2")
    assert free.labelled("helper").add("a labelled memory").agent_id == "helper"
    with pytest.raises(Forbidden):
        engine.acting_as(access=Access(agent_id="bot-1")).labelled("helper")


# --- the CLI -------------------------------------------------------------------------
def test_cli_create_list_revoke(run_cli):
    made = run_cli(
        "keys",
        "create",
        "--label",
        "claude-code",
        "--scopes",
        "read,write",
        "--scope",
        "project:alpha",
        "--agent",
        "cc",
    )
    assert made.returncode == 0, made.stderr
    secret = made.stdout.strip()
    assert secret.startswith("mk_") and "\n" not in secret
    assert "shown only once" in made.stderr
    listed = run_cli("keys", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    (row,) = json.loads(listed.stdout)
    assert row["label"] == "claude-code" and row["scopes"] == ["read", "write"]
    assert row["memory_scope"] == "project:alpha" and row["agent_id"] == "cc"
    assert "key_hash" not in row and secret not in listed.stdout
    revoked = run_cli("keys", "revoke", row["id"])
    assert revoked.returncode == 0, revoked.stderr
    assert json.loads(run_cli("keys", "list", "--json").stdout)[0]["revoked_at"]
    bad = run_cli("keys", "create", "--label", "x", "--scopes", "root")
    assert bad.returncode != 0 and "unknown key scope" in bad.stderr


def test_serve_refuses_to_start_without_a_key(run_cli):
    result = run_cli("serve", "--port", "1", timeout=60)
    assert result.returncode == 1
    assert "memoryd keys create" in result.stderr and "MEMORYD_ALLOW_ANONYMOUS" in result.stderr
