"""``engine.kg``: the knowledge graphs of an engine, one method per operation.

    >>> mem = memoryd.open()
    >>> mem.kg.write(project="/src/shop", nodes=[{"name": "SQLite busy timeout",
    ...     "type": "gotcha", "body": "Set busy_timeout before WAL writes.",
    ...     "touches": ["src/db.py"]}])
    >>> print(mem.kg.read(project="/src/shop").text)
    # knowledge core: 1 of 1 active nodes (user, project:shop)
    ...

Every method acts with the engine's caller (``engine.acting_as``): a key bound to one
project sees and changes only that project's graph. The facade owns the graphs' cache (the
graphs read so far and the cores rendered from them): one per engine, shared by every
caller through :meth:`KnowledgeGraphs.acting`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from memoryd.engine.context import EngineContext
from memoryd.engine.kg import archive as kg_archive
from memoryd.engine.kg import feed as kg_feed
from memoryd.engine.kg import imports as kg_imports
from memoryd.engine.kg import node as kg_node
from memoryd.engine.kg import read as kg_read
from memoryd.engine.kg import view as kg_view
from memoryd.engine.kg import write as kg_write
from memoryd.engine.kg.cache import GraphCache
from memoryd.errors import InvalidInput, validation_message
from memoryd.graph.importers import (
    find_claude_code_sessions,
    find_openclaw_files,
    read_claude_code_session,
    read_openclaw_file,
)
from memoryd.models.knowledge import (
    ArchiveReport,
    BackfillReport,
    CoreRead,
    EdgeRef,
    EdgeSpec,
    GraphChanges,
    GraphExport,
    GraphHit,
    GraphPing,
    GraphWriteResult,
    NodeSpec,
    RecallResult,
    ScanReport,
)
from memoryd.models.views import KgGraphList, KgView, NodeArchived

GraphName = Literal["user", "project"]


def _models(kind: type, items: Iterable[Any], what: str) -> list[Any]:
    try:
        return [i if isinstance(i, kind) else kind.model_validate(i) for i in items]
    except ValidationError as exc:
        raise InvalidInput(f"{what}: {validation_message(exc)}") from exc


class KnowledgeGraphs:
    """The user graph and the project graphs of one engine (see docs/knowledge-graphs.md)."""

    def __init__(self, ctx: EngineContext, cache: GraphCache | None = None) -> None:
        self._ctx = ctx
        self._cache = cache if cache is not None else GraphCache()

    def acting(self, ctx: EngineContext) -> KnowledgeGraphs:
        """The same graphs, with the same cache, for the caller of ``ctx``."""
        return KnowledgeGraphs(ctx, self._cache)

    def read(self, project: str | None = None, *, budget: int | None = None,
             as_of: datetime | None = None, files: Sequence[str] = (),
             include_user: bool = True) -> CoreRead:
        """The always-loaded core: active nodes of the user and project graphs as text within
        ``budget`` tokens (default ``kg_budget``), memory traces to archived neighbours.
        ``as_of`` reads the graphs as they were then; ``files`` (being worked on) rank the
        nodes that touch them higher."""
        return kg_read.read(self._ctx, self._cache, project=project, budget=budget,
                            as_of=as_of, files=files, include_user=include_user)

    def write(self, project: str | None = None, *, graph: GraphName | None = None,
              nodes: Iterable[NodeSpec | Mapping[str, Any]] = (),
              edges: Iterable[EdgeSpec | Mapping[str, Any]] = (),
              remove_edges: Iterable[EdgeRef | Mapping[str, Any]] = ()) -> GraphWriteResult:
        """Add or change nodes and edges of one graph in one call (all or nothing)."""
        return kg_write.write(self._ctx, self._cache, project=project, graph=graph,
                              nodes=_models(NodeSpec, nodes, "nodes"),
                              edges=_models(EdgeSpec, edges, "edges"),
                              remove_edges=_models(EdgeRef, remove_edges, "remove_edges"))

    def link(self, source: str, target: str, edge_type: str = "relates_to", weight: float = 0.5,
             *, project: str | None = None, graph: GraphName | None = None,
             remove: bool = False) -> GraphWriteResult:
        """Add (or, with ``remove``, remove) one edge between two nodes of a graph."""
        spec = {"source": source, "target": target, "type": edge_type}
        if remove:
            return self.write(project, graph=graph, remove_edges=[spec])
        return self.write(project, graph=graph, edges=[{**spec, "weight": weight}])

    def search(self, query: str, *, project: str | None = None, limit: int = 10,
               include_archived: bool = True, graph: GraphName | None = None) -> list[GraphHit]:
        """Hybrid search over the graphs' nodes (archived ones included by default)."""
        if not query.strip():
            raise InvalidInput("query is empty")
        return kg_feed.search(self._ctx, query, project=project, limit=limit,
                              include_archived=include_archived, graph=graph)

    def recall(self, node_id: str, *, project: str | None = None,
               graph: GraphName | None = None) -> RecallResult:
        """Bring a node back into the core (an archived one becomes active); counts as a use."""
        return kg_write.recall(self._ctx, self._cache, node_id, project=project, graph=graph)

    def archive_node(self, node_id: str, *, project: str | None = None,
                     graph: GraphName | None = None) -> NodeArchived:
        """Archive one node by hand (``recall`` brings it back)."""
        return kg_node.archive_node(self._ctx, self._cache, node_id, project=project,
                                    graph=graph)

    def archive(self, project: str | None = None, *, dry_run: bool = True,
                budget: int | None = None, remove_orphans: bool = False) -> ArchiveReport:
        """Run archival (a dry run by default): orphans listed first, then the nodes that
        leave the core until the active ones fit the budget."""
        return kg_archive.archive(self._ctx, self._cache, project=project, dry_run=dry_run,
                                  budget=budget, remove_orphans=remove_orphans)

    def sync(self, since: int = 0, *, project: str | None = None,
             limit: int = 200) -> GraphChanges:
        """Changes to the visible graphs after change sequence number ``since``."""
        if since < 0:
            raise InvalidInput("since must not be negative")
        return kg_feed.changes(self._ctx, since, project=project, limit=limit)

    def ping(self, project: str | None = None) -> GraphPing:
        """The store's change sequence number and the size of each visible graph."""
        return kg_read.ping(self._ctx, self._cache, project)

    def view(self, project: str | None = None, *, graph: GraphName | None = None,
             as_of: datetime | None = None) -> KgView:
        """One graph whole, to draw: its nodes (active and archived, each with its archival
        score) and edges now, after merging hand edits of its file, or at ``as_of``."""
        return kg_view.kg_view(self._ctx, self._cache, project, graph, as_of)

    def graphs(self) -> KgGraphList:
        """The graphs the caller can see: the user graph and every project graph."""
        return kg_view.kg_graphs(self._ctx)

    def export(self, project: str | None = None, *, graph: GraphName | None = None) -> GraphExport:
        """One graph as the text of its reviewable file."""
        return kg_read.export(self._ctx, self._cache, project, graph)

    def import_text(self, text: str, *, project: str | None = None,
                    graph: GraphName | None = None, source: str = "<import>") -> GraphWriteResult:
        """Merge a graph file's text into one graph (nothing is removed)."""
        return kg_write.import_text(self._ctx, self._cache, text, project=project, graph=graph,
                                    source=source)

    def scan(self, root: str | Path) -> ScanReport:
        """Record a project's structure (languages, entry points, tests, commands,
        conventions) as ``scan-…`` nodes of its graph."""
        return kg_imports.scan(self._ctx, self._cache, Path(root))

    def claude_code_sessions(self, root: str | Path | None = None) -> list[Path]:
        """Claude Code session files under ``root`` (default ``~/.claude/projects``)."""
        return find_claude_code_sessions(root)

    def import_claude_code(self, root: str | Path | None = None, *, scope: str | None = None,
                           progress: Callable[[int], None] | None = None,
                           files: Sequence[Path] | None = None) -> BackfillReport:
        """Import Claude Code transcripts (``~/.claude/projects/*/*.jsonl``) as memories of
        ``project:<directory>`` (or ``scope``)."""
        kg_imports.check_scope_given(scope)
        paths = list(files) if files is not None else find_claude_code_sessions(root)
        batches = (read_claude_code_session(p, scope=scope) for p in paths)
        return kg_imports.import_batches(self._ctx, batches, progress)

    def import_openclaw(self, workspace: str | Path, *, scope: str = "user",
                        progress: Callable[[int], None] | None = None) -> BackfillReport:
        """Import an OpenClaw workspace's ``MEMORY.md`` and ``memory/YYYY-MM-DD.md`` notes."""
        kg_imports.check_scope_given(scope)
        batches = (read_openclaw_file(p, scope=scope) for p in find_openclaw_files(workspace))
        return kg_imports.import_batches(self._ctx, batches, progress)
