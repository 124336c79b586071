"""The audit ledger: a hash chain over every change to the store.

Each change to a memory (everything its history records) and each change to an
API key appends one entry: operation, memory id, the SHA-256 of the content as
it stands after the change, actor, agent, API key label, a timestamp, the hash
of the previous entry, and its own hash over all of these. Editing, removing or
reordering any entry breaks the chain from that point on, and
:func:`verify_chain` names the first broken link.

Purging a memory erases its content from the store and its history but leaves
its ledger entries untouched: they only ever held the content's hash.

A chain can still be cut off at its end without a trace inside the store; keep
the head hash (``memoryd ledger head``) somewhere else to detect that.

The entry format is the same on every backend (the timestamp is stored as the
text that was hashed), so a store migrated to another backend verifies there.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Any, Iterable

GENESIS_HASH = "0" * 64
# The logical columns of a ledger row, in storage order.
LEDGER_FIELDS: tuple[str, ...] = (
    "seq", "stamp", "operation", "memory_id", "content_sha256", "actor", "agent_id",
    "key_label", "prev_hash", "hash",
)
# The operation of the first entry of a store that already held memories when the
# ledger began: its content hash pins the content of every memory at that moment.
BASELINE_OPERATION = "ledger.baseline"


@dataclass(frozen=True)
class PendingEntry:
    """A change about to be appended (before it gets a position and hashes)."""

    operation: str
    memory_id: str
    content_sha256: str | None
    actor: str | None = None
    agent_id: str | None = None
    key_label: str | None = None


@dataclass(frozen=True)
class LedgerEntry:
    """One link of the chain."""

    seq: int
    stamp: str
    operation: str
    memory_id: str
    content_sha256: str | None
    actor: str | None
    agent_id: str | None
    key_label: str | None
    prev_hash: str
    hash: str

    def to_dict(self) -> dict[str, Any]:
        """The entry as a JSON-able dict."""
        return asdict(self)


@dataclass(frozen=True)
class BrokenLink:
    """Where the chain stops verifying, and why."""

    seq: int
    reason: str


@dataclass(frozen=True)
class LedgerReport:
    """The result of verifying a chain."""

    entries: int
    head_seq: int | None
    head_hash: str | None
    broken: BrokenLink | None

    @property
    def ok(self) -> bool:
        """Whether every entry verified."""
        return self.broken is None

    def to_dict(self) -> dict[str, Any]:
        """The report as a JSON-able dict."""
        return {
            "ok": self.ok,
            "entries": self.entries,
            "head_seq": self.head_seq,
            "head_hash": self.head_hash,
            "broken": asdict(self.broken) if self.broken else None,
        }


def content_digest(content: str | None) -> str | None:
    """SHA-256 (hex) of a memory's content, or None when there is no content."""
    if content is None:
        return None
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def stamp_now() -> str:
    """The current time as the ledger writes it: ISO 8601, UTC, microseconds."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def entry_hash(
    seq: int,
    stamp: str,
    operation: str,
    memory_id: str,
    content_sha256: str | None,
    actor: str | None,
    agent_id: str | None,
    key_label: str | None,
    prev_hash: str,
) -> str:
    """The hash of an entry: SHA-256 of the canonical JSON of its fields."""
    blob = json.dumps(
        [seq, stamp, operation, memory_id, content_sha256, actor, agent_id, key_label, prev_hash],
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def seal(
    head: tuple[int, str] | None, pending: list[PendingEntry], *, stamp: str | None = None
) -> list[LedgerEntry]:
    """Give pending changes their positions and hashes, chained after ``head``.

    ``head`` is the (seq, hash) of the last entry in the store, None for an empty ledger.
    The caller must hold the store's write lock from reading the head to writing these.
    """
    seq, prev = head if head is not None else (0, GENESIS_HASH)
    stamp = stamp or stamp_now()
    out = []
    for p in pending:
        seq += 1
        digest = entry_hash(seq, stamp, p.operation, p.memory_id, p.content_sha256, p.actor,
                            p.agent_id, p.key_label, prev)
        out.append(LedgerEntry(seq, stamp, p.operation, p.memory_id, p.content_sha256, p.actor,
                               p.agent_id, p.key_label, prev, digest))
        prev = digest
    return out


_COLUMNS = ", ".join(LEDGER_FIELDS)
# The newest entry's position and hash: what the next append chains onto.
HEAD_LINK_SQL = "SELECT seq, hash FROM ledger ORDER BY seq DESC LIMIT 1"
HEAD_SQL = f"SELECT {_COLUMNS} FROM ledger ORDER BY seq DESC LIMIT 1"


def page_statement(mark: str) -> str:
    """Entries after a position, oldest first, with the driver's placeholder (``?``/``%s``)."""
    return f"SELECT {_COLUMNS} FROM ledger WHERE seq > {mark} ORDER BY seq LIMIT {mark}"


