"""Views of a memory as a whole: the change feed, the timeline, the overview, a memory's
retention curve, the memory graph and the knowledge graphs to draw.

The web dashboard reads these, and so can any client: each is an ordinary operation, with
the caller's scopes and bindings applied like everywhere else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field, field_validator

from memoryd.dates import DAY_PATTERN, TZ_PATTERN, parse_day, parse_tz
from memoryd.models import Edge, EdgeType, UTCDateTime
from memoryd.models.views import (
    CallerView,
    ChangeFeed,
    KgGraphList,
    KgView,
    MemoryGraph,
    NodeArchived,
    Overview,
    RetentionCurve,
    Timeline,
)
from memoryd.models.text import Matches
from memoryd.operations.graph import GraphChoice, Project, ProjectRef
from memoryd.operations.registry import Caller, MemoryId, NoInput, Strict, operation
from memoryd.operations.search import FilterFields
from memoryd.operations.timings import TIMINGS

if TYPE_CHECKING:
    from memoryd.engine import Engine

_READ = {"scope": "read", "read_only": True, "idempotent": True}


class ChangesInput(Strict):
    """Arguments of changes."""

    since: int = Field(0, ge=0, le=2**63 - 1, description="The `next` (or `head`) of your "
                       "last read: changes after this sequence number.")
    limit: int = Field(200, ge=1, le=1000, description="History rows to read at most.")


@operation("changes", title="Changes since", input=ChangesInput, output=ChangeFeed, **_READ)
def changes(engine: Engine, data: ChangesInput, caller: Caller) -> ChangeFeed:
    """What changed in the memories you can see after a change sequence number, oldest first:
    each change's operation (create, update, supersede, promote, delete, kg_update, ...), who
    made it and the memory as it is now. Pass `next` as `since` to continue; `head` is the
    newest change in the store. Deletions are listed for unbound keys only."""
    return engine.views.changes(data.since, limit=data.limit)


class TimelineInput(Strict):
    """Arguments of timeline."""

    days: int = Field(30, ge=1, le=366, description="How many days, up to today.")
    tz: Annotated[str, Matches(TZ_PATTERN, "tz must be an IANA time zone name")] = Field(
        "UTC", max_length=64, description="IANA time zone the days are in.")
    day: Annotated[str, Matches(DAY_PATTERN, "day must be a date as YYYY-MM-DD")] | None = Field(
        None, description="List this day's changes too (YYYY-MM-DD).")
    limit: int = Field(200, ge=1, le=1000, description="Changes of the day listed at most.")

    @field_validator("tz")
    @classmethod
    def _tz(cls, value: str) -> str:
        parse_tz(value)
        return value

    @field_validator("day")
    @classmethod
    def _day(cls, value: str | None) -> str | None:
        return parse_day(value).isoformat() if value is not None else None


@operation("timeline", title="Timeline", input=TimelineInput, output=Timeline, **_READ)
def timeline(engine: Engine, data: TimelineInput, caller: Caller) -> Timeline:
    """What was learned, corrected, strengthened, weakened and forgotten per day, newest day
    first, in your memories; with `day`, that day's changes too (newest first)."""
    day = parse_day(data.day) if data.day is not None else None
    return engine.views.timeline(days=data.days, tz=parse_tz(data.tz), day=day, limit=data.limit)


@operation("overview", title="Overview", input=NoInput, output=Overview, **_READ)
def overview(engine: Engine, data: NoInput, caller: Caller) -> Overview:
    """Your memories at a glance: counts by type, tier, state and scope, the retention
    distribution, growth per day, this server's operation latencies (p50/p95/p99 since it
    started) and the newest consolidation reports (unbound keys)."""
    report = engine.views.overview()
    return report.model_copy(update={"latencies": TIMINGS.summary()})


class RetentionInput(Strict):
    """Arguments of memory_retention."""

    id: str = MemoryId
    days_ahead: float = Field(90, gt=0, le=3650, description="How far past now to draw.")
    points: int = Field(60, ge=2, le=500)


@operation("memory_retention", title="Retention curve of a memory", input=RetentionInput,
           output=RetentionCurve, **_READ)
