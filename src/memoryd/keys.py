"""API keys: create, verify, list and revoke the keys that guard the HTTP faces.

A key is ``mk_`` followed by 43 URL-safe characters (256 random bits). Only its
SHA-256 is stored: for a random 256-bit secret a plain hash is as good as a slow
password hash, and it lets verification be one indexed lookup. The lookup result
is still compared with :func:`hmac.compare_digest`, so no timing difference leaks
how much of a hash matched.

Scopes: ``read`` < ``write`` < ``admin`` (each includes the ones before it). A key may
also be bound to a memory scope (``project:x``) and/or an agent id: it then sees and
writes only that scope's (that agent's) memories.

>>> created = create_key(engine.store, "claude-code", scopes=["read", "write"])
>>> created.secret            # shown once: "mk_..."
>>> verify_key(engine.store, created.secret).label
'claude-code'
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Iterable, Literal

from memoryd.errors import InvalidInput, MemorydError
from memoryd.models import ApiKey, _check_scope, utcnow

if TYPE_CHECKING:
    from memoryd.store.base import Store

KeyScope = Literal["read", "write", "admin"]
SCOPE_ORDER: dict[str, int] = {"read": 0, "write": 1, "admin": 2}
KEY_PREFIX = "mk_"
# How often last_used is written for one key (a write per request would serialise readers).
TOUCH_INTERVAL = timedelta(seconds=60)


class ApiKeyError(MemorydError):
    """Base of the API key errors."""


class InvalidKey(ApiKeyError):
    """The presented key is unknown, malformed or revoked."""


class KeyNotFound(ApiKeyError, LookupError):
    """No key has that id or prefix."""


class NoKeysConfigured(ApiKeyError):
    """A server would start with no usable key and without the anonymous opt-in."""

    def __init__(self) -> None:
        super().__init__(
            "no API key exists and anonymous access is off, so nobody could use this server. "
            "Create a key with `memoryd keys create --label <name>` (it is printed once), or "
            "set MEMORYD_ALLOW_ANONYMOUS=true to allow unauthenticated access explicitly."
        )


@dataclass(frozen=True)
class CreatedKey:
    """A new key: the record that is stored and the secret, which is shown only now."""

    key: ApiKey
    secret: str


def hash_key(secret: str) -> str:
    """The stored form of a key: hex SHA-256."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def normalise_scopes(scopes: Iterable[str]) -> list[KeyScope]:
    """Validate and order scopes; raises InvalidInput on an unknown one."""
    out: list[KeyScope] = []
    for raw in scopes:
        scope = raw.strip().lower()
        if not scope:
            continue
        if scope not in SCOPE_ORDER:
            raise InvalidInput(f"unknown key scope {raw!r}; use read, write or admin")
        if scope not in out:
            out.append(scope)  # type: ignore[arg-type]
    if not out:
        raise InvalidInput("a key needs at least one scope (read, write or admin)")
    return sorted(out, key=SCOPE_ORDER.__getitem__)


def grants(scopes: Iterable[str], needed: str) -> bool:
    """Whether a key with ``scopes`` may do something that needs ``needed``."""
    level = SCOPE_ORDER[needed]
    return any(SCOPE_ORDER.get(s, -1) >= level for s in scopes)


def create_key(
    store: Store,
    label: str,
    *,
    scopes: Iterable[str] = ("read", "write"),
    memory_scope: str | None = None,
    agent_id: str | None = None,
    now: datetime | None = None,
) -> CreatedKey:
    """Make a key, store its hash, and return it with the secret (shown once)."""
    label = label.strip()
    if not label or len(label) > 128:
        raise InvalidInput("label must be 1-128 characters")
    if memory_scope is not None:
        try:
            _check_scope(memory_scope)
        except ValueError as exc:
            raise InvalidInput(f"memory_scope: {exc}") from exc
    if agent_id is not None and not (0 < len(agent_id) <= 256):
        raise InvalidInput("agent_id must be 1-256 characters")
    secret = KEY_PREFIX + secrets.token_urlsafe(32)
    record = ApiKey(
        id=uuid.uuid4().hex[:12],
        label=label,
        prefix=secret[: len(KEY_PREFIX) + 6],
        key_hash=hash_key(secret),
        scopes=normalise_scopes(scopes),
        memory_scope=memory_scope,
        agent_id=agent_id,
        created_at=now or utcnow(),
    )
    store.save_key(record)
    return CreatedKey(record, secret)


def verify_key(store: Store, secret: str | None) -> ApiKey:
    """The active key record for a presented secret; raises InvalidKey otherwise."""
    if not secret or not secret.startswith(KEY_PREFIX) or len(secret) > 200:
        raise InvalidKey("invalid API key")
    digest = hash_key(secret)
    record = store.key_by_hash(digest)
    # The lookup is by index; compare_digest keeps the final check constant-time.
    if record is None or not hmac.compare_digest(record.key_hash, digest):
        raise InvalidKey("invalid API key")
    if record.revoked_at is not None:
        raise InvalidKey("this API key has been revoked")
    return record


def touch_due(key: ApiKey, now: datetime | None = None) -> bool:
    """Whether last_used is older than TOUCH_INTERVAL (or unset)."""
    return key.last_used is None or (now or utcnow()) - key.last_used >= TOUCH_INTERVAL


def touch_if_due(store: Store, key: ApiKey, now: datetime | None = None) -> bool:
    """Record last_used unless it was recorded within TOUCH_INTERVAL; True if written."""
    now = now or utcnow()
    if not touch_due(key, now):
        return False
    store.touch_key(key.id, now)
    return True


def list_keys(store: Store) -> list[ApiKey]:
    """Every key record (hashes included, secrets never), oldest first."""
    return store.list_keys()


def find_key(store: Store, ident: str) -> ApiKey:
    """A key by id or by its displayed prefix (``mk_abc123``); raises KeyNotFound."""
    matches = [k for k in store.list_keys() if ident in (k.id, k.prefix)]
    if not matches:
        raise KeyNotFound(f"no API key with id or prefix {ident!r}")
    if len(matches) > 1:
        raise InvalidInput(f"{ident!r} matches {len(matches)} keys; use the key id")
    return matches[0]


def revoke_key(store: Store, ident: str, *, now: datetime | None = None) -> ApiKey:
    """Revoke a key by id or prefix (idempotent); it stops working at once."""
    key = find_key(store, ident)
    if key.revoked_at is None:
        key = key.model_copy(update={"revoked_at": now or utcnow()})
        store.save_key(key)
    return key


def has_active_key(store: Store) -> bool:
    """Whether at least one key is not revoked."""
    return any(k.revoked_at is None for k in store.list_keys())
