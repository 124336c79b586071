"""Versioned schema migrations of the PostgreSQL store: named, ordered, recorded.

Each migration is a function ``m<NNN>_<name>(cur, dims)`` applied in its own
transaction and recorded in ``schema_migrations``. :func:`migrate` holds a
session-level advisory lock while it works, so any number of processes may open
the same database at once: one migrates, the others wait and then find nothing
left to do.

Every table lives in one PostgreSQL schema (``memoryd`` unless the store URL says
``?schema=...``), so a memoryd store can share a database with other applications
and several stores can share one database. ``meta.app = 'memoryd'`` marks the
schema as ours; a schema holding other tables is refused.

The vector column starts without a dimension; ``postgres_vectors.set_vector_dims``
fixes it when the store learns its embedding model.
"""

from __future__ import annotations

import zlib
from typing import Any, Callable

import psycopg
from psycopg import sql

from memoryd import ledger
from memoryd.errors import NotAMemorydStore, SchemaTooNew
from memoryd.store.postgres_vectors import ensure_vector_extension

APP_MARKER = "memoryd"
DEFAULT_SCHEMA = "memoryd"
# HNSW build parameters (pgvector's defaults are m=16, ef_construction=64).
def lock_key(schema: str, purpose: str) -> int:
    """A stable signed 64-bit advisory-lock key for ``purpose`` in ``schema``."""
    value = zlib.crc32(f"memoryd:{purpose}:{schema}".encode()) | (0x6D656D << 32)
    return value - (1 << 64) if value >= (1 << 63) else value


def m001_initial(cur: psycopg.Cursor[Any]) -> None:
    """Memories (with keyword tsvector and vector column), history, vectors awaiting a re-embed."""
    cur.execute(
        """
        CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL);

        -- array_to_string is only STABLE; a generated column needs IMMUTABLE.
        CREATE FUNCTION tags_text(text[]) RETURNS text
            LANGUAGE sql IMMUTABLE PARALLEL SAFE
            AS $$ SELECT coalesce(array_to_string($1, ' '), '') $$;

        CREATE TABLE memories (
            rowid bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
            id text PRIMARY KEY,
            content text NOT NULL,
            summary text,
            node_type text NOT NULL,
            category text,
            subcategory text,
            tags text[] NOT NULL DEFAULT '{}',
            source text,
            agent_id text,
            session_id text,
            scope text NOT NULL DEFAULT 'user',
            domains text[] NOT NULL DEFAULT '{}',
            domain_scores jsonb NOT NULL DEFAULT '{}',
            importance double precision NOT NULL DEFAULT 0.5,
            severity text,
            created_at timestamptz NOT NULL,
            updated_at timestamptz NOT NULL,
            valid_from timestamptz,
            valid_until timestamptz,
            superseded_by text,
            tier text NOT NULL DEFAULT 'hot',
            embedding_model text,
            metadata jsonb NOT NULL DEFAULT '{}',
            stability double precision NOT NULL DEFAULT 1.0,
            difficulty double precision NOT NULL DEFAULT 5.0,
            reps integer NOT NULL DEFAULT 0,
            lapses integer NOT NULL DEFAULT 0,
            last_review timestamptz,
            storage_strength double precision NOT NULL DEFAULT 1.0,
            retrieval_strength double precision NOT NULL DEFAULT 1.0,
            access_count integer NOT NULL DEFAULT 0,
            last_accessed timestamptz,
            seq bigint NOT NULL,
            embedding vector,
            -- Keyword index: content weighs most (A), then summary (B), then tags (C).
            search_vec tsvector GENERATED ALWAYS AS (
                setweight(to_tsvector('english'::regconfig, content), 'A') ||
                setweight(to_tsvector('english'::regconfig, coalesce(summary, '')), 'B') ||
                setweight(to_tsvector('english'::regconfig, tags_text(tags)), 'C')
            ) STORED
        );
        CREATE INDEX memories_fts ON memories USING gin (search_vec);
        CREATE INDEX memories_tags ON memories USING gin (tags);
        CREATE INDEX memories_created ON memories (created_at);
        CREATE INDEX memories_updated ON memories (updated_at);
        CREATE INDEX memories_type ON memories (node_type);
        CREATE INDEX memories_scope ON memories (scope);
        CREATE INDEX memories_agent ON memories (agent_id);
        CREATE INDEX memories_session ON memories (session_id);
        CREATE INDEX memories_category ON memories (category);
        CREATE INDEX memories_tier ON memories (tier);

        -- Vectors of another dimension written by an unfinished re-embed; they move
        -- into memories.embedding when the store switches models.
        CREATE TABLE pending_vectors (
            memory_id text PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE,
            model text NOT NULL,
            embedding vector NOT NULL
        );

        CREATE TABLE history (
            seq bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            memory_id text NOT NULL,
            operation text NOT NULL,
            actor text,
            agent_id text,
            at timestamptz NOT NULL,
            details jsonb NOT NULL DEFAULT '{}'
        );
        CREATE INDEX history_memory ON history (memory_id, seq);
        """
    )
    cur.execute("INSERT INTO meta (key, value) VALUES ('app', %s)", (APP_MARKER,))


