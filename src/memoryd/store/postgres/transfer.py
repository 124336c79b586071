"""Logical rows of the PostgreSQL store: export/import for migration, backup and restore.

A mixin of PostgresStore. Rows follow :mod:`memoryd.store.rows`; a backup is those
rows, from one snapshot, as gzip-compressed JSON lines, so it needs no ``pg_dump``.
"""

from __future__ import annotations

import gzip
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

import psycopg
from psycopg.types.json import Jsonb

from memoryd.errors import ModelMismatch, StoreError
from memoryd.store.postgres import migrations as migrations
from memoryd.store.postgres import vectors as vector_sql
from memoryd.store.change import Actor, Recorded
from memoryd.store.postgres.codec import dumps, to_vector, utc
from memoryd.store.postgres.database import PostgresDatabase
from memoryd.store.rows import (
    JSON_FIELDS,
    TABLES,
    VECTOR_FIELDS,
    check_importable,
    check_table,
    from_json,
    to_json,
)
from memoryd.store.terms import TermChanges, apply_changes, clear_index

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





def _new_memories(cur: psycopg.Cursor[Any], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of a memories batch whose id the store does not hold yet (first of each id)."""
    ids = [r["id"] for r in rows]
    held = {r[0] for r in cur.execute("SELECT id FROM memories WHERE id = ANY(%s)", (ids,))}
    fresh: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row["id"] not in held:
            fresh.setdefault(row["id"], row)
    return list(fresh.values())


def _index_memories(cur: psycopg.Cursor[Any], rows: list[dict[str, Any]]) -> None:
    """Add just-imported memories to the keyword index (same transaction)."""
    rowids = dict(cur.execute("SELECT id, rowid FROM memories WHERE id = ANY(%s)",
                              ([r["id"] for r in rows],)).fetchall())
    keywords = TermChanges()
    for row in rows:
        keywords.add(rowids[row["id"]], row["content"], row.get("summary"), row.get("tags"),
                     row.get("metadata") or {})
    apply_changes(cur, "%s", keywords)


class PostgresRows:
    """``export_rows`` / ``import_rows``, ``backup`` / ``restore`` and bulk index builds."""

    db: PostgresDatabase

    # --- logical rows: migration and backup --------------------------------
    def export_rows(self, table: str, *, after: int = 0, limit: int = 1000) -> list[dict[str, Any]]:
        """Rows of a logical table (see :mod:`memoryd.store.rows`) after position ``after``."""
        with self.db.read() as conn:
            return self._export(conn, table, after, limit)

    def _export(
        self, conn: psycopg.Connection[Any], table: str, after: int, limit: int
    ) -> list[dict[str, Any]]:
        fields = check_table(table)
        pos = _POS[table]
        if table == "memories":
            select = ", ".join(f"m.{c}" for c in fields[:-1]) + ", m.embedding"
            statement = f"SELECT m.{pos}, {select} FROM memories m"
        else:
            statement = f"SELECT {pos}, {', '.join(fields)} FROM {table} m"
        rows = conn.execute(
            statement + f" WHERE m.{pos} > %s ORDER BY m.{pos} LIMIT %s", (after, limit)
        ).fetchall()
        out = []
        for row in rows:
            data = {"_pos": int(row[0])}
            for field, value in zip(fields, row[1:]):
                if isinstance(value, datetime):
                    value = utc(value)
                elif field in VECTOR_FIELDS and value is not None:
                    value = to_vector(value)
                data[field] = value
            out.append(data)
        return out

    def import_rows(self, table: str, rows: list[dict[str, Any]]) -> int:
        """Insert rows exactly as given, skipping those whose key exists; one transaction.

        No history is recorded: history rows are themselves a table to import.
        Returns how many rows were inserted.
        """
        check_importable(table)
        if not rows:
            return 0
        try:
            with self.db.write() as cur:
                return self._import(cur, table, rows)
        except psycopg.Error as exc:
            raise StoreError(f"could not import {table} rows: {exc}") from exc

    def _import(self, cur: psycopg.Cursor[Any], table: str, rows: list[dict[str, Any]]) -> int:
        fields = TABLES[table]
        json_fields = JSON_FIELDS[table]
        columns = ["embedding" if f == "vector" else f for f in fields]
        if table == "memories" and any(r.get("vector") is not None for r in rows):
            if self.db.meta("embedding_model") is None:
                raise StoreError("set_embedding_model before importing vectors")

        arrays = ("tags", "domains") if table == "memories" else ()  # text[], not jsonb

        def value(field: str, v: Any) -> Any:
            if v is None:
                return None
            if field in json_fields and field not in arrays:
                return Jsonb(v, dumps=dumps)
            if field in VECTOR_FIELDS:
                return to_vector(v)
            return v

        statement = (
            f"INSERT INTO {table} ({', '.join(columns)}) "
            f"VALUES ({', '.join(['%s'] * len(columns))}) ON CONFLICT DO NOTHING"
        )
        fresh = _new_memories(cur, rows) if table == "memories" else []
        inserted = 0
        cur.executemany(
            statement, [[value(f, r.get(f)) for f in fields] for r in rows], returning=False
        )
        inserted = cur.rowcount if cur.rowcount >= 0 else len(rows)
        if fresh:
            _index_memories(cur, fresh)
        if table == "history":
            cur.execute(
                "SELECT setval(%s, (SELECT coalesce(max(seq), 0) FROM history) + 1, false)",
                (self.db.history_seq,),
            )
        elif table == "reports":
            cur.execute(
                "SELECT setval(%s, (SELECT coalesce(max(id), 0) FROM reports) + 1, false)",
                (self.db.reports_seq,),
            )
        elif table == "task_messages":
            cur.execute(
                "SELECT setval(pg_get_serial_sequence('task_messages', 'id'), "
                "(SELECT coalesce(max(id), 0) FROM task_messages) + 1, false)"
            )
        return inserted

    def finish_import(self) -> None:
        """Refresh the planner's statistics after a bulk import."""
        with self.db.read() as conn:
            conn.execute("ANALYZE memories")

    def backup(self, path: Path) -> None:
        """Write every row, from one snapshot, as gzip-compressed JSON lines to ``path``."""
        path = Path(path)
        if path.exists():
            raise StoreError(f"backup target {path} already exists")
        path.parent.mkdir(parents=True, exist_ok=True)
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
            rows = self._export(conn, table, after, 2000)
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
        try:
            handle = gzip.open(path, "rt", encoding="utf-8")
            first = handle.readline()
        except (OSError, EOFError) as exc:
            raise StoreError(
                f"{path} is not a memoryd PostgreSQL backup (a gzip JSON-lines file written by "
                "`memoryd backup`); to load an SQLite store use `memoryd migrate`"
            ) from exc
        with handle:
            try:
                header = json.loads(first)
            except ValueError:
                header = None
            if not isinstance(header, dict) or header.get("format") != DUMP_FORMAT:
                raise StoreError(f"{path} is not a memoryd PostgreSQL backup")
            if int(header.get("version", 0)) > DUMP_VERSION:
                raise StoreError(f"{path} was written by a newer memoryd; upgrade memoryd")
            backup_model = header.get("embedding_model")
            if expect_model and backup_model and backup_model != expect_model:
                raise ModelMismatch(backup_model, expect_model)
            try:
                with self.db.write() as cur:
                    (high,) = cur.execute("SELECT coalesce(max(seq), 0) FROM history").fetchone()
                    self._replace(cur, header, handle)
                    # Sequence numbers never go backwards (readers follow changes by seq).
                    cur.execute(
                        "SELECT setval(%s, greatest(%s, (SELECT coalesce(max(seq), 0) FROM history)) + 1, false)",
                        (self.db.history_seq, high),
                    )
                    migrations.start_ledger(cur)  # a backup from before the ledger existed
                    self.db.record(cur, [Recorded("", "restore", Actor("restore"),
                                                  {"from": str(path)})])
            except psycopg.Error as exc:
                raise StoreError(f"could not restore {path}: {exc}") from exc

    def _replace(self, cur: psycopg.Cursor[Any], header: dict[str, Any], lines: IO[str]) -> None:
        """Empty every table and load the rows of a backup (inside the caller's transaction)."""
        cur.execute(
            "TRUNCATE memories, pending_vectors, history, edges, intentions, api_keys, "
            "session_access, watermarks, reports, ledger, tasks, task_messages, "
            "wait_jobs, graph_files, domains, domain_proposals, domain_settings, "
            "memory_terms, term_stats"
        )
        clear_index(cur)
        cur.execute("DELETE FROM meta WHERE key IN ('embedding_model', 'embedding_dims')")
        if header.get("embedding_model") and header.get("embedding_dims"):
            vector_sql.set_model(cur, self.db.schema, header["embedding_model"],
                                 int(header["embedding_dims"]))
        batch: list[dict[str, Any]] = []
        current = None
        for line in lines:
            item = json.loads(line)
            if item["table"] != current or len(batch) >= 1000:
                if batch:
                    self._import(cur, current, batch)  # type: ignore[arg-type]
                batch, current = [], item["table"]
            batch.append(from_json(current, item["row"]))
        if batch:
            self._import(cur, current, batch)  # type: ignore[arg-type]
