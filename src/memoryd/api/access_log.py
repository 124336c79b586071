"""Keep secrets out of the access log: query-string values are logged as ``***``.

memoryd never reads a key from the query string, but clients put them there anyway
(``?api_key=mk_...``, ``?token=...``), and uvicorn's access log prints the full path with its
query. :class:`RedactQueryFilter` rewrites each access-log record so that only the parameter
names remain (``GET /api/v1/ledger?after=***&limit=***``): enough to see what was asked,
nothing that could be a credential. :func:`install` attaches it to uvicorn's access logger
once per process.

>>> redact_query("/api/v1/memories?api_key=mk_abc&limit=5")
'/api/v1/memories?api_key=***&limit=***'
"""

from __future__ import annotations

import logging

ACCESS_LOGGER = "uvicorn.access"
MASK = "***"


def redact_query(path: str) -> str:
    """``path`` with every query value replaced by ``***`` (names kept, at most 40 of them)."""
    base, sep, query = path.partition("?")
    if not sep:
        return path
    names = [part.partition("=")[0][:64] for part in query.split("&") if part][:40]
    return base + "?" + "&".join(f"{name}={MASK}" for name in names)


class RedactQueryFilter(logging.Filter):
    """Rewrites uvicorn access-log records (``client, method, path, version, status``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            record.args = (*args[:2], redact_query(args[2]), *args[3:])
        return True


def install() -> None:
    """Attach the filter to uvicorn's access logger (idempotent)."""
    logger = logging.getLogger(ACCESS_LOGGER)
    if not any(isinstance(f, RedactQueryFilter) for f in logger.filters):
        logger.addFilter(RedactQueryFilter())
