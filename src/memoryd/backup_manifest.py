"""Backup manifests: what a backup held when it was written, checked before any restore.

``memoryd backup PATH`` writes ``PATH.manifest.json`` beside the backup: the file's size
and SHA-256, the row count of every table, the format and schema version and the embedding
model. :func:`verify_backup` runs before a restore replaces anything and refuses (with
:class:`BackupRejected`) a backup that

* has no manifest, or a manifest of another format or a newer version;
* is not byte for byte the file the manifest describes (size or SHA-256 differ: flipped,
  truncated or appended bytes);
* fails its own check: SQLite's ``PRAGMA integrity_check`` for an SQLite backup, a complete
  read of every gzip member and JSON line for a PostgreSQL dump (gzip's CRC catches damage
  the JSON parser would not);
* holds other row counts than the manifest says.

A file that is not a memoryd backup at all (text, another SQLite database, a directory)
is :class:`~memoryd.errors.NotAMemorydStore`, as before. Only files are read here: the live
store is not touched, so a refused restore leaves it exactly as it was.

>>> manifest = write_manifest(Path("/backups/mem-2026-05-01.db"))
>>> verify_backup(Path("/backups/mem-2026-05-01.db")).tables["memories"]
1234
"""

from __future__ import annotations

import gzip
import hashlib
import json
import sqlite3
import zlib
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from memoryd.errors import NotAMemorydStore, StoreError
from memoryd.store.sqlite.schema import APP_MARKER

MANIFEST_FORMAT = "memoryd-backup-manifest"
MANIFEST_VERSION = 1
MANIFEST_SUFFIX = ".manifest.json"
# The first line of a PostgreSQL backup (memoryd.store.postgres.transfer.DUMP_FORMAT; not
# imported, so that checking a backup needs no PostgreSQL driver).
PG_DUMP_FORMAT = "memoryd-postgres-dump"
_SQLITE_MAGIC = b"SQLite format 3\x00"
_GZIP_MAGIC = b"\x1f\x8b"
Backend = Literal["sqlite", "postgresql"]


class BackupRejected(StoreError):
    """A backup failed verification; nothing was restored."""


@dataclass(frozen=True)
class Manifest:
    """What a backup file held when it was written."""

    backend: Backend
    file: str
    size: int
    sha256: str
    tables: dict[str, int]
    schema_version: int | None
    embedding_model: str | None
    embedding_dims: int | None
    created_at: str
    memoryd_version: str = ""
    format: str = MANIFEST_FORMAT
    version: int = MANIFEST_VERSION
    extra: dict[str, Any] = field(default_factory=dict)


def manifest_path(backup: Path) -> Path:
    """Where the manifest of ``backup`` lives: ``<backup>.manifest.json`` beside it."""
    return backup.with_name(backup.name + MANIFEST_SUFFIX)


def write_manifest(backup: Path) -> Manifest:
    """Check a freshly written backup and write its manifest (replacing a stale one).

    Raises BackupRejected if the backup fails its own check (the store it was copied
    from may be damaged) and NotAMemorydStore if it is not a memoryd backup.
    """
    from memoryd import __version__  # the package imports this module while it initialises

    backup = Path(backup)
    backend = _backend_of(backup)
    contents = _inspect(backup, backend)
    size, digest = _digest(backup)
    manifest = Manifest(
        memoryd_version=__version__,
        backend=backend,
        file=backup.name,
        size=size,
        sha256=digest,
        created_at=datetime.now(timezone.utc).isoformat(),
        **contents,
    )
    target = manifest_path(backup)
    partial = target.with_name(target.name + ".partial")
    partial.write_text(json.dumps(asdict(manifest), indent=2, sort_keys=True) + "\n")
    partial.replace(target)
    return manifest


def verify_backup(backup: Path) -> Manifest:
    """The backup's manifest, once the file is shown to be exactly what it describes.

    Raises NotAMemorydStore (not a memoryd backup) or BackupRejected (no manifest, changed
    or damaged file, counts that differ), naming what is wrong.
    """
    backup = Path(backup)
    backend = _backend_of(backup)
    manifest = _read_manifest(backup, backend)
    size, digest = _digest(backup)
    if size != manifest.size or digest != manifest.sha256:
        raise BackupRejected(
            f"{backup} is not the file its manifest describes ({size} bytes, SHA-256 "
            f"{digest[:16]}…; the manifest says {manifest.size} bytes, "
            f"{manifest.sha256[:16]}…): it was changed, truncated or damaged after the backup"
        )
    contents = _inspect(backup, backend)
    if contents["tables"] != manifest.tables:
        differ = sorted(
            t for t in set(contents["tables"]) | set(manifest.tables)
            if contents["tables"].get(t) != manifest.tables.get(t)
        )
        raise BackupRejected(f"{backup}: row counts differ from its manifest in {differ}")
    return manifest