def m002_graph_intentions_keys(cur: psycopg.Cursor[Any]) -> None:
    """Edges, intentions, API keys, session access marks, watermarks, reports."""
    cur.execute(
        """
        CREATE TABLE edges (
            pos bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
            source_id text NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            target_id text NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            edge_type text NOT NULL,
            weight double precision NOT NULL,
            created_at timestamptz NOT NULL,
            valid_from timestamptz,
            valid_until timestamptz,
            metadata jsonb NOT NULL DEFAULT '{}',
            PRIMARY KEY (source_id, target_id, edge_type)
        );
        CREATE INDEX edges_target ON edges (target_id);

        CREATE TABLE intentions (
            pos bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
            id text PRIMARY KEY,
            description text NOT NULL,
            trigger jsonb NOT NULL,
            priority text NOT NULL,
            status text NOT NULL,
            deadline timestamptz,
            due_at timestamptz,
            snoozed_until timestamptz,
            created_at timestamptz NOT NULL,
            updated_at timestamptz NOT NULL,
            agent_id text,
            scope text NOT NULL DEFAULT 'user',
            metadata jsonb NOT NULL DEFAULT '{}'
        );
        CREATE INDEX intentions_status ON intentions (status, due_at);

        CREATE TABLE api_keys (
            pos bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
            id text PRIMARY KEY,
            label text NOT NULL,
            prefix text NOT NULL,
            key_hash text NOT NULL UNIQUE,
            scopes jsonb NOT NULL,
            memory_scope text,
            agent_id text,
            created_at timestamptz NOT NULL,
            last_used timestamptz,
            revoked_at timestamptz
        );

        CREATE TABLE session_access (
            pos bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
            session_id text NOT NULL,
            memory_id text NOT NULL,
            at timestamptz NOT NULL,
            PRIMARY KEY (session_id, memory_id)
        );

        CREATE TABLE watermarks (
            pos bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
            key text PRIMARY KEY,
            value bigint NOT NULL,
            updated_at timestamptz NOT NULL
        );

        CREATE TABLE reports (
            id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            kind text NOT NULL,
            at timestamptz NOT NULL,
            body jsonb NOT NULL
        );
        CREATE INDEX reports_kind ON reports (kind, id);
        """
    )


def m003_vectors_inline(cur: psycopg.Cursor[Any]) -> None:
    """Keep vectors in the row (MAIN) instead of TOAST: a vector(384) plus text and tsvector
    passes the 2 kB TOAST threshold, and a de-TOAST per candidate doubles exact-scan time."""
    cur.execute("ALTER TABLE memories ALTER COLUMN embedding SET STORAGE MAIN")


def m004_ledger(cur: psycopg.Cursor[Any]) -> None:
    """The hash-chained audit ledger, and an index for history by time (the journal)."""
    cur.execute(
        """
        CREATE TABLE ledger (
            seq bigint PRIMARY KEY,
            stamp text NOT NULL,
            operation text NOT NULL,
            memory_id text NOT NULL,
            content_sha256 text,
            actor text,
            agent_id text,
            key_label text,
            prev_hash text NOT NULL,
            hash text NOT NULL
        );
        CREATE INDEX history_at ON history (at);
        """
    )
    start_ledger(cur)


def start_ledger(cur: psycopg.Cursor[Any]) -> None:
    """Begin an empty ledger of a store that holds memories with a baseline entry.

    Its content hash covers every memory's id and content at this moment, so the
    state the ledger starts from is pinned too.
    """
    if cur.execute("SELECT 1 FROM ledger LIMIT 1").fetchone():
        return
    if not cur.execute("SELECT 1 FROM memories LIMIT 1").fetchone():
        return
    with cur.connection.cursor(name="ledger_baseline") as pairs:
        pairs.itersize = 5000
        pairs.execute("SELECT id, content FROM memories ORDER BY id COLLATE \"C\"")
        digest = ledger.baseline_digest(pairs)
    entry = ledger.seal(None, [ledger.PendingEntry(
        ledger.BASELINE_OPERATION, "", digest, actor="migration")])[0]
    cur.execute(ledger.insert_statement("%s"), ledger.as_rows([entry])[0])


