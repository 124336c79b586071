"""What an error may tell a client, decided once for every face (REST bodies, MCP tool errors).

* A store or embedding model that fails because of what its driver raised says so and no more:
  a driver's message can carry the database's internals and pieces of the input (PostgreSQL
  quotes the JSON it refused). The details go to the server log.
* Any other message is screened by the secret scanner, and what looks like a credential is
  replaced by ``[REDACTED:<kind>]``: messages name fields and rules, not values, and this is
  the net under the few that still quote what they were given (an id, a project name).
"""

from __future__ import annotations

import logging

from memoryd.cognition import secrets
from memoryd.errors import EmbeddingError, MemorydError, StoreError

log = logging.getLogger("memoryd.errors")

STORE_FAILED = "the store cannot be used right now; the server log says why"
EMBEDDER_FAILED = "the embedding model cannot be used right now; the server log says why"


def without_secrets(text: str) -> str:
    """``text`` with anything that looks like a credential redacted."""
    return secrets.redact(text, secrets.scan(text)) if len(text) >= 8 else text


def client_message(exc: BaseException) -> str:
    """The message a client gets for ``exc`` (logged in full when it is withheld)."""
    foreign = exc.__cause__ is not None and not isinstance(exc.__cause__, MemorydError)
    if isinstance(exc, StoreError) and foreign:
        log.warning("store error: %s", exc)
        return STORE_FAILED
    if isinstance(exc, EmbeddingError) and foreign:
        log.warning("embedding error: %s", exc)
        return EMBEDDER_FAILED
    return without_secrets(str(exc))
