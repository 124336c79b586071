"""Container entrypoint: register the deployment's API key, then run ``memoryd``.

``memoryd serve`` refuses to start without a key, and ``memoryd keys create`` invents the
secret itself. In a container the secret comes from the platform instead (a Kubernetes
Secret, a Compose secret) so that the agent beside memoryd can hold the same value. This
entrypoint stores the hash of that secret as a key, once, then execs ``memoryd`` with its
arguments.

Environment:

* ``MEMORYD_BOOTSTRAP_TOKEN_FILE``: a file holding the key (``mk_`` + at least 32 characters);
  or ``MEMORYD_BOOTSTRAP_TOKEN`` holding it directly.
* ``MEMORYD_BOOTSTRAP_SCOPES``: its scopes (default ``read,write``).
* ``MEMORYD_BOOTSTRAP_LABEL``: its label (default ``bootstrap``).

Without either variable nothing is registered (use ``memoryd keys create`` in the volume, or
``MEMORYD_ALLOW_ANONYMOUS=true`` on a private network).

Example::

    MEMORYD_BOOTSTRAP_TOKEN_FILE=/run/secrets/memoryd_token python entrypoint.py serve
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

MIN_TOKEN_CHARS = 35  # "mk_" + 32


class BootstrapError(ValueError):
    """The configured bootstrap key is missing, unreadable or malformed."""


def bootstrap_token(env: dict[str, str]) -> str | None:
    """The key named by the environment, checked; None when none is configured."""
    path = env.get("MEMORYD_BOOTSTRAP_TOKEN_FILE")
    if path:
        try:
            token = Path(path).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise BootstrapError(f"cannot read MEMORYD_BOOTSTRAP_TOKEN_FILE {path}: {exc}") from None
    else:
        token = env.get("MEMORYD_BOOTSTRAP_TOKEN", "").strip()
        if not token:
            return None
    if not token.startswith("mk_") or len(token) < MIN_TOKEN_CHARS or any(c.isspace() for c in token):
        raise BootstrapError(
            "the bootstrap key must be 'mk_' followed by at least 32 characters without spaces "
            "(make one with: python3 -c \"import secrets; print('mk_' + secrets.token_urlsafe(32))\")"
        )
    return token


def register_key(token: str, env: dict[str, str]) -> bool:
    """Store the hash of ``token`` as a key unless it is already there; True if stored now."""
    import memoryd

    scopes = env.get("MEMORYD_BOOTSTRAP_SCOPES", "read,write").split(",")
    with memoryd.open() as engine:
        _, stored = engine.register_key(env.get("MEMORYD_BOOTSTRAP_LABEL", "bootstrap"), token,
                                        scopes=scopes)
    return stored


def main(argv: list[str]) -> int:
    """Register the bootstrap key (if any), then exec ``memoryd argv...``."""
    env = dict(os.environ)
    try:
        token = bootstrap_token(env)
        if token is not None and register_key(token, env):
            print("memoryd: registered the bootstrap API key", file=sys.stderr)
    except BootstrapError as exc:
        print(f"memoryd: {exc}", file=sys.stderr)
        return 2
    args = argv or ["serve"]
    os.execvp("memoryd", ["memoryd", *args])
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
