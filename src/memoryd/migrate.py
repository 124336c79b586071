"""Copy a whole memory from one store to another (SQLite <-> PostgreSQL), and check it.

``copy_store(source, target)`` moves every table of :mod:`memoryd.store.rows` —
memories with their vectors and scheduling state, history, edges, intentions, API
keys, session access marks, watermarks, reports and the audit ledger — through the
store contract's ``export_rows`` / ``import_rows``, keeping ids, timestamps and
change sequence numbers. Nothing is re-embedded, and the ledger verifies on the target.

Resumable and idempotent: after each batch the target remembers how far it got
(a watermark ``migrate:<source>:<table>``), and a row whose key already exists
in the target is skipped, so an interrupted copy re-run continues where it
stopped and a finished copy re-run copies nothing. The target must be empty, or
be the target of an earlier copy from the same source.

Verification reads both stores again and compares, per table, the row count and
an order-independent checksum of the rows' canonical form. The keyword index (term
statistics and totals) is not copied: the target builds it from the memories it imports,
in the same transactions, and verification compares it with the source's too.

Stop writers to the source while copying: rows changed after they were copied are
not copied again, and verification then reports the table as different.

Text with NUL (U+0000), which memoryd refuses today but older versions stored in SQLite, is
copied with each NUL replaced by U+FFFD (PostgreSQL cannot store NUL), so a row the source
holds never stops a copy; the report counts the rows changed so (``cleaned``), and
verification compares the source as copied.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Callable

from memoryd.config import mask_url_password
from memoryd.errors import StoreError
from memoryd.store.base import Store
from memoryd.store.rows import DERIVED_TABLES, TABLES, Checksum

Progress = Callable[[str, int, "int | None"], None]  # (table, rows just copied, total or None)
MARKER_PREFIX = "migrate:"


@dataclass
class TableCheck:
    """Counts and checksums of one table on both sides."""

    table: str
    source_rows: int
    target_rows: int
    source_checksum: str
    target_checksum: str

    @property
    def ok(self) -> bool:
        return (self.source_rows, self.source_checksum) == (self.target_rows, self.target_checksum)


@dataclass
class MigrationReport:
    """What a copy did: rows inserted per table, and the verification if it ran."""

    source: str
    target: str
    copied: dict[str, int] = field(default_factory=dict)
    cleaned: dict[str, int] = field(default_factory=dict)
    checks: list[TableCheck] = field(default_factory=list)
    resumed: bool = False

    @property
    def verified(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)


def source_key(store: Store) -> str:
    """A short, stable name of a store (its URL without password), for resume marks."""
    return hashlib.sha256(mask_url_password(store.url).encode()).hexdigest()[:12]


def _visible(table: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # A copy's own resume marks are bookkeeping of the target, not data to move or compare.
    if table != "watermarks":
        return rows
    return [r for r in rows if not str(r.get("key", "")).startswith(MARKER_PREFIX)]


NUL_REPLACEMENT = "\ufffd"


def without_nul(value: Any) -> Any:
    """``value`` with NUL replaced by U+FFFD in every string (mapping keys included)."""
    if isinstance(value, str):
        return value.replace("\x00", NUL_REPLACEMENT) if "\x00" in value else value
    if isinstance(value, dict):
        return {without_nul(k): without_nul(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_nul(v) for v in value]
    return value


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


def cleaned_rows(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """The rows as a store that refuses NUL can hold them, and how many had to change."""
    out, changed = [], 0
    for row in rows:
        if _has_nul(row):
            row, changed = without_nul(row), changed + 1
        out.append(row)
    return out, changed


def copy_store(
    source: Store,
    target: Store,
    *,
    batch_size: int = 1000,
    verify: bool = True,
    progress: Progress | None = None,
) -> MigrationReport:
    """Copy every row of ``source`` into ``target``; see the module docstring."""
    src, dst, marks = source.transfer, target.transfer, target.bookkeeping
    key = source_key(source)
    marker = f"{MARKER_PREFIX}{key}"
    report = MigrationReport(mask_url_password(source.url), mask_url_password(target.url))
    report.resumed = marks.get_watermark(marker) > 0
    if not report.resumed and (target.count() > 0 or target.stats().last_seq > 0):
        raise StoreError(
            f"the target {report.target} already holds memories; memoryd migrate copies into an "
            "empty store (or resumes an interrupted copy from the same source)"
        )
    _match_models(source, target)
    marks.set_watermark(marker, 1)
    totals = {"memories": source.count(), "history": None}
    for table in TABLES:
        cursor_key = f"{marker}:{table}"
        after = marks.get_watermark(cursor_key)
        copied = cleaned = 0
        while True:
            rows = src.export_rows(table, after=after, limit=batch_size)
            if not rows:
                break
            clean, changed = cleaned_rows(_visible(table, rows))
            copied += dst.import_rows(table, clean)
            cleaned += changed
            after = rows[-1]["_pos"]
            marks.set_watermark(cursor_key, after)
            if progress:
                progress(table, len(rows), totals.get(table))
        report.copied[table] = copied
        if cleaned:
            report.cleaned[table] = cleaned
    dst.finish_import()
    marks.set_watermark(marker, 2)
    if verify:
        report.checks = verify_stores(source, target, batch_size=batch_size, progress=progress)
    return report


def _match_models(source: Store, target: Store) -> None:
    model, dims = source.embedding_model, source.embedding_dims
    if model is None or dims is None:
        return
    if target.embedding_model is None:
        target.set_embedding_model(model, dims)
    elif (target.embedding_model, target.embedding_dims) != (model, dims):
        raise StoreError(
            f"the source's vectors were made by {model!r} ({dims} dims) but the target's by "
            f"{target.embedding_model!r} ({target.embedding_dims} dims); copy into an empty store"
        )


def table_checksum(store: Store, table: str, *, batch_size: int = 1000,
                   progress: Progress | None = None) -> Checksum:
    """Count and checksum of one table of a store."""
    check = Checksum(table)
    after = 0
    while True:
        rows = store.transfer.export_rows(table, after=after, limit=batch_size)
        if not rows:
            return check
        check.add(cleaned_rows(_visible(table, rows))[0])
        after = rows[-1]["_pos"]
        if progress:
            progress(f"verify {table}", len(rows), None)


def verify_stores(source: Store, target: Store, *, batch_size: int = 1000,
                  progress: Progress | None = None) -> list[TableCheck]:
    """Compare every table of two stores by row count and checksum, the keyword index each
    built from its memories included."""
    out = []
    for table in [*TABLES, *DERIVED_TABLES]:
        a = table_checksum(source, table, batch_size=batch_size, progress=progress)
        b = table_checksum(target, table, batch_size=batch_size)
        out.append(TableCheck(table, a.count, b.count, a.hexdigest, b.hexdigest))
    return out
