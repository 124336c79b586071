"""``store.transfer`` of the PostgreSQL store: paging through its tables, importing memories
(the keyword index with them), and backup and restore as gzip-compressed JSON lines of the
logical rows (:mod:`memoryd.store.rows`) from one snapshot, so a backup needs no
``pg_dump``. For large production databases use PostgreSQL's own tools (``pg_dump``, base
backups with WAL archiving) instead.
"""

from __future__ import annotations

import gzip
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

import psycopg

from memoryd.errors import ModelMismatch, StoreError
from memoryd.store.change import Actor, Recorded
from memoryd.store.postgres import migrations
from memoryd.store.postgres import vectors as vector_sql
from memoryd.store.postgres.codec import dumps
from memoryd.store.postgres.database import PostgresDatabase
from memoryd.store.rows import TABLES, from_json, to_json
from memoryd.store.terms import TermChanges, apply_changes, clear_index
from memoryd.store.transfer import Transfer

DUMP_FORMAT = "memoryd-postgres-dump"
DUMP_VERSION = 1
# The column that orders each logical table for export (and resuming a copy).
_POS = {
    "memories": "rowid", "history": "seq", "edges": "pos", "intentions": "pos",
    "api_keys": "pos", "session_access": "pos", "watermarks": "pos", "reports": "id", "ledger": "seq",
    "tasks": "pos", "task_messages": "id", "wait_jobs": "pos", "graph_files": "pos",
    "domains": "pos", "domain_proposals": "pos", "domain_settings": "pos",
    "term_stats": "pos", "term_totals": "id",
}
# Tables whose ids a sequence hands out, by that column (the sequence is set past imported ids).
_SERIAL = {"history": "seq", "reports": "id", "task_messages": "id"}
_TRUNCATE = ("TRUNCATE memories, pending_vectors, history, edges, intentions, api_keys, "
             "session_access, watermarks, reports, ledger, tasks, task_messages, wait_jobs, "
             "graph_files, domains, domain_proposals, domain_settings, memory_terms, term_stats")


