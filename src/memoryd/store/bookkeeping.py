"""``store.bookkeeping``: what the store keeps of its own jobs: named counters (watermarks,
e.g. how many messages of a session were captured, or where a copy stopped) and reports
(e.g. of a consolidation run, or a change of the domains)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from memoryd.store.parts import Part


class Bookkeeping(Part):
    """Watermarks and reports."""

    def get_watermark(self, key: str) -> int:
        """A named counter (0 when unset), e.g. how many messages of a session were captured."""
        found = self.db.rows(f"SELECT value FROM watermarks WHERE key = {self.db.mark}", [key])
        return int(found[0][0]) if found else 0

    def set_watermark(self, key: str, value: int) -> None:
        """Set a named counter."""
        row = {"key": key, "value": value, "updated_at": datetime.now(timezone.utc)}
        with self.db.write(lock=False) as tx:
            self.db.upsert(tx, "watermarks", [row], key=("key",))

    def save_report(self, kind: str, body: dict[str, Any], at: datetime) -> int:
        """Keep a report (e.g. of a consolidation run); returns its id."""
        values = [self.db.encode("reports", f, v) for f, v in
                  (("kind", kind), ("at", at), ("body", body))]
        with self.db.write(lock=False) as tx:
            return self.db.insert_id(
                tx, f"INSERT INTO reports (kind, at, body) VALUES ({self.db.marks(3)})", values)

    def list_reports(self, kind: str, limit: int = 20) -> list[dict[str, Any]]:
        """The newest reports of a kind, newest first."""
        rows = self.db.select("reports", f"kind = {self.db.mark}", [kind, limit],
                              f"ORDER BY id DESC LIMIT {self.db.mark}", ("id", "at", "body"))
        return [{"id": r["id"], "at": r["at"], **r["body"]} for r in rows]
