"""The embedded store: one SQLite file (WAL), with memoryd's keyword index and an in-memory
vector index. ``SQLiteStore`` is the store; the modules of this package hold its SQL."""

from memoryd.store.sqlite.core import SQLiteStore, parse_sqlite_url

__all__ = ["SQLiteStore", "parse_sqlite_url"]
