"""The migrations of the SQLite store, one function each, run in order by
:func:`memoryd.store.sqlite.schema.migrate`, each inside one transaction. A migration never
changes once released: a later one changes its work.
"""

from __future__ import annotations

import json
import sqlite3

from memoryd import ledger
from memoryd.store import terms

#: ``meta.app`` of every memoryd store.
APP_MARKER = "memoryd"


def run_script(conn: sqlite3.Connection, script: str) -> None:
    """Run several statements inside the caller's transaction.

    ``executescript`` would commit first, breaking the one-transaction-per-migration rule.
    """
    statement = ""
    for line in script.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            conn.execute(statement)
            statement = ""
    if statement.strip():
        raise ValueError(f"incomplete SQL statement: {statement.strip()[:60]}")


def m001_initial(conn: sqlite3.Connection) -> None:
    """Memories, their vectors, the FTS5 keyword index, tags and the change history."""
    run_script(
        conn,
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

        CREATE TABLE memories (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            content TEXT NOT NULL,
            summary TEXT,
            node_type TEXT NOT NULL,
            category TEXT,
            subcategory TEXT,
            tags TEXT NOT NULL DEFAULT '[]',
            source TEXT,
            agent_id TEXT,
            session_id TEXT,
            scope TEXT NOT NULL DEFAULT 'user',
            domains TEXT NOT NULL DEFAULT '[]',
            domain_scores TEXT NOT NULL DEFAULT '{}',
            importance REAL NOT NULL DEFAULT 0.5,
            severity TEXT,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            valid_from REAL,
            valid_until REAL,
            superseded_by TEXT,
            tier TEXT NOT NULL DEFAULT 'hot',
            embedding_model TEXT,
            metadata TEXT NOT NULL DEFAULT '{}',
            stability REAL NOT NULL DEFAULT 1.0,
            difficulty REAL NOT NULL DEFAULT 5.0,
            reps INTEGER NOT NULL DEFAULT 0,
            lapses INTEGER NOT NULL DEFAULT 0,
            last_review REAL,
            storage_strength REAL NOT NULL DEFAULT 1.0,
            retrieval_strength REAL NOT NULL DEFAULT 1.0,
            access_count INTEGER NOT NULL DEFAULT 0,
            last_accessed REAL,
            seq INTEGER NOT NULL
        );
        CREATE INDEX idx_memories_created ON memories (created_at);
        CREATE INDEX idx_memories_type ON memories (node_type);
        CREATE INDEX idx_memories_scope ON memories (scope);
        CREATE INDEX idx_memories_agent ON memories (agent_id);
        CREATE INDEX idx_memories_session ON memories (session_id);
        CREATE INDEX idx_memories_category ON memories (category);
        CREATE INDEX idx_memories_tier ON memories (tier);

        CREATE TABLE memory_tags (
            memory_rowid INTEGER NOT NULL REFERENCES memories(rowid) ON DELETE CASCADE,
            tag TEXT NOT NULL,
            PRIMARY KEY (tag, memory_rowid)
        ) WITHOUT ROWID;
        CREATE INDEX idx_memory_tags_memory ON memory_tags (memory_rowid);

        CREATE TABLE memory_vectors (
            memory_rowid INTEGER PRIMARY KEY REFERENCES memories(rowid) ON DELETE CASCADE,
            model TEXT NOT NULL,
            dims INTEGER NOT NULL,
            vector BLOB NOT NULL,
            seq INTEGER NOT NULL
        );
        CREATE INDEX idx_memory_vectors_seq ON memory_vectors (seq);

        CREATE VIRTUAL TABLE memories_fts USING fts5(
            content, summary, tags,
            content='memories', content_rowid='rowid',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
            INSERT INTO memories_fts (rowid, content, summary, tags)
            VALUES (new.rowid, new.content, new.summary, new.tags);
        END;
        CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
            INSERT INTO memories_fts (memories_fts, rowid, content, summary, tags)
            VALUES ('delete', old.rowid, old.content, old.summary, old.tags);
        END;
        CREATE TRIGGER memories_fts_update AFTER UPDATE OF content, summary, tags ON memories
        BEGIN
            INSERT INTO memories_fts (memories_fts, rowid, content, summary, tags)
            VALUES ('delete', old.rowid, old.content, old.summary, old.tags);
            INSERT INTO memories_fts (rowid, content, summary, tags)
            VALUES (new.rowid, new.content, new.summary, new.tags);
        END;

        CREATE TABLE history (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            memory_id TEXT NOT NULL,
            operation TEXT NOT NULL,
            actor TEXT,
            agent_id TEXT,
            at REAL NOT NULL,
            details TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX idx_history_memory ON history (memory_id, seq);
        """
    )
    conn.execute("INSERT INTO meta (key, value) VALUES ('app', ?)", (APP_MARKER,))


def m002_graph_intentions_keys(conn: sqlite3.Connection) -> None:
    """Edges, intentions, API keys, per-session access marks, capture watermarks, reports."""
    run_script(
        conn,
        """
        CREATE TABLE edges (
            source_id TEXT NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            target_id TEXT NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            edge_type TEXT NOT NULL,
            weight REAL NOT NULL,
            created_at REAL NOT NULL,
            valid_from REAL,
            valid_until REAL,
            metadata TEXT NOT NULL DEFAULT '{}',
            PRIMARY KEY (source_id, target_id, edge_type)
        );
        CREATE INDEX idx_edges_target ON edges (target_id);

        CREATE TABLE intentions (
            id TEXT PRIMARY KEY,
            description TEXT NOT NULL,
            trigger TEXT NOT NULL,
            priority TEXT NOT NULL,
            status TEXT NOT NULL,
            deadline REAL,
            due_at REAL,
            snoozed_until REAL,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            agent_id TEXT,
            scope TEXT NOT NULL DEFAULT 'user',
            metadata TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX idx_intentions_status ON intentions (status, due_at);

        CREATE TABLE api_keys (
            id TEXT PRIMARY KEY,
            label TEXT NOT NULL,
            prefix TEXT NOT NULL,
            key_hash TEXT NOT NULL UNIQUE,
            scopes TEXT NOT NULL,
            memory_scope TEXT,
            agent_id TEXT,
            created_at REAL NOT NULL,
            last_used REAL,
            revoked_at REAL
        );

        CREATE TABLE session_access (
            session_id TEXT NOT NULL,
            memory_id TEXT NOT NULL,
            at REAL NOT NULL,
            PRIMARY KEY (session_id, memory_id)
        ) WITHOUT ROWID;

        CREATE TABLE watermarks (
            key TEXT PRIMARY KEY,
            value INTEGER NOT NULL,
            updated_at REAL NOT NULL
        );

        CREATE TABLE reports (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            kind TEXT NOT NULL,
            at REAL NOT NULL,
            body TEXT NOT NULL
        );
        """,
    )


def m003_ledger(conn: sqlite3.Connection) -> None:
    """The hash-chained audit ledger, and an index for history by time (the journal).

    A store that already holds memories starts its ledger with a baseline entry whose
    content hash covers every memory's id and content at this moment.
    """
    run_script(
        conn,
        """
        CREATE TABLE ledger (
            seq INTEGER PRIMARY KEY,
            stamp TEXT NOT NULL,
            operation TEXT NOT NULL,
            memory_id TEXT NOT NULL,
            content_sha256 TEXT,
            actor TEXT,
            agent_id TEXT,
            key_label TEXT,
            prev_hash TEXT NOT NULL,
            hash TEXT NOT NULL
        );
        CREATE INDEX idx_history_at ON history (at);
        """,
    )
    (count,) = conn.execute("SELECT COUNT(*) FROM memories").fetchone()
    if count:
        pairs = conn.execute("SELECT id, content FROM memories ORDER BY id")
        entry = ledger.seal(None, [ledger.PendingEntry(
            ledger.BASELINE_OPERATION, "", ledger.baseline_digest(pairs), actor="migration")])[0]
        conn.execute(ledger.insert_statement("?"), ledger.as_rows([entry])[0])


def m004_keyword_terms(conn: sqlite3.Connection) -> None:
    """memoryd's own keyword index (memoryd.store.terms), built from every memory's text.

    One row per distinct term of a memory, with its count and the memory's length (so that
    scoring reads one table), the document frequency of each term, and the corpus totals.
    """
    run_script(
        conn,
        """
        CREATE TABLE memory_terms (
            term TEXT NOT NULL,
            memory_rowid INTEGER NOT NULL REFERENCES memories(rowid) ON DELETE CASCADE,
            tf INTEGER NOT NULL,
            length INTEGER NOT NULL,
            PRIMARY KEY (term, memory_rowid)
        ) WITHOUT ROWID;
        CREATE INDEX idx_memory_terms_memory ON memory_terms (memory_rowid);
        CREATE TABLE term_stats (term TEXT NOT NULL UNIQUE, df INTEGER NOT NULL);
        CREATE TABLE term_totals (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            documents INTEGER NOT NULL,
            total_terms INTEGER NOT NULL
        );
        INSERT INTO term_totals (id, documents, total_terms) VALUES (1, 0, 0);
        ALTER TABLE memories ADD COLUMN term_count INTEGER NOT NULL DEFAULT 0;
        """,
    )
    rebuild_keyword_index(conn)


def rebuild_keyword_index(conn: sqlite3.Connection) -> int:
    """Index every memory's text anew (inside the caller's transaction)."""
    conn.execute("INSERT INTO meta (key, value) VALUES ('keyword_tokenizer', ?) "
                 "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (terms.TOKENIZER_ID,))

    batches = ([(r[0], r[1], r[2], json.loads(r[3] or "[]")) for r in rows]
               for rows in terms.memory_batches(conn, "?", "content, summary, tags"))
    return terms.rebuild_index(conn, "?", batches)


def m005_knowledge_graphs(conn: sqlite3.Connection) -> None:
    """Knowledge graphs: the mirrored graph files' sync state, and a partial index of the
    memories that are graph nodes (``metadata.kg``), by scope. Safe to run again (a store
    rolled back to an earlier version keeps its tables)."""
    run_script(
        conn,
        """
        CREATE TABLE IF NOT EXISTS graph_files (
            path TEXT PRIMARY KEY,
            scope TEXT NOT NULL,
            base TEXT NOT NULL DEFAULT '{}',
            signature TEXT,
            seq INTEGER NOT NULL DEFAULT 0,
            updated_at REAL NOT NULL
        );
        CREATE INDEX IF NOT EXISTS idx_graph_files_scope ON graph_files (scope, updated_at);
        CREATE INDEX IF NOT EXISTS idx_memories_graph ON memories (scope)
            WHERE json_extract(metadata, '$.kg') IS NOT NULL;
        """,
    )


def m006_tasks_waits(conn: sqlite3.Connection) -> None:
    """Task memory (tasks and their messages) and smart-wait jobs."""
    run_script(
        conn,
        """
        CREATE TABLE tasks (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            status TEXT NOT NULL,
            plan TEXT NOT NULL DEFAULT '[]',
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            agent_id TEXT,
            scope TEXT NOT NULL DEFAULT 'user',
            metadata TEXT NOT NULL DEFAULT '{}',
            memory_id TEXT
        );
        CREATE INDEX idx_tasks_status ON tasks (status, updated_at);
        CREATE INDEX idx_tasks_updated ON tasks (updated_at);

        CREATE TABLE task_messages (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            task_id TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
            role TEXT NOT NULL,
            kind TEXT NOT NULL,
            content TEXT NOT NULL,
            created_at REAL NOT NULL,
            metadata TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX idx_task_messages_task ON task_messages (task_id, id);

        CREATE TABLE wait_jobs (
            id TEXT PRIMARY KEY,
            target TEXT NOT NULL,
            criteria TEXT NOT NULL,
            timeout_s REAL NOT NULL,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            deadline REAL NOT NULL,
            resolved_at REAL,
            status TEXT NOT NULL,
            task_id TEXT,
            wake TEXT,
            owner TEXT NOT NULL DEFAULT '{}',
            runner TEXT,
            scope TEXT NOT NULL DEFAULT 'user',
            agent_id TEXT,
            result TEXT,
            last_observation TEXT,
            checks INTEGER NOT NULL DEFAULT 0,
            cursor TEXT NOT NULL DEFAULT '{}',
            wake_attempts TEXT NOT NULL DEFAULT '[]'
        );
        CREATE INDEX idx_wait_jobs_status ON wait_jobs (status, runner);
        CREATE INDEX idx_wait_jobs_task ON wait_jobs (task_id);
        CREATE INDEX idx_wait_jobs_updated ON wait_jobs (updated_at);
        """,
    )


def m007_domains(conn: sqlite3.Connection) -> None:
    """Emergent domains: the domains with their centroids, re-clustering proposals, domain
    settings (the assignment threshold), API keys limited to domains, and ``memory_domains``
    (one row per memory and domain, kept by triggers) so a domain filter is an index lookup."""
    run_script(
        conn,
        """
        ALTER TABLE api_keys ADD COLUMN domains TEXT;

        CREATE TABLE domains (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            centroid BLOB,
            member_count INTEGER NOT NULL DEFAULT 0,
            top_terms TEXT NOT NULL DEFAULT '[]',
            suggested_name TEXT NOT NULL,
            origin TEXT NOT NULL,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            renamed_at REAL
        );

        CREATE TABLE domain_proposals (
            id TEXT PRIMARY KEY,
            kind TEXT NOT NULL,
            status TEXT NOT NULL,
            summary TEXT NOT NULL,
            domain_ids TEXT NOT NULL DEFAULT '[]',
            evidence TEXT NOT NULL DEFAULT '{}',
            payload TEXT NOT NULL DEFAULT '{}',
            created_at REAL NOT NULL,
            decided_at REAL,
            decided_by TEXT
        );
        CREATE INDEX idx_domain_proposals_status ON domain_proposals (status, created_at);

        CREATE TABLE domain_settings (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL,
            updated_at REAL NOT NULL
        );

        CREATE TABLE memory_domains (
            domain TEXT NOT NULL,
            memory_rowid INTEGER NOT NULL REFERENCES memories(rowid) ON DELETE CASCADE,
            PRIMARY KEY (domain, memory_rowid)
        ) WITHOUT ROWID;
        CREATE INDEX idx_memory_domains_memory ON memory_domains (memory_rowid);
        CREATE TRIGGER memory_domains_insert AFTER INSERT ON memories BEGIN
            INSERT OR IGNORE INTO memory_domains (domain, memory_rowid)
            SELECT value, new.rowid FROM json_each(new.domains);
        END;
        CREATE TRIGGER memory_domains_update AFTER UPDATE OF domains ON memories BEGIN
            DELETE FROM memory_domains WHERE memory_rowid = old.rowid;
            INSERT OR IGNORE INTO memory_domains (domain, memory_rowid)
            SELECT value, new.rowid FROM json_each(new.domains);
        END;
        INSERT OR IGNORE INTO memory_domains (domain, memory_rowid)
        SELECT j.value, m.rowid FROM memories m, json_each(m.domains) j;
        """,
    )


def m008_speakers(conn: sqlite3.Connection) -> None:
    """Who said each memory (``memories.speaker``, see :mod:`memoryd.store.terms`), for the
    ``speaker`` search filter; filled for every memory already stored."""
    run_script(
        conn,
        """
        ALTER TABLE memories ADD COLUMN speaker TEXT;
        CREATE INDEX idx_memories_speaker ON memories (speaker) WHERE speaker IS NOT NULL;
        """,
    )
    batches = ([(r[0], r[1], json.loads(r[2] or "{}")) for r in rows]
               for rows in terms.memory_batches(conn, "?", "content, metadata"))
    terms.fill_speakers(conn, "?", batches)


def m009_instruction_topics(conn: sqlite3.Connection) -> None:
    """The topic of the standing instruction each memory states (``memories.instruction_topic``,
    see :mod:`memoryd.store.terms`), handed to the ranking with the candidates; filled for
    every memory already stored."""
    run_script(conn, "ALTER TABLE memories ADD COLUMN instruction_topic TEXT;")
    terms.fill_instruction_topics(conn, "?", terms.memory_batches(conn, "?", "content"))
