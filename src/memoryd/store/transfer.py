"""``store.transfer``: a store's rows leaving and entering it whole. Export and import of the
logical tables (:mod:`memoryd.store.rows`), which ``memoryd migrate`` copies between any two
stores, and backup and restore of the whole store while it stays online.

Written once here: which tables may be exported and imported, the logical rows an export
gives (decoded by the database handle), importing every table but the memories (their
keys kept, existing keys skipped), and where a backup may be written. Each backend supplies
how it pages through a table, how it imports memories (vectors and keyword index with
them), and its own backup format.
"""

from __future__ import annotations

from abc import abstractmethod
from pathlib import Path
from typing import Any

from memoryd.errors import StoreError
from memoryd.store.parts import Part
from memoryd.store.rows import TABLES, check_importable, check_table


class Transfer(Part):
    """Export, import, backup and restore."""

    # --- logical rows (migration between backends) ----------------------
    def export_rows(self, table: str, *, after: int = 0, limit: int = 1000) -> list[dict[str, Any]]:
        """Rows of a logical table after position ``after``, in order.

        Each row carries ``_pos``, the position to pass as ``after`` for the next page.
        """
        check_table(table)
        with self.db.read() as conn:
            return self._page(conn, table, after, limit)

    def _page(self, conn: Any, table: str, after: int, limit: int) -> list[dict[str, Any]]:
        fields = check_table(table)
        return [{"_pos": int(row[0]), **self.db.decode_row(table, fields, row[1:])}
                for row in self._select_page(conn, table, fields, after, limit)]

    @abstractmethod
    def _select_page(self, conn: Any, table: str, fields: tuple[str, ...], after: int,
                     limit: int) -> list[tuple[Any, ...]]:
        """Rows of ``(position, *fields)`` after position ``after``, in position order."""

    def import_rows(self, table: str, rows: list[dict[str, Any]]) -> int:
        """Insert rows exactly as exported (ids, seqs, timestamps kept), skipping rows whose
        key exists; one transaction; records no history (history and the ledger are tables
        to import themselves). Returns how many were inserted."""
        check_importable(table)
        if not rows:
            return 0
        try:
            with self.db.write() as tx:
                if table == "memories":
                    return self._import_memories(tx, rows)
                return self._import(tx, table, rows)
        except self.db.driver_errors as exc:
            raise StoreError(f"could not import {table} rows: {exc}") from exc

    def _import(self, tx: Any, table: str, rows: list[dict[str, Any]]) -> int:
        fields = TABLES[table]
        statement = (f"INSERT INTO {table} ({', '.join(fields)}) "
                     f"VALUES ({self.db.marks(len(fields))}) ON CONFLICT DO NOTHING")
        inserted = self.db.insert_many(tx, statement,
                                       [self.db.encode_row(table, r, fields) for r in rows])
        self._imported(tx, table)
        return inserted

    def _imported(self, tx: Any, table: str) -> None:
        """After rows of ``table`` came in with their own ids (a database that numbers rows
        by a sequence moves it past them)."""

    @abstractmethod
    def _import_memories(self, tx: Any, rows: list[dict[str, Any]]) -> int:
        """Insert memories (with their vectors, tags and keyword index) not held yet."""

    @abstractmethod
    def finish_import(self) -> None:
        """Bring indexes up to date after import_rows (e.g. rebuild the vector index)."""

    # --- backup and restore ---------------------------------------------
    def backup(self, path: Path) -> None:
        """Write a consistent copy of the whole store to ``path`` while it stays online."""
        path = Path(path)
        if path.exists():
            raise StoreError(f"backup target {path} already exists")
        path.parent.mkdir(parents=True, exist_ok=True)
        self._backup(path)

    @abstractmethod
    def _backup(self, path: Path) -> None:
        """Write the backup to ``path`` (a new file in an existing folder)."""

    @abstractmethod
    def restore(self, path: Path, *, expect_model: str | None = None) -> None:
        """Replace the store's contents with a backup made by :meth:`backup`.

        Raises ModelMismatch, before changing anything, if the backup's vectors were
        made by a model other than ``expect_model``. The change sequence keeps counting
        from where this store was, and the restore is recorded.
        """
