"""API keys, the pure part: their format, scopes and hashing (the engine stores them:
:mod:`memoryd.engine.admin.keys`).

A key is ``mk_`` followed by 43 URL-safe characters (256 random bits). Only its
SHA-256 is stored: for a random 256-bit secret a plain hash is as good as a slow
password hash, and it lets verification be one indexed lookup. The lookup result
is still compared with :func:`hmac.compare_digest`, so no timing difference leaks
how much of a hash matched.

Scopes: ``read`` < ``write`` < ``admin`` (each includes the ones before it). A key may
also be bound to a memory scope (``project:x``) and/or an agent id: it then sees and
writes only that scope's (that agent's) memories; and it may be limited to domains
(``home``, ``infra``): it then sees and writes only memories in at least one of them.

>>> created = engine.admin.create_key("claude-code", scopes=["read", "write"])
>>> created.secret            # shown once: "mk_..."
>>> engine.admin.verify_key(created.secret).label
'claude-code'
"""

from __future__ import annotations

import hashlib
import re
import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Iterable, Literal

from memoryd.errors import InvalidInput
from memoryd.models import ApiKey, check_domain_name, check_scope, utcnow
from memoryd.models.text import BLANK_CLASS, compile_pattern

KeyScope = Literal["read", "write", "admin"]
SCOPE_ORDER: dict[str, int] = {"read": 0, "write": 1, "admin": 2}
KEY_PREFIX = "mk_"
# An agent id: what an X-Agent-Id header may carry (printable ASCII, no surrounding spaces;
# the header is stripped) and so what a key may be bound to: its agent can always name itself.
AGENT_ID = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]{0,254}[\x21-\x7e])?")
AGENT_ID_PATTERN = f"^{AGENT_ID.pattern}$"
# A key's label: something visible, no control characters or line breaks (as published).
_LABEL_CONTROL = r"\x00-\x1f\x7f-\x9f\u2028\u2029"
LABEL_PATTERN = f"^[^{_LABEL_CONTROL}]*[^{_LABEL_CONTROL}{BLANK_CLASS}][^{_LABEL_CONTROL}]*$"
LABEL_RULE = "label must be 1-128 characters, not all blank, without control characters"
# How often last_used is written for one key (a write per request would serialise readers).
TOUCH_INTERVAL = timedelta(seconds=60)


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


def domain_list(domains: Iterable[str] | None) -> list[str] | None:
    """Domain names a key is limited to: validated, de-duplicated and sorted (None: every
    domain); an empty list is refused, since such a key could see nothing."""
    if domains is None:
        return None
    names: list[str] = []
    for raw in domains:
        try:
            name = check_domain_name(raw)
        except (ValueError, AttributeError) as exc:
            raise InvalidInput(f"domains: {exc}") from exc
        if name not in names:
            names.append(name)
    if not names:
        raise InvalidInput("domains: name at least one domain (or none, for every domain)")
    return sorted(names)


def make_key(
    label: str,
    *,
    scopes: Iterable[str] = ("read", "write"),
    memory_scope: str | None = None,
    agent_id: str | None = None,
    domains: Iterable[str] | None = None,
    now: datetime | None = None,
) -> CreatedKey:
    """A new key record and its secret (validated; not stored yet)."""
    if len(label) > 128 or not compile_pattern(LABEL_PATTERN).search(label):
        raise InvalidInput(LABEL_RULE)
    label = label.strip()
    if memory_scope is not None:
        try:
            check_scope(memory_scope)
        except ValueError as exc:
            raise InvalidInput(f"memory_scope: {exc}") from exc
    if agent_id is not None and not AGENT_ID.fullmatch(agent_id):
        raise InvalidInput(
            "agent_id must be 1-256 printable ASCII characters without "
            "leading or trailing spaces (what an X-Agent-Id header can carry)")
    secret = KEY_PREFIX + secrets.token_urlsafe(32)
    record = ApiKey(
        id=uuid.uuid4().hex[:12],
        label=label,
        prefix=secret[: len(KEY_PREFIX) + 6],
        key_hash=hash_key(secret),
        scopes=normalise_scopes(scopes),
        memory_scope=memory_scope,
        agent_id=agent_id,
        domains=domain_list(domains),
        created_at=now or utcnow(),
    )
    return CreatedKey(record, secret)


#: Words that mark a secret copied from an example instead of generated
#: (``mk_replace_me_with_a_random_secret_of_32_chars``), compared without ``_``/``-``.
PLACEHOLDER_WORDS = ("replaceme", "changeme", "placeholder", "example", "yourkey", "yoursecret",
                     "randomsecret", "secret", "dummy")
#: The fewest distinct characters a made-elsewhere secret may have: 32 random hex digits have
#: fewer than 8 with a probability of about 4e-8; ``mk_aaaa...`` has one.
MIN_DISTINCT_CHARS = 8


def check_made_secret(secret: str) -> None:
    """Refuse a secret made outside memoryd (a deployment's Secret, ``keys import``) that is
    not one: the wrong shape, an example's placeholder, or too little variety to be random.
    The message never repeats the secret."""
    if not well_formed(secret) or len(secret) < len(KEY_PREFIX) + 32 \
            or any(c.isspace() for c in secret):
        raise InvalidInput("a key must be 'mk_' followed by at least 32 characters, no spaces")
    body = secret[len(KEY_PREFIX):]
    folded = body.lower().replace("_", "").replace("-", "")
    if any(word in folded for word in PLACEHOLDER_WORDS) or re.fullmatch(r"[a-z_\-]+", body):
        raise InvalidInput("the key is a placeholder, not a random secret; make one with: "
                           "python3 -c \"import secrets; print('mk_' + secrets.token_urlsafe(32))\"")
    if len(set(body)) < MIN_DISTINCT_CHARS:
        raise InvalidInput(f"the key has fewer than {MIN_DISTINCT_CHARS} distinct characters, so "
                           "it is not a random secret")


def well_formed(secret: str | None) -> bool:
    """Whether a presented secret could be a memoryd key at all (cheap, before any lookup)."""
    return bool(secret) and secret.startswith(KEY_PREFIX) and len(secret) <= 200  # type: ignore[union-attr]


def touch_due(key: ApiKey, now: datetime | None = None) -> bool:
    """Whether last_used is older than TOUCH_INTERVAL (or unset)."""
    return key.last_used is None or (now or utcnow()) - key.last_used >= TOUCH_INTERVAL
