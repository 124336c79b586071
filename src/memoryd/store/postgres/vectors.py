"""The pgvector column of the PostgreSQL store: the extension, the column's dimension and
its HNSW index.

The vector column starts without a dimension; :func:`set_vector_dims` fixes it
(``vector(384)`` for all-MiniLM-L6-v2) and builds the HNSW index with cosine ops when the
store learns its embedding model.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

from memoryd.errors import StoreError

# HNSW build parameters (pgvector's defaults are m=16, ef_construction=64).
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64


def vector_schema(conn: psycopg.Connection[Any]) -> str | None:
    """The schema holding the pgvector extension, or None when it is not installed."""
    row = conn.execute(
        "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
        "WHERE e.extname = 'vector'"
    ).fetchone()
    return row[0] if row else None


def ensure_vector_extension(conn: psycopg.Connection[Any]) -> str:
    """Install pgvector if it is missing (needs the right privileges); return its schema."""
    found = vector_schema(conn)
    if found:
        return found
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.Error as exc:
        raise StoreError(
            "the PostgreSQL database lacks the pgvector extension and memoryd could not "
            f"create it ({exc.diag.message_primary or exc}); ask an administrator to run "
            "CREATE EXTENSION vector; in this database"
        ) from exc
    found = vector_schema(conn)
    if not found:  # pragma: no cover - CREATE EXTENSION succeeded but left no trace
        raise StoreError("pgvector is not installed in this database")
    return found


def column_dims(conn: psycopg.Connection[Any], schema: str) -> int | None:
    """The fixed dimension of ``memories.embedding`` (None while it has none)."""
    row = conn.execute(
        "SELECT a.atttypmod FROM pg_attribute a "
        "WHERE a.attrelid = to_regclass(%s) AND a.attname = 'embedding' AND NOT a.attisdropped",
        (f'"{schema}".memories',),
    ).fetchone()
    if row is None or row[0] is None or row[0] < 0:
        return None
    return int(row[0])


def set_vector_dims(cur: psycopg.Cursor[Any], schema: str, dims: int) -> None:
    """Fix ``memories.embedding`` to ``vector(dims)`` and (re)build its HNSW index.

    Runs inside the caller's transaction. Vectors of the old dimension are dropped;
    vectors waiting in ``pending_vectors`` with the new dimension move in.
    """
    s = sql.Identifier(schema)
    cur.execute(sql.SQL("DROP INDEX IF EXISTS {}.memories_embedding_hnsw").format(s))
    cur.execute(
        sql.SQL(
            "ALTER TABLE {}.memories ALTER COLUMN embedding TYPE vector({}) USING "
            "CASE WHEN vector_dims(embedding) = {} THEN embedding::vector({}) END"
        ).format(s, sql.Literal(dims), sql.Literal(dims), sql.Literal(dims))
    )
    # A new type brings its default storage back; keep vectors in the row (see m003).
    cur.execute(sql.SQL("ALTER TABLE {}.memories ALTER COLUMN embedding SET STORAGE MAIN").format(s))
    cur.execute(
        sql.SQL(
            "UPDATE {s}.memories m SET embedding = p.embedding::vector({d}), "
            "embedding_model = p.model FROM {s}.pending_vectors p "
            "WHERE p.memory_id = m.id AND vector_dims(p.embedding) = {d}"
        ).format(s=s, d=sql.Literal(dims))
    )
    cur.execute(sql.SQL("DELETE FROM {}.pending_vectors").format(s))
    create_vector_index(cur, schema)


def create_vector_index(cur: psycopg.Cursor[Any], schema: str) -> None:
    """Build the HNSW cosine index on ``memories.embedding`` if it is missing."""
    cur.execute(
        sql.SQL(
            "CREATE INDEX IF NOT EXISTS memories_embedding_hnsw ON {}.memories "
            "USING hnsw (embedding vector_cosine_ops) WITH (m = {}, ef_construction = {})"
        ).format(sql.Identifier(schema), sql.Literal(HNSW_M), sql.Literal(HNSW_EF_CONSTRUCTION))
    )


def set_model(cur: psycopg.Cursor[Any], schema: str, model_id: str, dims: int) -> None:
    """Record the store's embedding model (inside the caller's transaction): a new dimension
    refits the column; the same one moves in the vectors waiting in ``pending_vectors``."""
    if column_dims(cur.connection, schema) != dims:
        set_vector_dims(cur, schema, dims)
    else:
        cur.execute(
            "UPDATE memories m SET embedding = p.embedding, embedding_model = p.model "
            "FROM pending_vectors p WHERE p.memory_id = m.id AND vector_dims(p.embedding) = %s",
            (dims,),
        )
        cur.execute("DELETE FROM pending_vectors")
        create_vector_index(cur, schema)
    cur.executemany(
        "INSERT INTO meta (key, value) VALUES (%s, %s) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [("embedding_model", model_id), ("embedding_dims", str(dims))],
    )