def insert_statement(mark: str) -> str:
    """``INSERT INTO ledger`` with the driver's placeholder (``?`` or ``%s``)."""
    return f"INSERT INTO ledger ({_COLUMNS}) VALUES ({', '.join([mark] * len(LEDGER_FIELDS))})"


def as_rows(entries: list[LedgerEntry]) -> list[tuple[Any, ...]]:
    """Entries as row tuples in LEDGER_FIELDS order."""
    return [tuple(getattr(e, f) for f in LEDGER_FIELDS) for e in entries]


def entry_from_row(row: tuple[Any, ...] | dict[str, Any]) -> LedgerEntry:
    """A LedgerEntry from a row in LEDGER_FIELDS order (or a dict with those keys)."""
    if isinstance(row, dict):
        return LedgerEntry(**{f: row.get(f) for f in LEDGER_FIELDS})
    return LedgerEntry(*row)


def verify_chain(entries: Iterable[LedgerEntry]) -> LedgerReport:
    """Check every entry's hash and its link to the one before, in ``seq`` order.

    An edited entry fails its own hash; a removed entry leaves the next one pointing
    at a hash that is not its predecessor's; reordered entries fail both (the
    position is part of the hash). The first failure is reported.
    """
    count = 0
    prev_seq: int | None = None
    prev_hash = GENESIS_HASH
    head: LedgerEntry | None = None
    for entry in entries:
        count += 1
        expected = entry_hash(entry.seq, entry.stamp, entry.operation, entry.memory_id,
                              entry.content_sha256, entry.actor, entry.agent_id,
                              entry.key_label, entry.prev_hash)
        if entry.hash != expected:
            return _broken(count, head, entry.seq, "the entry's hash does not match its "
                           "contents (the entry was edited)")
        if entry.prev_hash != prev_hash:
            after = f"entry {prev_seq}" if prev_seq is not None else "the start of the ledger"
            return _broken(count, head, entry.seq, f"the entry does not follow {after} (an entry "
                           "before it was removed, inserted or reordered)")
        if prev_seq is not None and entry.seq != prev_seq + 1:
            return _broken(count, head, entry.seq, f"expected entry {prev_seq + 1} next (entries "
                           "were renumbered)")
        prev_seq, prev_hash, head = entry.seq, entry.hash, entry
    return LedgerReport(count, head.seq if head else None, head.hash if head else None, None)


def _broken(count: int, head: LedgerEntry | None, seq: int, reason: str) -> LedgerReport:
    return LedgerReport(count - 1, head.seq if head else None, head.hash if head else None,
                        BrokenLink(seq, reason))


def baseline_digest(pairs: Iterable[tuple[str, str]]) -> str:
    """One hash over (memory id, content) pairs, in the order given (sort them by id)."""
    h = hashlib.sha256()
    for memory_id, content in pairs:
        h.update(memory_id.encode("utf-8"))
        h.update(b"\x00")
        h.update(hashlib.sha256(content.encode("utf-8")).digest())
    return h.hexdigest()


def key_change(key: Any, *, existed: bool, was_revoked: bool) -> PendingEntry:
    """The entry for saving an API key record (create, revoke or other update).

    Its content hash covers the key's id, label, scopes, bindings and revocation, so
    a key's permissions cannot be widened in the store without breaking the chain's
    account of them.
    """
    if not existed:
        operation = "key.create"
    elif key.revoked_at is not None and not was_revoked:
        operation = "key.revoke"
    else:
        operation = "key.update"
    fields = [key.id, key.label, key.prefix, key.key_hash, sorted(key.scopes), key.memory_scope,
              key.agent_id, key.revoked_at.isoformat() if key.revoked_at else None]
    if getattr(key, "domains", None) is not None:  # keys limited to domains (older keys: as before)
        fields.append(sorted(key.domains))
    record = json.dumps(fields, ensure_ascii=False, separators=(",", ":"))
    return PendingEntry(operation, "", content_digest(record), actor="keys", key_label=key.label)