def memory_retention(engine: Engine, data: RetentionInput, caller: Caller) -> RetentionCurve:
    """A memory's FSRS forgetting curve: retention from its last review to some days ahead,
    and the moments it was created, promoted, demoted, reinforced or edited."""
    return engine.views.retention_curve(data.id, days_ahead=data.days_ahead, points=data.points)


class MemoryGraphInput(FilterFields):
    """Arguments of memory_graph: the filters of search and list, and how many memories."""

    limit: int = Field(500, ge=1, le=5000, description="Memories at most (newest first).")


@operation("memory_graph", title="Graph of memories", input=MemoryGraphInput,
           output=MemoryGraph, **_READ)
def memory_graph(engine: Engine, data: MemoryGraphInput, caller: Caller) -> MemoryGraph:
    """The newest memories matching the filters and the typed edges between them (related,
    supersedes, caused_by, ...), each with its importance and retention; as_of draws the
    graph as it was then."""
    return engine.views.memory_graph(data.filters(), limit=data.limit)


class KgGraphInput(Strict):
    """Arguments of kg_graph."""

    project: ProjectRef | None = Project
    graph: Literal["user", "project"] | None = GraphChoice
    as_of: UTCDateTime | None = Field(None, description="Time travel: the graph as recorded "
                                      "at this moment.")


@operation("kg_graph", title="A knowledge graph, whole", input=KgGraphInput, output=KgView,
           **_READ)
def kg_graph(engine: Engine, data: KgGraphInput, caller: Caller) -> KgView:
    """One knowledge graph whole, to draw or inspect: every node valid now (archived ones
    too, with their archival score) and every edge, after merging hand edits of its file; or
    as recorded at as_of."""
    return engine.kg.view(data.project, graph=data.graph, as_of=data.as_of)


@operation("kg_graphs", title="Knowledge graphs", input=NoInput, output=KgGraphList, **_READ)
def kg_graphs(engine: Engine, data: NoInput, caller: Caller) -> KgGraphList:
    """The knowledge graphs you can see: the user graph and each project graph, with their
    node counts and, where memoryd mirrors it, the project's root directory."""
    return engine.kg.graphs()


@operation("whoami", title="Who am I", input=NoInput, output=CallerView, **_READ)
def whoami(engine: Engine, data: NoInput, caller: Caller) -> CallerView:
    """The key you call with: its label, scopes, and the scope, agent or domains it is bound
    to (what every other operation lets you see and change)."""
    return CallerView(name=caller.name, key_id=caller.key_id, key_label=caller.key_label,
                      scopes=sorted(caller.scopes), memory_scope=caller.memory_scope,
                      agent_id=caller.bound_agent,
                      domains=list(caller.domains) if caller.domains else None,
                      bound=caller.bound)


class MemoryLinkInput(Strict):
    """Arguments of memory_link."""

    id: str = MemoryId
    target: str = Field(min_length=1, max_length=256, description="The memory it points to.")
    type: EdgeType = Field("related", description="The edge's type.")
    weight: float = Field(0.5, ge=0.0, le=1.0)


@operation("memory_link", title="Link two memories", input=MemoryLinkInput, output=Edge,
           scope="write", idempotent=True)
def memory_link(engine: Engine, data: MemoryLinkInput, caller: Caller) -> Edge:
    """Add a typed, weighted edge from one memory to another (or change its weight); both
    must be memories you can see."""
    return engine.link(data.id, data.target, data.type, data.weight)


class KgNodeInput(Strict):
    """Arguments of kg_node_archive."""

    id: str = Field(min_length=1, max_length=256, description="The node's id (or its memory "
                    "id).")
    project: ProjectRef | None = Project
    graph: Literal["user", "project"] | None = GraphChoice


@operation("kg_node_archive", title="Archive a knowledge-graph node", input=KgNodeInput,
           output=NodeArchived, scope="write", idempotent=True)
def kg_node_archive(engine: Engine, data: KgNodeInput, caller: Caller) -> NodeArchived:
    """Take one node out of the core by hand: it is archived (kept, searchable, its edges
    become memory traces) until kg_recall brings it back."""
    return engine.kg.archive_node(data.id, project=data.project, graph=data.graph)
