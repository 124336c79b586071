"""The shared store: PostgreSQL with pgvector. ``PostgresStore`` is the store; the modules of
this package hold its SQL."""

from memoryd.store.postgres.core import PostgresStore, split_url

__all__ = ["PostgresStore", "split_url"]