def m005_keywords_inline(cur: psycopg.Cursor[Any]) -> None:
    """Keep the tsvector in the row (MAIN) as well. With the vector inline, rows pass the
    2 kB TOAST threshold and the tsvector went out of line: every keyword-matched row then
    cost several extra page reads. Applies to rows written from now on; ``VACUUM FULL
    memories`` rewrites older rows (it also rebuilds the indexes, so plan for it)."""
    cur.execute("ALTER TABLE memories ALTER COLUMN search_vec SET STORAGE MAIN")


def m007_knowledge_graphs(cur: psycopg.Cursor[Any]) -> None:
    """Knowledge graphs: the mirrored graph files' sync state, and a partial index of the
    memories that are graph nodes (``metadata.kg``), by scope. Safe to run again (a store
    rolled back to an earlier version keeps its tables)."""
    cur.execute(
        """
        CREATE TABLE IF NOT EXISTS graph_files (
            pos bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
            path text PRIMARY KEY,
            scope text NOT NULL,
            base jsonb NOT NULL DEFAULT '{}',
            signature text,
            seq bigint NOT NULL DEFAULT 0,
            updated_at timestamptz NOT NULL
        );
        CREATE INDEX IF NOT EXISTS graph_files_scope ON graph_files (scope, updated_at);
        CREATE INDEX IF NOT EXISTS memories_graph ON memories (scope) WHERE (metadata -> 'kg') IS NOT NULL;
        """
    )


def m008_tasks_waits(cur: psycopg.Cursor[Any]) -> None:
    """Task memory (tasks and their messages) and smart-wait jobs."""
    cur.execute(
        """
        CREATE TABLE tasks (
            pos bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
            id text PRIMARY KEY,
            name text NOT NULL,
            status text NOT NULL,
            plan jsonb NOT NULL DEFAULT '[]',
            created_at timestamptz NOT NULL,
            updated_at timestamptz NOT NULL,
            agent_id text,
            scope text NOT NULL DEFAULT 'user',
            metadata jsonb NOT NULL DEFAULT '{}',
            memory_id text
        );
        CREATE INDEX tasks_status ON tasks (status, updated_at);
        CREATE INDEX tasks_updated ON tasks (updated_at);

        CREATE TABLE task_messages (
            id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            task_id text NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
            role text NOT NULL,
            kind text NOT NULL,
            content text NOT NULL,
            created_at timestamptz NOT NULL,
            metadata jsonb NOT NULL DEFAULT '{}'
        );
        CREATE INDEX task_messages_task ON task_messages (task_id, id);

        CREATE TABLE wait_jobs (
            pos bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
            id text PRIMARY KEY,
            target text NOT NULL,
            criteria jsonb NOT NULL,
            timeout_s double precision NOT NULL,
            created_at timestamptz NOT NULL,
            updated_at timestamptz NOT NULL,
            deadline timestamptz NOT NULL,
            resolved_at timestamptz,
            status text NOT NULL,
            task_id text,
            wake jsonb,
            owner jsonb NOT NULL DEFAULT '{}',
            runner text,
            scope text NOT NULL DEFAULT 'user',
            agent_id text,
            result text,
            last_observation jsonb,
            checks integer NOT NULL DEFAULT 0,
            cursor jsonb NOT NULL DEFAULT '{}',
            wake_attempts jsonb NOT NULL DEFAULT '[]'
        );
        CREATE INDEX wait_jobs_status ON wait_jobs (status, runner);
        CREATE INDEX wait_jobs_task ON wait_jobs (task_id);
        CREATE INDEX wait_jobs_updated ON wait_jobs (updated_at);
        """
    )


def m009_domains(cur: psycopg.Cursor[Any]) -> None:
    """Emergent domains: the domains with their centroids (pgvector), re-clustering proposals,
    domain settings (the assignment threshold), API keys limited to domains, and a GIN index
    on the memories' domains array so a domain filter (``domains && $1``) is an index scan."""
    cur.execute(
        """
        ALTER TABLE api_keys ADD COLUMN domains jsonb;

        CREATE TABLE domains (
            pos bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
            id text PRIMARY KEY,
            name text NOT NULL UNIQUE,
            centroid vector,
            member_count integer NOT NULL DEFAULT 0,
            top_terms jsonb NOT NULL DEFAULT '[]',
            suggested_name text NOT NULL,
            origin text NOT NULL,
            created_at timestamptz NOT NULL,
            updated_at timestamptz NOT NULL,
            renamed_at timestamptz
        );

        CREATE TABLE domain_proposals (
            pos bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
            id text PRIMARY KEY,
            kind text NOT NULL,
            status text NOT NULL,
            summary text NOT NULL,
            domain_ids jsonb NOT NULL DEFAULT '[]',
            evidence jsonb NOT NULL DEFAULT '{}',
            payload jsonb NOT NULL DEFAULT '{}',
            created_at timestamptz NOT NULL,
            decided_at timestamptz,
            decided_by text
        );
        CREATE INDEX domain_proposals_status ON domain_proposals (status, created_at);

        CREATE TABLE domain_settings (
            pos bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
            key text PRIMARY KEY,
            value jsonb NOT NULL,
            updated_at timestamptz NOT NULL
        );

        CREATE INDEX memories_domains ON memories USING gin (domains);
        """
    )