class PostgresTransfer(Transfer):
    """Export, import, backup and restore of a PostgreSQL store."""

    db: PostgresDatabase

    def _select_page(self, conn: psycopg.Connection[Any], table: str, fields: tuple[str, ...],
                     after: int, limit: int) -> list[tuple[Any, ...]]:
        pos = _POS[table]
        if table == "memories":
            select = ", ".join(f"m.{c}" for c in fields[:-1]) + ", m.embedding"
        else:
            select = ", ".join(fields)
        return conn.execute(f"SELECT m.{pos}, {select} FROM {table} m WHERE m.{pos} > %s "
                            f"ORDER BY m.{pos} LIMIT %s", (after, limit)).fetchall()

    def _imported(self, cur: psycopg.Cursor[Any], table: str) -> None:
        column = _SERIAL.get(table)
        if column:
            cur.execute(f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'), "
                        f"(SELECT coalesce(max({column}), 0) FROM {table}) + 1, false)")

    def _import_memories(self, cur: psycopg.Cursor[Any], rows: list[dict[str, Any]]) -> int:
        vectors = any(r.get("vector") is not None for r in rows)
        if vectors and self.db.meta("embedding_model") is None:
            raise StoreError("set_embedding_model before importing vectors")
        fields = TABLES["memories"]
        columns = ["embedding" if f == "vector" else f for f in fields]
        ids = [r["id"] for r in rows]
        held = {r[0] for r in cur.execute("SELECT id FROM memories WHERE id = ANY(%s)", (ids,))}
        fresh: dict[str, dict[str, Any]] = {}
        for row in rows:
            if row["id"] not in held:
                fresh.setdefault(row["id"], row)  # the first of an id is the one inserted
        inserted = self.db.insert_many(
            cur, f"INSERT INTO memories ({', '.join(columns)}) VALUES "
                 f"({self.db.marks(len(columns))}) ON CONFLICT DO NOTHING",
            [self.db.encode_row("memories", r, fields) for r in rows])
        if fresh:
            rowids = dict(cur.execute("SELECT id, rowid FROM memories WHERE id = ANY(%s)",
                                      (list(fresh),)).fetchall())
            keywords = TermChanges()
            for row in fresh.values():
                keywords.add(rowids[row["id"]], row["content"], row.get("summary"),
                             row.get("tags"), row.get("metadata") or {})
            apply_changes(cur, "%s", keywords)
        return inserted

    def finish_import(self) -> None:
        """Refresh the planner's statistics after a bulk import."""
        with self.db.read() as conn:
            conn.execute("ANALYZE memories")

    # --- backup and restore ---------------------------------------------
    def _backup(self, path: Path) -> None:
        """Write every row, from one snapshot, as gzip-compressed JSON lines to ``path``."""
        partial_path = path.with_name(path.name + ".partial")
        try:
            with self.db.read() as conn, conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
                with gzip.open(partial_path, "wt", encoding="utf-8") as out:
                    header = {
                        "format": DUMP_FORMAT, "version": DUMP_VERSION,
                        "schema_version": self.db.schema_version,
                        "embedding_model": meta.get("embedding_model"),
                        "embedding_dims": meta.get("embedding_dims"),
                        "created_at": datetime.now(timezone.utc).isoformat(),
                    }
                    out.write(json.dumps(header) + "\n")
                    for table in TABLES:
                        self._dump_table(conn, table, out)
            partial_path.replace(path)
        finally:
            partial_path.unlink(missing_ok=True)

    def _dump_table(self, conn: psycopg.Connection[Any], table: str, out: IO[str]) -> None:
        after = 0
        while True:
            rows = self._page(conn, table, after, 2000)
            if not rows:
                return
            for row in rows:
                out.write(dumps({"table": table, "row": to_json(table, row)}) + "\n")
            after = rows[-1]["_pos"]

    def restore(self, path: Path, *, expect_model: str | None = None) -> None:
        """Replace every row with those of a backup written by :meth:`backup`.

        A backup whose vectors came from a model other than ``expect_model`` is
        refused before anything is touched.
        """
        path = Path(path)
        handle, header = _open_backup(path)
        with handle:
            backup_model = header.get("embedding_model")
            if expect_model and backup_model and backup_model != expect_model:
                raise ModelMismatch(backup_model, expect_model)
            try:
                with self.db.write() as cur:
                    (high,) = cur.execute("SELECT coalesce(max(seq), 0) FROM history").fetchone()
                    self._replace(cur, header, handle)
                    # Sequence numbers never go backwards (readers follow changes by seq).
                    cur.execute("SELECT setval(%s, greatest(%s, (SELECT coalesce(max(seq), 0) "
                                "FROM history)) + 1, false)", (self.db.history_seq, high))
                    migrations.start_ledger(cur)  # a backup from before the ledger existed
                    self.db.record(cur, [Recorded("", "restore", Actor("restore"),
                                                  {"from": str(path)})])
            except psycopg.Error as exc:
                raise StoreError(f"could not restore {path}: {exc}") from exc

    def _replace(self, cur: psycopg.Cursor[Any], header: dict[str, Any], lines: IO[str]) -> None:
        """Empty every table and load the rows of a backup (inside the caller's transaction)."""
        cur.execute(_TRUNCATE)
        clear_index(cur)
        cur.execute("DELETE FROM meta WHERE key IN ('embedding_model', 'embedding_dims')")
        if header.get("embedding_model") and header.get("embedding_dims"):
            vector_sql.set_model(cur, self.db.schema, header["embedding_model"],
                                 int(header["embedding_dims"]))
        batch: list[dict[str, Any]] = []
        current = ""
        for line in lines:
            item = json.loads(line)
            if item["table"] != current or len(batch) >= 1000:
                self._load(cur, current, batch)
                batch, current = [], item["table"]
            batch.append(from_json(current, item["row"]))
        self._load(cur, current, batch)

    def _load(self, cur: psycopg.Cursor[Any], table: str, rows: list[dict[str, Any]]) -> None:
        if rows:
            (self._import_memories(cur, rows) if table == "memories"
             else self._import(cur, table, rows))


def _open_backup(path: Path) -> tuple[IO[str], dict[str, Any]]:
    """The backup's lines after its header, and the header; StoreError if it is none."""
    try:
        handle = gzip.open(path, "rt", encoding="utf-8")
        first = handle.readline()
    except (OSError, EOFError) as exc:
        raise StoreError(
            f"{path} is not a memoryd PostgreSQL backup (a gzip JSON-lines file written by "
            "`memoryd backup`); to load an SQLite store use `memoryd migrate`"
        ) from exc
    try:
        header = json.loads(first)
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("format") != DUMP_FORMAT:
        handle.close()
        raise StoreError(f"{path} is not a memoryd PostgreSQL backup")
    if int(header.get("version", 0)) > DUMP_VERSION:
        handle.close()
        raise StoreError(f"{path} was written by a newer memoryd; upgrade memoryd")
    return handle, header