def _backend_of(path: Path) -> Backend:
    if not path.is_file():
        raise NotAMemorydStore(f"no memoryd store or backup at {path}")
    with path.open("rb") as handle:
        head = handle.read(len(_SQLITE_MAGIC))
    if head == _SQLITE_MAGIC:
        return "sqlite"
    if head.startswith(_GZIP_MAGIC):
        return "postgresql"
    raise NotAMemorydStore(f"{path} is not a memoryd store or backup (not SQLite, not a dump)")


def _read_manifest(backup: Path, backend: Backend) -> Manifest:
    path = manifest_path(backup)
    if not path.is_file():
        _inspect(backup, backend)  # NotAMemorydStore if it is no memoryd backup at all
        raise BackupRejected(
            f"{backup} has no manifest ({path.name}), so it cannot be verified; memoryd "
            "writes one with every backup"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != MANIFEST_FORMAT:
            raise ValueError(f"format is {data.get('format')!r}")
        if int(data.get("version", 0)) > MANIFEST_VERSION:
            raise BackupRejected(f"{path} was written by a newer memoryd; upgrade memoryd")
        known = {k: data[k] for k in Manifest.__dataclass_fields__ if k in data}
        manifest = Manifest(**known)
    except BackupRejected:
        raise
    except (ValueError, TypeError, AttributeError, UnicodeDecodeError) as exc:
        raise BackupRejected(f"{path} is not a readable backup manifest ({exc})") from None
    if manifest.backend != backend:
        raise BackupRejected(f"{path} describes a {manifest.backend} backup, not {backend}")
    return manifest


def _digest(path: Path) -> tuple[int, str]:
    sha, size = hashlib.sha256(), 0
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            sha.update(chunk)
            size += len(chunk)
    return size, sha.hexdigest()


def _inspect(path: Path, backend: Backend) -> dict[str, Any]:
    """Table counts and metadata of a backup, after its own integrity check."""
    return _inspect_sqlite(path) if backend == "sqlite" else _inspect_dump(path)


def _inspect_sqlite(path: Path) -> dict[str, Any]:
    uri = f"file:{path.resolve()}?mode=ro&immutable=1"
    try:
        conn = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise BackupRejected(f"{path} cannot be opened as SQLite ({exc})") from None
    try:
        tables = [
            name
            for name, sql in conn.execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name"
            )
            if not name.startswith("sqlite_")
            and not (sql or "").upper().startswith("CREATE VIRTUAL")
        ]
        if "meta" not in tables:
            raise NotAMemorydStore(f"{path} is an SQLite file but not a memoryd store")
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("app") != APP_MARKER:
            raise NotAMemorydStore(f"{path} is an SQLite file but not a memoryd store")
        problems = [row[0] for row in conn.execute("PRAGMA integrity_check(20)")]
        if problems != ["ok"]:
            raise BackupRejected(f"{path} fails SQLite's integrity check: {'; '.join(problems)}")
        counts = {t: conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}
        (version,) = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
    except sqlite3.DatabaseError as exc:
        raise BackupRejected(f"{path} is a damaged SQLite file ({exc})") from None
    finally:
        conn.close()
    return _contents(counts, version, meta.get("embedding_model"), meta.get("embedding_dims"))


def _inspect_dump(path: Path) -> dict[str, Any]:
    counts: Counter[str] = Counter()
    try:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            header = json.loads(handle.readline() or "null")
            if not isinstance(header, dict) or header.get("format") != PG_DUMP_FORMAT:
                raise NotAMemorydStore(f"{path} is a gzip file but not a memoryd store or backup")
            for number, line in enumerate(handle, start=2):
                item = json.loads(line)
                if not isinstance(item, dict) or not isinstance(item.get("row"), dict):
                    raise ValueError(f"line {number} is not a table row")
                counts[str(item.get("table"))] += 1
    except NotAMemorydStore:
        raise
    except (OSError, EOFError, zlib.error, ValueError, UnicodeDecodeError) as exc:
        raise BackupRejected(f"{path} is a damaged or incomplete dump ({exc})") from None
    return _contents(
        dict(sorted(counts.items())),
        header.get("schema_version"),
        header.get("embedding_model"),
        header.get("embedding_dims"),
    )


def _contents(
    counts: dict[str, int], version: Any, model: str | None, dims: Any
) -> dict[str, Any]:
    return {
        "tables": counts,
        "schema_version": int(version) if version is not None else None,
        "embedding_model": model,
        "embedding_dims": int(dims) if dims not in (None, "") else None,
    }
