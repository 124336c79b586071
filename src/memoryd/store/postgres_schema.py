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

The vector column starts without a dimension; :func:`set_vector_dims` fixes it
(``vector(384)`` for all-MiniLM-L6-v2) and builds the HNSW index with cosine ops
when the store learns its embedding model.
"""

from __future__ import annotations

import zlib
from typing import Any, Callable, Iterator

import psycopg
from psycopg import sql

from memoryd import ledger
from memoryd.store import terms
from memoryd.errors import NotAMemorydStore, SchemaTooNew, StoreError

APP_MARKER = "memoryd"
DEFAULT_SCHEMA = "memoryd"
# HNSW build parameters (pgvector's defaults are m=16, ef_construction=64).
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64


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


def m006_keyword_terms(cur: psycopg.Cursor[Any]) -> None:
    """memoryd's own keyword index (memoryd.store.terms), built from every memory's text:
    ranking then no longer uses ``ts_rank``, and matches SQLite's exactly.

    One row per distinct term of a memory, with its count and the memory's length (so that
    scoring reads one table), the document frequency of each term, and the corpus totals.
    """
    cur.execute(
        """
        CREATE TABLE memory_terms (
            term text COLLATE "C" NOT NULL,
            memory_rowid bigint NOT NULL REFERENCES memories(rowid) ON DELETE CASCADE,
            tf integer NOT NULL,
            length integer NOT NULL,
            PRIMARY KEY (term, memory_rowid)
        );
        CREATE INDEX memory_terms_memory ON memory_terms (memory_rowid);
        CREATE TABLE term_stats (
            pos bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
            term text COLLATE "C" PRIMARY KEY,
            df integer NOT NULL
        );
        CREATE TABLE term_totals (
            id integer PRIMARY KEY CHECK (id = 1),
            documents bigint NOT NULL,
            total_terms bigint NOT NULL
        );
        INSERT INTO term_totals (id, documents, total_terms) VALUES (1, 0, 0);
        ALTER TABLE memories ADD COLUMN term_count integer NOT NULL DEFAULT 0;
        """
    )
    rebuild_keyword_index(cur)


def rebuild_keyword_index(cur: psycopg.Cursor[Any]) -> int:
    """Index every memory's text anew (inside the caller's transaction)."""
    cur.execute("INSERT INTO meta (key, value) VALUES ('keyword_tokenizer', %s) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (terms.TOKENIZER_ID,))

    def batches() -> Iterator[list[tuple[int, str, str | None, list[str]]]]:
        last = 0
        while True:
            rows = cur.execute("SELECT rowid, content, summary, tags FROM memories "
                               "WHERE rowid > %s ORDER BY rowid LIMIT 1000", (last,)).fetchall()
            if not rows:
                return
            yield [(r[0], r[1], r[2], list(r[3] or [])) for r in rows]
            last = rows[-1][0]

    return terms.rebuild_index(cur, "%s", batches())


MIGRATIONS: list[tuple[int, str, Callable[[psycopg.Cursor[Any]], None]]] = [
    (1, "initial", m001_initial),
    (2, "graph_intentions_keys", m002_graph_intentions_keys),
    (3, "vectors_inline", m003_vectors_inline),
    (4, "ledger", m004_ledger),
    (5, "keywords_inline", m005_keywords_inline),
    (6, "keyword_terms", m006_keyword_terms),
]
LATEST_VERSION = MIGRATIONS[-1][0]


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
        for version, name, apply in MIGRATIONS:
            if version <= current:
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
