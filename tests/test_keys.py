"""API keys: generation, hashing, verification, revocation, scopes, and the CLI."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest

from memoryd import keys
from memoryd.errors import InvalidInput
from memoryd.models import utcnow
from memoryd.operations import Caller, Forbidden
from memoryd.store.sqlite import SQLiteStore


@pytest.fixture
def store(tmp_path: Path):
    s = SQLiteStore(tmp_path / "k.db")
    yield s
    s.close()


def test_created_key_is_random_prefixed_and_only_its_hash_is_stored(store, tmp_path):
    a = keys.create_key(store, "claude", scopes=["read"])
    b = keys.create_key(store, "claude", scopes=["read"])
    assert a.secret.startswith("mk_") and len(a.secret) >= 40
    assert a.secret != b.secret and a.key.id != b.key.id
    assert a.key.key_hash == hashlib.sha256(a.secret.encode()).hexdigest()
    assert a.key.prefix == a.secret[:9]
    # The secret itself is nowhere in the database file.
    raw = sqlite3.connect(tmp_path / "k.db").execute("SELECT * FROM api_keys").fetchall()
    assert a.secret not in json.dumps(raw)


def test_verify_accepts_the_key_and_rejects_others(store):
    made = keys.create_key(store, "agent", scopes=["read", "write"])
    assert keys.verify_key(store, made.secret).id == made.key.id
    for bad in (None, "", "mk_nope", made.secret[:-1] + "x", "Bearer " + made.secret, "x" * 500):
        with pytest.raises(keys.InvalidKey):
            keys.verify_key(store, bad)


def test_revoked_key_stops_working_and_revoke_is_idempotent(store):
    made = keys.create_key(store, "old")
    revoked = keys.revoke_key(store, made.key.prefix)
    assert revoked.revoked_at is not None
    with pytest.raises(keys.InvalidKey, match="revoked"):
        keys.verify_key(store, made.secret)
    again = keys.revoke_key(store, made.key.id)
    assert again.revoked_at == revoked.revoked_at
    with pytest.raises(keys.KeyNotFound):
        keys.revoke_key(store, "nope")
    assert not keys.has_active_key(store)


def test_scopes_are_validated_ordered_and_hierarchical(store):
    assert keys.normalise_scopes(["admin", "read", "read"]) == ["read", "admin"]
    with pytest.raises(InvalidInput):
        keys.normalise_scopes(["root"])
    with pytest.raises(InvalidInput):
        keys.normalise_scopes([])
    assert keys.grants(["admin"], "write") and keys.grants(["write"], "read")
    assert not keys.grants(["read"], "write") and not keys.grants(["write"], "admin")
    with pytest.raises(InvalidInput):
        keys.create_key(store, "x", memory_scope="team:x")
    with pytest.raises(InvalidInput):
        keys.create_key(store, "  ")


def test_last_used_is_recorded_at_most_once_a_minute(store):
    made = keys.create_key(store, "t")
    now = utcnow()
    assert keys.touch_if_due(store, made.key, now)
    key = keys.verify_key(store, made.secret)
    assert key.last_used is not None
    assert not keys.touch_if_due(store, key, now + timedelta(seconds=30))
    assert keys.touch_if_due(store, key, now + timedelta(seconds=61))


def test_caller_from_bound_key_cannot_claim_another_agent(store):
    made = keys.create_key(store, "bot", agent_id="bot-1", memory_scope="project:x")
    caller = Caller.from_key(made.key, None)
    assert caller.agent_id == "bot-1" and caller.memory_scope == "project:x" and caller.bound
    assert Caller.from_key(made.key, "bot-1").agent_id == "bot-1"
    with pytest.raises(Forbidden):
        Caller.from_key(made.key, "bot-2")
    assert caller.read_filters({}) == {"scope": "project:x", "agent_id": "bot-1"}
    with pytest.raises(Forbidden):
        caller.read_filters({"scope": "user"})
    with pytest.raises(Forbidden):
        caller.write_fields({"scope": "project:y"})
    unbound = Caller.from_key(keys.create_key(store, "free").key, "claude")
    assert unbound.agent_id == "claude" and not unbound.bound


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
