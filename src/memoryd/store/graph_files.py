"""``store.graph_files``: what the store remembers of each mirrored knowledge-graph file (its
merge base and signature), keyed by the file's path."""

from __future__ import annotations

from memoryd.models import GraphFileState
from memoryd.store.parts import Part
from memoryd.store.rows import TABLES

COLUMNS = TABLES["graph_files"]


class GraphFiles(Part):
    """The sync state of the mirrored graph files."""

    def graph_file(self, path: str) -> GraphFileState | None:
        """What the store remembers of the mirrored graph file at ``path`` (None if nothing)."""
        found = self.db.select("graph_files", f"path = {self.db.mark}", [path])
        return GraphFileState(**found[0]) if found else None

    def graph_files(self, scope: str) -> list[GraphFileState]:
        """Every graph file mirroring ``scope``, the most recently synced first."""
        rows = self.db.select("graph_files", f"scope = {self.db.mark}", [scope],
                              "ORDER BY updated_at DESC, path")
        return [GraphFileState(**row) for row in rows]

    def save_graph_file(self, state: GraphFileState) -> None:
        """Insert or replace the state of one graph file (keyed by its path)."""
        with self.db.write(lock=False) as tx:
            self.db.upsert(tx, "graph_files", [state.model_dump(include=set(COLUMNS))],
                           key=("path",))