# Versions are assigned per capability; a gap is a migration another part of memoryd owns.
MIGRATIONS: list[tuple[int, str, Callable[[psycopg.Cursor[Any]], None]]] = [
    (1, "initial", m001_initial),
    (2, "graph_intentions_keys", m002_graph_intentions_keys),
    (3, "vectors_inline", m003_vectors_inline),
    (4, "ledger", m004_ledger),
    (5, "keywords_inline", m005_keywords_inline),
    (7, "knowledge_graphs", m007_knowledge_graphs),
    (8, "tasks_waits", m008_tasks_waits),
    (9, "domains", m009_domains),
]
LATEST_VERSION = MIGRATIONS[-1][0]


def applied_version(conn: psycopg.Connection[Any], schema: str) -> int:
    """The highest applied migration in ``schema`` (0 when the schema is new)."""
    row = conn.execute(
        "SELECT to_regclass(%s)", (f'"{schema}".schema_migrations',)
    ).fetchone()
    if row is None or row[0] is None:
        return 0
    (version,) = conn.execute(
        sql.SQL("SELECT COALESCE(MAX(version), 0) FROM {}.schema_migrations").format(
            sql.Identifier(schema)
        )
    ).fetchone()  # type: ignore[misc]
    return int(version)


def _check_ours(conn: psycopg.Connection[Any], schema: str) -> None:
    tables = {
        r[0]
        for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,)
        )
    }
    if not tables or tables == {"schema_migrations"}:
        return
    if "meta" not in tables:
        raise NotAMemorydStore(f"PostgreSQL schema {schema!r} holds tables that are not memoryd's")
    row = conn.execute(
        sql.SQL("SELECT value FROM {}.meta WHERE key = 'app'").format(sql.Identifier(schema))
    ).fetchone()
    if row is None or row[0] != APP_MARKER:
        raise NotAMemorydStore(f"PostgreSQL schema {schema!r} is not a memoryd store")


def migrate(conn: psycopg.Connection[Any], schema: str) -> int:
    """Create or upgrade the store in ``schema``; safe to run from many processes at once.

    ``conn`` must be in autocommit mode. Returns the schema version now applied.
    """
    conn.execute("SELECT pg_advisory_lock(%s)", (lock_key(schema, "migrate"),))
    try:
        ext_schema = ensure_vector_extension(conn)
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
        _check_ours(conn, schema)
        conn.execute(
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {}.schema_migrations ("
                "version integer PRIMARY KEY, name text NOT NULL, "
                "applied_at timestamptz NOT NULL DEFAULT now())"
            ).format(sql.Identifier(schema))
        )
        current = applied_version(conn, schema)
        if current > LATEST_VERSION:
            raise SchemaTooNew(
                f"PostgreSQL schema {schema!r} has memoryd schema version {current}; this "
                f"memoryd knows up to {LATEST_VERSION}. Upgrade memoryd."
            )
        applied = {v for (v,) in conn.execute(
            sql.SQL("SELECT version FROM {}.schema_migrations").format(sql.Identifier(schema)))}
        for version, name, apply in MIGRATIONS:
            # By set, not by the highest number: a migration numbered below one already
            # applied (written alongside it) still runs once. The advisory lock serialises us.
            if version in applied:
                continue
            with conn.transaction(), conn.cursor() as cur:
                cur.execute(
                    sql.SQL("SET LOCAL search_path TO {}, {}").format(
                        sql.Identifier(schema), sql.Identifier(ext_schema)
                    )
                )
                apply(cur)
                cur.execute(
                    sql.SQL("INSERT INTO {}.schema_migrations (version, name) VALUES (%s, %s)").format(
                        sql.Identifier(schema)
                    ),
                    (version, name),
                )
        return applied_version(conn, schema)
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (lock_key(schema, "migrate"),))
