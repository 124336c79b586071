"""Knowledge graphs: what the graph operations take (nodes and edges to write) and give back
(the core, write and archival reports, search hits, changes). The node itself is
:class:`memoryd.models.kg.GraphNode`; inputs derive from its fields."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memoryd.models.kg import (
    MAX_BODY_CHARS,
    MAX_NAME_CHARS,
    MAX_TAGS,
    MAX_TOUCHES,
    NODE_ID_PATTERN,
    NODE_ID_RULE,
    GraphEdgeType,
    GraphNode,
    NodeKind,
)
from memoryd.models.fields import Strict, StrictValidity, Tag, UTCDateTime
from memoryd.models.rules import Rules
from memoryd.models.text import BLANK_CLASS, NOT_BLANK, Matches

NodeId = Annotated[str, Matches(NODE_ID_PATTERN, NODE_ID_RULE)]
_CONTROL = r"\x00-\x1f\x7f"
# A touches entry as given: blanks around it are forgiven; inside, no control character; not
# absolute (/x, ~/x, C:/x); at most 256 characters. ('..' and '.' alone are refused besides.)
TOUCH_PATTERN = (f"^[{BLANK_CLASS}]*" + r"(?![/\\~]|[A-Za-z]:[/\\])"
                 + f"(?:[^{_CONTROL}{BLANK_CLASS}]|[^{_CONTROL}{BLANK_CLASS}][^{_CONTROL}]{{0,254}}"
                 + f"[^{_CONTROL}{BLANK_CLASS}])[{BLANK_CLASS}]*$")
TouchPath = Annotated[str, Matches(TOUCH_PATTERN, "a touches path must be relative to the "
                                   "project root, without control characters, at most 256 "
                                   "characters")]

GraphName = Literal["user", "project"]


_NAMED = Rules(at_least_one=("id", "name"), message="a node needs an id or a name")


class NodeSpec(StrictValidity):
    """A node to add, or the fields of an existing node to change (unset fields stay)."""

    model_config = ConfigDict(json_schema_extra=_NAMED.schema)

    id: NodeId | None = Field(None, description="The node's short id (a slug such as "
                              "'wal-busy'); made from the name when a new node has none.")
    name: Annotated[str, Matches(NOT_BLANK, "name must not be blank")] | None = Field(
        None, min_length=1, max_length=MAX_NAME_CHARS,
        description="A short title (required for a new node).")
    type: NodeKind | None = Field(None, description="insight, decision, convention, pattern, "
                                  "gotcha, preference, fact, person, component or command.")
    body: str | None = Field(None, max_length=MAX_BODY_CHARS,
                             description="The knowledge, compressed: one to three sentences.")
    touches: list[TouchPath] | None = Field(None, max_length=MAX_TOUCHES,
                                            description="Files or globs it is about, relative "
                                            "to the project root.")
    tags: list[Tag] | None = Field(None, max_length=MAX_TAGS)
    valid_from: UTCDateTime | None = None
    valid_until: UTCDateTime | None = Field(None, description="When it stopped being true.")

    @model_validator(mode="after")
    def _named(self) -> NodeSpec:
        _NAMED.check(self)
        return self


class EdgeSpec(Strict):
    """A typed, directed edge between two nodes of the same graph."""

    source: NodeId = Field(description="The node the edge starts at.")
    target: NodeId = Field(description="The node it points to.")
    type: GraphEdgeType = "relates_to"
    weight: float = Field(0.5, ge=0.0, le=1.0)


class EdgeRef(Strict):
    """An edge by its key, to remove."""

    source: NodeId
    target: NodeId
    type: GraphEdgeType = "relates_to"


class ScopedNode(GraphNode):
    """A node with the graph it belongs to and the id of the memory that holds it."""

    scope: str
    memory_id: str


class NodeRef(BaseModel):
    """A node named by graph and id."""

    scope: str
    id: str
    name: str


class MergeConflict(BaseModel):
    """A node or edge changed both in the graph file and in the store since the last sync:
    the newer version was kept, the other is reported here, not dropped."""

    scope: str
    key: str
    kept: Literal["file", "store"]
    reason: str
    file_version: dict | None = None
    store_version: dict | None = None


class CoreRead(BaseModel):
    """The always-loaded core: active nodes and memory traces, as text within a budget."""

    text: str
    tokens: int
    budget: int
    counter: str
    scopes: list[str]
    shown: int = Field(description="Active nodes in the text.")
    active: int = Field(description="Active nodes in the graphs.")
    traces: int = Field(description="Memory traces (edges to archived nodes) in the text.")
    as_of: datetime | None = None
    seq: int = Field(description="The store's change sequence number: pass it to kg_sync.")
    files: list[str] = Field(default_factory=list, description="The graph files mirrored.")
    conflicts: list[MergeConflict] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list, description="Graph files that could not "
                                "be merged (invalid), with line and column.")


class GraphWriteResult(BaseModel):
    """What a graph write did."""

    scope: str
    created: list[str] = Field(default_factory=list)
    updated: list[str] = Field(default_factory=list)
    unchanged: list[str] = Field(default_factory=list)
    archived: list[str] = Field(default_factory=list)
    edges_added: int = 0
    edges_removed: int = 0
    file: str | None = None
    conflicts: list[MergeConflict] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list, description="Nodes and edges of the "
                                "graph file that could not be read, with path, line and "
                                "column: kept in the file as they are, not merged.")
    seq: int = 0


class GraphHit(ScopedNode):
    """A node found by kg_search (archived nodes included: kg_recall brings them back)."""

    score: float


class RecallResult(BaseModel):
    """A node brought back into the core, with its neighbourhood as the core shows it."""

    node: ScopedNode
    was_archived: bool
    text: str


class OrphanItem(NodeRef):
    """A node without edges, never used, older than the grace period."""

    age_days: float
    archived: bool


class ArchiveReport(BaseModel):
    """An archival run (or its dry run): orphans first, then what leaves the core."""

    dry_run: bool
    budget: int
    scopes: list[str]
    orphans: list[OrphanItem] = Field(default_factory=list)
    archived: list[NodeRef] = Field(default_factory=list)
    removed: list[NodeRef] = Field(default_factory=list)
    rounds: int = 0
    tokens_before: int = 0
    tokens_after: int = 0


class GraphChange(BaseModel):
    """One change to a graph node, from the store's history."""

    seq: int
    at: datetime
    operation: str
    scope: str
    id: str
    memory_id: str
    node: ScopedNode | None = Field(None, description="The node now (None if it was removed).")
    details: dict = Field(default_factory=dict)


class GraphChanges(BaseModel):
    """Changes to the visible graphs after sequence number ``since``, oldest first."""

    since: int
    next: int = Field(description="Pass as `since` to get the changes after these.")
    more: bool
    changes: list[GraphChange] = Field(default_factory=list)


class GraphSummary(BaseModel):
    """One graph's size and where it is mirrored."""

    scope: str
    nodes: int
    active: int
    edges: int
    files: list[str] = Field(default_factory=list)


class GraphPing(BaseModel):
    """The graphs a caller can see, and the store's change sequence number."""

    ok: bool = True
    seq: int
    at: datetime
    graphs: list[GraphSummary] = Field(default_factory=list)


class GraphExport(BaseModel):
    """A graph as the text of its reviewable file."""

    scope: str
    nodes: int
    edges: int
    text: str


class BackfillReport(BaseModel):
    """What an import of transcripts or memory files did."""

    files: int = 0
    items: int = 0
    imported: int = 0
    skipped_existing: int = 0
    skipped_secrets: int = 0
    problems: list[str] = Field(default_factory=list)


class ScanReport(GraphWriteResult):
    """What a project scan found and stored."""

    files_seen: int = 0
    truncated: bool = False
    warnings: list[str] = Field(default_factory=list)
