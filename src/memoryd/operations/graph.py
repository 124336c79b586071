"""Knowledge-graph operations: the always-loaded core (kg_read), writes (kg_write, kg_link),
search, recall, archival, the change feed (kg_sync), kg_ping, and a graph file's export and
import. MCP tools: kg_read, kg_write, kg_link, kg_search, kg_recall, kg_archive, kg_sync,
kg_ping; REST under /api/v1/graph/."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Callable, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memoryd.models.kg import GraphEdgeType
from memoryd.models import UTCDateTime
from memoryd.models.fields import QueryText
from memoryd.models.knowledge import (
    ArchiveReport,
    CoreRead,
    EdgeRef,
    EdgeSpec,
    GraphChanges,
    GraphExport,
    GraphHit,
    GraphPing,
    GraphWriteResult,
    NodeId,
    NodeSpec,
    RecallResult,
)
from memoryd.models.rules import Rules
from memoryd.models.text import BLANK_CLASS, Matches
from memoryd.operations.registry import Caller, Strict, operation

if TYPE_CHECKING:
    from memoryd.engine import Engine

# A project as given: an absolute directory (or ~/...), or a name (project:name) of letters,
# digits, '.', '_', '-' and '/'. Blanks around it are forgiven.
PROJECT_PATTERN = (f"^[{BLANK_CLASS}]*" + r"(?:[/~][\s\S]*|(?:project:)?[A-Za-z0-9_.\-/]{1,128}"
                   + f"[{BLANK_CLASS}]*)$")
ProjectRef = Annotated[str, Matches(PROJECT_PATTERN, "project must be an absolute directory or a "
                                    "name of letters, digits, '.', '_', '-' and '/'")]
# The core's header (its scopes, the counts) alone takes up to ~60 tokens with a long project
# name: a smaller budget could not hold it.
MIN_CORE_BUDGET = 100
Project = Field(None, max_length=4096, description=(
    "The project: its root directory (absolute path; its graph file is "
    "<root>/.knowledge/graph.json) or its name. Unset: the user graph only (for a key bound "
    "to a project, that project)."))
GraphChoice = Field(None, description="Which graph: 'user' (true wherever you work) or "
                    "'project' (true in this repository). Default: the project's, if one is named.")


class _Conflicts(BaseModel):
    def _conflict_lines(self) -> list[str]:
        lines = []
        for c in getattr(self, "conflicts", []):
            lines.append(f"conflict in {c.scope} {c.key}: kept the {c.kept}'s version ({c.reason})")
        return lines


# --- kg_read ----------------------------------------------------------------------------
class KgReadInput(Strict):
    """Arguments of kg_read."""

    project: ProjectRef | None = Project
    budget: int | None = Field(None, ge=MIN_CORE_BUDGET, le=200_000, description="Tokens at "
                               "most (default 5000, counted with the cl100k tokenizer).")
    as_of: UTCDateTime | None = Field(None, description="Time travel: the graphs as they were "
                                      "recorded at this moment.")
    files: list[str] = Field(default_factory=list, max_length=200, description="Files being "
                             "worked on: nodes that touch them rank higher.")
    include_user: bool = Field(True, description="Include the user graph.")


class KgReadOutput(CoreRead, _Conflicts):
    def as_text(self) -> str:
        extra = self._conflict_lines() + [f"problem: {p}" for p in self.problems]
        return self.text + ("\n" + "\n".join(extra) if extra else "")


@operation("kg_read", title="Read the knowledge core", input=KgReadInput, output=KgReadOutput,
           scope="read", read_only=True, idempotent=True, tools=("kg_read",))
def kg_read(engine: Engine, data: KgReadInput, caller: Caller) -> KgReadOutput:
    """Load the knowledge core at the start of a session: the user graph's and the project
    graph's active nodes (insights, decisions, conventions, gotchas, ...) as compact text within
    a token budget, best first. Lines `→ [archived] <id> <name>` are memory traces: related
    knowledge that left the core; kg_recall(id) brings it back. Pass project (its root
    directory) to include its graph; as_of to see what was believed at a past moment."""
    core = engine.kg.read(data.project, budget=data.budget, as_of=data.as_of, files=data.files,
                          include_user=data.include_user)
    return KgReadOutput(**core.model_dump())


# --- kg_write / kg_link / kg_import -----------------------------------------------------
_SOMETHING = Rules(at_least_one=("nodes", "edges", "remove_edges"), mode="filled",
                   message="nothing to write: give nodes, edges or remove_edges")


class KgWriteInput(Strict):
    """Arguments of kg_write."""

    model_config = ConfigDict(json_schema_extra=_SOMETHING.schema)

    project: ProjectRef | None = Project
    graph: Literal["user", "project"] | None = GraphChoice
    nodes: list[NodeSpec] = Field(default_factory=list, max_length=200, description="Nodes to "
                                  "add, or to change by id (only the fields given change).")
    edges: list[EdgeSpec] = Field(default_factory=list, max_length=500)
    remove_edges: list[EdgeRef] = Field(default_factory=list, max_length=500)

    @model_validator(mode="after")
    def _once_each(self) -> KgWriteInput:
        """Each node id and edge once: a second mention would silently override the first,
        and an edge both added and removed would end up as it was before, or not."""
        _SOMETHING.check(self)
        _once([n.id for n in self.nodes if n.id is not None], "nodes", lambda i: f"id {i!r}")
        added = [(e.source, e.type, e.target) for e in self.edges]
        removed = [(e.source, e.type, e.target) for e in self.remove_edges]
        _once(added, "edges", _edge_text)
        _once(removed, "remove_edges", _edge_text)
        both = sorted(set(added) & set(removed))
        if both:
            raise ValueError(f"edge {_edge_text(both[0])} is both added and removed; do one")
        return self


def _edge_text(key: tuple[str, str, str]) -> str:
    return f"{key[0]} -{key[1]}-> {key[2]}"


def _once(keys: list, where: str, text: Callable[[Any], str]) -> None:
    seen: set = set()
    for key in keys:
        if key in seen:
            raise ValueError(f"{where}: {text(key)} is given twice; give each once")
        seen.add(key)


class KgWriteOutput(GraphWriteResult, _Conflicts):
    def as_text(self) -> str:
        parts = [(f"{self.scope}: {len(self.created)} created, {len(self.updated)} updated, "
                  f"{len(self.unchanged)} unchanged, {self.edges_added} edges added, "
                  f"{self.edges_removed} removed (seq {self.seq})")]
        parts += [f"created: {', '.join(self.created)}"] if self.created else []
        parts += [f"updated: {', '.join(self.updated)}"] if self.updated else []
        parts += [f"file: {self.file}"] if self.file else []
        return "\n".join(parts + self._conflict_lines()
                         + [f"problem: {p} (kept in the file, not merged)" for p in self.problems])


@operation("kg_write", title="Write knowledge-graph nodes and edges", input=KgWriteInput,
           output=KgWriteOutput, scope="write", tools=("kg_write",))
def kg_write(engine: Engine, data: KgWriteInput, caller: Caller) -> KgWriteOutput:
    """Record knowledge, compressed as you write it: add or change nodes (name, type, a short
    body, touches = files it concerns, tags) and typed edges (relates_to, depends_on, part_of,
    supersedes, contradicts, caused_by, implements, uses, derived_from) of one graph, in one
    call, all or nothing. Use the project graph for what holds in this repository, the user
    graph (graph='user') for what holds wherever you work. A node without an id gets one from
    its name; writing to an archived node brings it back."""
    result = engine.kg.write(data.project, graph=data.graph, nodes=data.nodes, edges=data.edges,
                             remove_edges=data.remove_edges)
    return KgWriteOutput(**result.model_dump())


class KgLinkInput(Strict):
    """Arguments of kg_link."""

    project: ProjectRef | None = Project
    graph: Literal["user", "project"] | None = GraphChoice
    source: NodeId = Field(description="The node the edge starts at.")
    target: NodeId = Field(description="The node it points to.")
    type: GraphEdgeType = "relates_to"
    weight: float = Field(0.5, ge=0.0, le=1.0)
    remove: bool = Field(False, description="Remove this edge instead.")


@operation("kg_link", title="Link two knowledge-graph nodes", input=KgLinkInput,
           output=KgWriteOutput, scope="write", idempotent=True, tools=("kg_link",))
def kg_link(engine: Engine, data: KgLinkInput, caller: Caller) -> KgWriteOutput:
    """Add a typed, directed edge between two nodes of one graph (or change its weight), or
    remove it with remove=true."""
    result = engine.kg.link(data.source, data.target, data.type, data.weight,
                            project=data.project, graph=data.graph, remove=data.remove)
    return KgWriteOutput(**result.model_dump())


class KgImportInput(Strict):
    """Arguments of kg_import."""

    project: ProjectRef | None = Project
    graph: Literal["user", "project"] | None = GraphChoice
    text: str = Field(min_length=1, description="The text of a graph file (graph.json).")


@operation("kg_import", title="Import a graph file", input=KgImportInput, output=KgWriteOutput,
           scope="write", unscreened=("text",))
def kg_import(engine: Engine, data: KgImportInput, caller: Caller) -> KgWriteOutput:
    """Merge a graph file's text into one graph: new nodes and edges are added, a node on both
    sides keeps the newer `updated` (the other is reported as a conflict), nothing is removed.
    Invalid text is refused with its line and column."""
    result = engine.kg.import_text(data.text, project=data.project, graph=data.graph)
    return KgWriteOutput(**result.model_dump())


# --- kg_search / kg_recall --------------------------------------------------------------
class KgSearchInput(Strict):
    """Arguments of kg_search."""

    query: QueryText = Field(description="What to look for.")
    project: ProjectRef | None = Project
    graph: Literal["user", "project"] | None = Field(None, description="Only this graph.")
    limit: int = Field(10, ge=1, le=100)
    include_archived: bool = Field(True, description="Archived nodes too (recall them to use).")


class KgSearchOutput(BaseModel):
    query: str
    results: list[GraphHit]

    def as_text(self) -> str:
        if not self.results:
            return f"No nodes found for {self.query!r}."
        lines = [f"{len(self.results)} nodes for {self.query!r}:"]
        for h in self.results:
            mark = " [archived]" if h.archived else ""
            body = f": {h.body}" if h.body else ""
            lines.append(f"- [{h.score:.2f}] {h.scope} {h.id}{mark} ({h.type}) {h.name}{body}")
        return "\n".join(lines)


@operation("kg_search", title="Search the knowledge graphs", input=KgSearchInput,
           output=KgSearchOutput, scope="read", read_only=True, idempotent=True,
           tools=("kg_search",), unscreened=("query",))
def kg_search(engine: Engine, data: KgSearchInput, caller: Caller) -> KgSearchOutput:
    """Search the nodes of the user and project graphs by meaning and keywords (hybrid
    search), archived nodes included: what did not fit the core is still found here."""
    hits = engine.kg.search(data.query, project=data.project, limit=data.limit,
                            include_archived=data.include_archived, graph=data.graph)
    return KgSearchOutput(query=data.query, results=hits)


class KgRecallInput(Strict):
    """Arguments of kg_recall."""

    id: str = Field(min_length=1, max_length=256, description="The node's id (or its memory id).")
    project: ProjectRef | None = Project
    graph: Literal["user", "project"] | None = GraphChoice


class KgRecallOutput(RecallResult):
    def as_text(self) -> str:
        state = "brought back from the archive" if self.was_archived else "active"
        return f"{self.node.scope} {self.node.id} ({state}):\n{self.text}"


@operation("kg_recall", title="Recall a knowledge-graph node", input=KgRecallInput,
           output=KgRecallOutput, scope="write", tools=("kg_recall",))
def kg_recall(engine: Engine, data: KgRecallInput, caller: Caller) -> KgRecallOutput:
    """Bring a node back into the core: follow a memory trace (`→ [archived] <id>`) or a
    kg_search hit. An archived node becomes active again; the recall counts as a use."""
    result = engine.kg.recall(data.id, project=data.project, graph=data.graph)
    return KgRecallOutput(**result.model_dump())


# --- kg_archive ---------------------------------------------------------------------------
class KgArchiveInput(Strict):
    """Arguments of kg_archive."""

    project: ProjectRef | None = Project
    dry_run: bool = Field(True, description="Only list what would happen (the default).")
    budget: int | None = Field(None, ge=16, le=200_000, description="The core's budget.")
    remove_orphans: bool = Field(False, description="Also remove the orphans listed (nodes "
                                 "without edges, never used, older than the grace period).")


class KgArchiveOutput(ArchiveReport):
    def as_text(self) -> str:
        head = "dry run: would archive" if self.dry_run else "archived"
        lines = [f"{len(self.orphans)} orphans" + (" (removed)" if self.removed else "")]
        lines += [f"- orphan {o.scope} {o.id} {o.name} ({o.age_days:.0f} days)" for o in self.orphans]
        lines.append(f"{head} {len(self.archived)} nodes: {self.tokens_before} -> "
                     f"{self.tokens_after} tokens (budget {self.budget})")
        lines += [f"- {a.scope} {a.id} {a.name}" for a in self.archived]
        return "\n".join(lines)


@operation("kg_archive", title="Archive the least important nodes", input=KgArchiveInput,
           output=KgArchiveOutput, destructive=True,
           scope=lambda d: "admin" if d.remove_orphans and not d.dry_run else "write",
           tools=("kg_archive",))
def kg_archive(engine: Engine, data: KgArchiveInput, caller: Caller) -> KgArchiveOutput:
    """Keep the core within its budget: archive the lowest-scored nodes (recency, connectivity,
    files) until the active ones fit. A dry run by default; orphans are listed first and
    removed only with remove_orphans (an admin key). Archived nodes stay searchable and
    recallable; their edges remain as memory traces."""
    report = engine.kg.archive(data.project, dry_run=data.dry_run, budget=data.budget,
                               remove_orphans=data.remove_orphans)
    return KgArchiveOutput(**report.model_dump())


# --- kg_sync / kg_ping / kg_export ---------------------------------------------------------
class KgSyncInput(Strict):
    """Arguments of kg_sync."""

    since: int = Field(0, ge=0, description="The `seq` (or `next`) of your last read or sync.")
    project: ProjectRef | None = Project
    limit: int = Field(200, ge=1, le=1000)


class KgSyncOutput(GraphChanges):
    def as_text(self) -> str:
        lines = [f"{len(self.changes)} changes after {self.since}; next={self.next}"
                 + (" (more)" if self.more else "")]
        for c in self.changes:
            name = c.node.name if c.node else "(removed)"
            lines.append(f"- {c.seq} {c.operation} {c.scope} {c.id} {name}")
        return "\n".join(lines)


@operation("kg_sync", title="Knowledge-graph changes since", input=KgSyncInput,
           output=KgSyncOutput, scope="read", read_only=True, idempotent=True,
           tools=("kg_sync",))
def kg_sync(engine: Engine, data: KgSyncInput, caller: Caller) -> KgSyncOutput:
    """What changed in the graphs you see since a sequence number (other agents' writes,
    merged file edits, archival): pass the seq from kg_read or the next from the last
    kg_sync. Stateless polling: call it when you want to catch up."""
    changes = engine.kg.sync(data.since, project=data.project, limit=data.limit)
    return KgSyncOutput(**changes.model_dump())


class KgProjectInput(Strict):
    """Arguments naming a project."""

    project: ProjectRef | None = Project


class KgPingOutput(GraphPing):
    def as_text(self) -> str:
        lines = [f"ok, seq {self.seq}"]
        lines += [f"- {g.scope}: {g.nodes} nodes ({g.active} active), {g.edges} edges"
                  for g in self.graphs]
        return "\n".join(lines)


@operation("kg_ping", title="Knowledge graphs: status", input=KgProjectInput,
           output=KgPingOutput, scope="read", read_only=True, idempotent=True,
           tools=("kg_ping",))
def kg_ping(engine: Engine, data: KgProjectInput, caller: Caller) -> KgPingOutput:
    """Check that the graphs answer: the store's change sequence number and each visible
    graph's size."""
    return KgPingOutput(**engine.kg.ping(data.project).model_dump())


class KgExportInput(Strict):
    """Arguments of kg_export."""

    project: ProjectRef | None = Project
    graph: Literal["user", "project"] | None = GraphChoice


class KgExportOutput(GraphExport):
    def as_text(self) -> str:
        return self.text


@operation("kg_export", title="Export a graph file", input=KgExportInput,
           output=KgExportOutput, scope="read", read_only=True, idempotent=True)
def kg_export(engine: Engine, data: KgExportInput, caller: Caller) -> KgExportOutput:
    """One graph as the text of its reviewable file (stable order, use counts left out)."""
    return KgExportOutput(**engine.kg.export(data.project, graph=data.graph).model_dump())
