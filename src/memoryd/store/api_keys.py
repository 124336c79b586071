"""``store.keys``: the API key records (only each key's hash is kept). Every change of a key
(created, changed, revoked) appends an entry to the audit ledger in the same transaction."""

from __future__ import annotations

from datetime import datetime

from memoryd import ledger
from memoryd.models import ApiKey
from memoryd.store.parts import Part
from memoryd.store.rows import TABLES

COLUMNS = TABLES["api_keys"]


class ApiKeys(Part):
    """API key records."""

    def save_key(self, key: ApiKey) -> None:
        """Insert or replace an API key record."""
        with self.db.write() as tx:
            before = tx.execute(f"SELECT revoked_at FROM api_keys WHERE id = {self.db.mark}",
                                (key.id,)).fetchone()
            revoked = bool(before and before[0] is not None)
            self.db.append_ledger(tx, [ledger.key_change(key, existed=before is not None,
                                                         was_revoked=revoked)])
            self.db.upsert(tx, "api_keys", [key.model_dump(include=set(COLUMNS))])

    def key_by_hash(self, key_hash: str) -> ApiKey | None:
        """The key with this hash (revoked keys included: the caller checks)."""
        found = self.db.select("api_keys", f"key_hash = {self.db.mark}", [key_hash])
        return ApiKey.model_validate(found[0]) if found else None

    def list_keys(self) -> list[ApiKey]:
        """Every key record, oldest first."""
        rows = self.db.select("api_keys", tail=f"ORDER BY created_at, {self.db.position}")
        return [ApiKey.model_validate(row) for row in rows]

    def touch_key(self, key_id: str, at: datetime) -> None:
        """Record that a key was used."""
        with self.db.write(lock=False) as tx:
            tx.execute(f"UPDATE api_keys SET last_used = {self.db.mark} WHERE id = {self.db.mark}",
                       (self.db.encode("api_keys", "last_used", at), key_id))
