"""API keys in the store: create, verify, list, revoke (the format lives in memoryd.keys).

Key management spans every scope and agent, so a caller bound to one cannot use it;
verifying a presented key is what every HTTP request does first.
"""

from __future__ import annotations

import hmac
from typing import Iterable

from memoryd import keys
from memoryd.engine.context import EngineContext
from memoryd.errors import InvalidInput, InvalidKey, KeyNotFound
from memoryd.models import ApiKey


def create_key(ctx: EngineContext, label: str, *, scopes: Iterable[str] = ("read", "write"),
               memory_scope: str | None = None, agent_id: str | None = None,
               domains: Iterable[str] | None = None) -> keys.CreatedKey:
    """Make a key, store its hash, and return it with the secret (shown once). ``domains``
    limits it to memories in those (existing) domains."""
    ctx.access.require_unrestricted("key management")
    made = keys.make_key(label, scopes=scopes, memory_scope=memory_scope, agent_id=agent_id,
                         domains=domains, now=ctx.clock())
    _check_domains(ctx, made.key.domains)
    ctx.store.keys.save_key(made.key)
    return made


def _check_domains(ctx: EngineContext, names: list[str] | None) -> None:
    """InvalidInput naming the domains that do not exist (a typo would make a useless key)."""
    if names is None:
        return
    known = {d.name for d in ctx.store.domains.list_domains()}
    unknown = [n for n in names if n not in known]
    if unknown:
        listed = ", ".join(sorted(known)) or "none yet: run `memoryd domains discover`"
        raise InvalidInput(f"no domain named {', '.join(unknown)}; domains: {listed}")


def register_key(ctx: EngineContext, label: str, secret: str, *,
                 scopes: Iterable[str] = ("read", "write"), memory_scope: str | None = None,
                 agent_id: str | None = None,
                 domains: Iterable[str] | None = None) -> tuple[ApiKey, bool]:
    """Store a key whose secret was made elsewhere (a deployment's Secret), once.

    Returns the key and whether it was stored now; a secret already known (even revoked, which
    stays revoked) is not stored again. The secret must look like one memoryd makes.
    """
    ctx.access.require_unrestricted("key management")
    keys.check_made_secret(secret)
    digest = keys.hash_key(secret)
    known = ctx.store.keys.key_by_hash(digest)
    if known is not None:
        return known, False
    made = keys.make_key(label, scopes=scopes, memory_scope=memory_scope, agent_id=agent_id,
                         domains=domains, now=ctx.clock())
    _check_domains(ctx, made.key.domains)
    record = made.key.model_copy(update={"key_hash": digest,
                                         "prefix": secret[: len(keys.KEY_PREFIX) + 6]})
    ctx.store.keys.save_key(record)
    return record, True


def verify_key(ctx: EngineContext, secret: str | None) -> ApiKey:
    """The active key record for a presented secret; raises InvalidKey otherwise."""
    if not keys.well_formed(secret):
        raise InvalidKey("invalid API key")
    digest = keys.hash_key(secret)  # type: ignore[arg-type]
    record = ctx.store.keys.key_by_hash(digest)
    # The lookup is by index; compare_digest keeps the final check constant-time.
    if record is None or not hmac.compare_digest(record.key_hash, digest):
        raise InvalidKey("invalid API key")
    if record.revoked_at is not None:
        raise InvalidKey("this API key has been revoked")
    return record


def touch_if_due(ctx: EngineContext, key: ApiKey) -> bool:
    """Record last_used unless it was recorded within TOUCH_INTERVAL; True if written."""
    now = ctx.clock()
    if not keys.touch_due(key, now):
        return False
    ctx.store.keys.touch_key(key.id, now)
    return True


def list_keys(ctx: EngineContext) -> list[ApiKey]:
    """Every key record (hashes included, secrets never), oldest first."""
    ctx.access.require_unrestricted("key management")
    return ctx.store.keys.list_keys()


def find_key(ctx: EngineContext, ident: str) -> ApiKey:
    """A key by id or by its displayed prefix (``mk_abc123``); raises KeyNotFound."""
    matches = [k for k in list_keys(ctx) if ident in (k.id, k.prefix)]
    if not matches:
        raise KeyNotFound(f"no API key with id or prefix {ident!r}")
    if len(matches) > 1:
        raise InvalidInput(f"{ident!r} matches {len(matches)} keys; use the key id")
    return matches[0]


def revoke_key(ctx: EngineContext, ident: str) -> ApiKey:
    """Revoke a key by id or prefix (idempotent); it stops working at once."""
    key = find_key(ctx, ident)
    if key.revoked_at is None:
        key = key.model_copy(update={"revoked_at": ctx.clock()})
        ctx.store.keys.save_key(key)
    return key


def has_active_key(ctx: EngineContext) -> bool:
    """Whether at least one key is not revoked."""
    return any(k.revoked_at is None for k in ctx.store.keys.list_keys())


def bound_agents(ctx: EngineContext) -> set[str]:
    """Agents that an active key is bound to: no other key may act in their name."""
    return {k.agent_id for k in ctx.store.keys.list_keys() if k.agent_id and k.revoked_at is None}
