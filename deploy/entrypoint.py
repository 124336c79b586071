"""Container entrypoint: register the deployment's API key, then run ``memoryd``.

``memoryd serve`` refuses to start without a key, and ``memoryd keys create`` invents the
secret itself. In a container the secret comes from the platform instead (a Kubernetes
Secret, a Compose secret) so that the agent beside memoryd can hold the same value. This
entrypoint stores the hash of that secret as a key, once, then execs ``memoryd`` with its
arguments.

Environment:

* ``MEMORYD_BOOTSTRAP_TOKEN_FILE``: a file holding the key (``mk_`` + at least 32 random
  characters; the example files' placeholder is refused); or ``MEMORYD_BOOTSTRAP_TOKEN``
  holding it directly.
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
    from memoryd.errors import InvalidInput
    from memoryd.keys import check_made_secret

    try:
        check_made_secret(token)
    except InvalidInput as exc:
        raise BootstrapError(f"bootstrap key: {exc}") from None
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
