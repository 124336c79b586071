"""Secret screening of every argument of every operation, for every face, in one place.

The engine screens what it stores, field by field; a field it did not list (a memory's
``session_id``, a promotion's ``reason``, a wait's ``criteria``) once slipped through and was
kept, exported and echoed. So :meth:`memoryd.operations.Operation.run` also screens *every*
text of the parsed input (strings, list items, mapping keys and values at any depth) before
the handler runs: a new field is screened without anyone remembering to. An operation names
the few fields it screens another way (``Operation.unscreened``): a search's query (never
stored; a search for a leaked key must work), the messages capture reads (a message with a
secret is skipped and reported, not the whole turn refused), the text of a graph file (each
node is screened as it is written).

The mode is the store's (``MEMORYD_SECRETS``): ``refuse`` (a 422 naming field and kind, never
the value), ``redact`` (the secret replaced by ``[REDACTED:<kind>]``) or ``allow``; a call with
``allow_secrets=true`` is left to the engine's own screening, which honours it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from memoryd.cognition import secrets

if TYPE_CHECKING:
    from memoryd.engine import Engine


def looks_like_secret(text: str) -> bool:
    """Whether ``text`` holds something the secret scanner flags (for values that are not
    arguments, such as the ``X-Agent-Id`` header, which labels what a caller stores)."""
    return bool(secrets.scan_fields({"value": text}))


def screened(data: BaseModel, unscreened: tuple[str, ...], engine: Engine) -> BaseModel:
    """``data`` with every text screened for credentials (refused, redacted or allowed as the
    settings say), except the fields named in ``unscreened``."""
    mode = engine.settings.secrets_mode
    if mode == "allow" or getattr(data, "allow_secrets", False) is True:
        return data
    given = data.model_dump(exclude_unset=True)
    texts = {name: value for name, value in given.items()
             if name not in unscreened and value is not None}
    if mode != "redact":
        secrets.ensure_no_secrets_in_fields(texts)
        return data
    clean, findings = secrets.redact_fields(texts)
    if not findings:
        return data
    changed: dict[str, Any] = {**given, **clean}
    return type(data).model_validate(changed)
