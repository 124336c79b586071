"""The operation registry: every operation an agent or program can call, defined once.

Each :class:`Operation` names an engine call with a typed input model, a typed output
model, the key scope it needs (``read`` < ``write`` < ``admin``) and how it behaves
(read-only, destructive, idempotent). The MCP server (``memoryd.mcp``) turns the
operations with ``tools`` into MCP tools; the REST app (``memoryd.api``) binds them to
routes. Neither face holds logic: they parse, call :func:`invoke`, and format.

Who calls is a :class:`Caller`: its scopes, and optionally a memory scope
(``project:x``) and/or agent it is bound to. A bound caller sees and writes only its
own memories; that rule is applied here, once, for every face.

>>> out = invoke(engine, "search", {"query": "typescript", "limit": 5}, Caller.local())
>>> out.results[0].content
"""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Literal, Mapping, TypeVar, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from memoryd import __version__
from memoryd.engine import Engine, validation_message
from memoryd.errors import InvalidInput, MemorydError, MemoryNotFound
from memoryd.keys import KeyScope, grants
from memoryd.models import (
    TIMEFRAMES,
    ApiKey,
    CodebaseContext,
    ConsolidationReport,
    GcReport,
    HistoryEntry,
    IngestResult,
    Intention,
    IntentionTrigger,
    Memory,
    MemoryStateReport,
    Neighbourhood,
    NodeType,
    Priority,
    SearchHit,
    Severity,
    Tier,
)
from memoryd.store.base import Actor

Timeframe = Literal["1h", "24h", "7d", "30d", "90d", "all"]
ALL_SCOPES: frozenset[str] = frozenset({"read", "write", "admin"})


class Forbidden(MemorydError, PermissionError):
    """The caller's key does not allow this operation (or this scope/agent)."""


# --- who calls ----------------------------------------------------------------------
@dataclass(frozen=True)
class Caller:
    """Who is calling: scopes, the key (if any) and the scope/agent it is bound to.

    ``agent_id`` is the effective agent: the key's bound agent, else the ``X-Agent-Id``
    the client sent. It is stamped on writes and recorded in history; it never widens
    what the caller may see.
    """

    scopes: frozenset[str] = ALL_SCOPES
    name: str = "local"
    key_id: str | None = None
    memory_scope: str | None = None
    bound_agent: str | None = None
    agent_id: str | None = None

    @classmethod
    def local(cls, name: str = "local", agent_id: str | None = None) -> Caller:
        """A trusted local caller (stdio MCP, CLI): every scope, nothing bound."""
        return cls(name=name, agent_id=agent_id)

    @classmethod
    def anonymous(cls, agent_id: str | None = None) -> Caller:
        """An unauthenticated HTTP caller (only with MEMORYD_ALLOW_ANONYMOUS): read and write."""
        return cls(scopes=frozenset({"read", "write"}), name="anonymous", agent_id=agent_id)

    @classmethod
    def from_key(cls, key: ApiKey, agent_header: str | None = None) -> Caller:
        """The caller a verified key stands for; a key bound to an agent cannot act as another."""
        if key.agent_id and agent_header and agent_header != key.agent_id:
            raise Forbidden(
                f"this key is bound to agent {key.agent_id!r}; X-Agent-Id {agent_header!r} "
                "is not allowed"
            )
        return cls(
            scopes=frozenset(key.scopes),
            name=f"key:{key.label}",
            key_id=key.id,
            memory_scope=key.memory_scope,
            bound_agent=key.agent_id,
            agent_id=key.agent_id or agent_header,
        )

    @property
    def bound(self) -> bool:
        """Whether the caller is limited to one memory scope or agent."""
        return self.memory_scope is not None or self.bound_agent is not None

    def actor(self) -> Actor:
        """The actor recorded in history for this caller's changes."""
        return Actor(name=self.name, agent_id=self.agent_id)

    def require(self, needed: KeyScope) -> None:
        """Raise Forbidden unless the caller's scopes grant ``needed``."""
        if not grants(self.scopes, needed):
            have = ", ".join(sorted(self.scopes)) or "none"
            raise Forbidden(f"this operation needs the {needed!r} scope; the key has {have}")

    # The three rules for bound callers, used by every handler below.
    def read_filters(self, filters: dict[str, Any]) -> dict[str, Any]:
        """Filters narrowed to the caller's scope/agent (asking for another is Forbidden)."""
        out = dict(filters)
        for name, bound in (("scope", self.memory_scope), ("agent_id", self.bound_agent)):
            if bound is None:
                continue
            if out.get(name) not in (None, bound):
                raise Forbidden(f"this key is limited to {name} {bound!r}")
            out[name] = bound
        return out

    def write_fields(self, fields: dict[str, Any]) -> dict[str, Any]:
        """Fields of a new memory with the caller's scope and agent stamped on."""
        out = dict(fields)
        if self.memory_scope is not None:
            if out.get("scope") not in (None, self.memory_scope):
                raise Forbidden(f"this key may only write to scope {self.memory_scope!r}")
            out["scope"] = self.memory_scope
        if self.agent_id is not None:
            out["agent_id"] = self.agent_id
        return {k: v for k, v in out.items() if v is not None}

    def visible(self, memory: Memory) -> Memory:
        """The memory, if the caller may see it; otherwise MemoryNotFound (nothing leaks)."""
        if (self.memory_scope is not None and memory.scope != self.memory_scope) or (
            self.bound_agent is not None and memory.agent_id != self.bound_agent
        ):
            raise MemoryNotFound(memory.id)
        return memory


# --- the registry -------------------------------------------------------------------
InT = TypeVar("InT", bound=BaseModel)


@dataclass(frozen=True)
class Operation:
    """One operation: its models, the engine call, the scope it needs and how it behaves."""

    name: str
    title: str
    description: str
    input: type[BaseModel]
    output: type[BaseModel]
    handler: Callable[[Engine, Any, Caller], BaseModel]
    scope: KeyScope | Callable[[Any], KeyScope]
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    tools: tuple[str, ...] = ()  # MCP tool names (first is canonical); () = not a tool
    bound_ok: bool = True  # usable by keys bound to a scope/agent

    def needed_scope(self, data: BaseModel) -> KeyScope:
        return self.scope(data) if callable(self.scope) else self.scope

    def parse(self, arguments: BaseModel | Mapping[str, Any] | None) -> BaseModel:
        """Validate raw arguments into the input model; InvalidInput names the bad fields."""
        if isinstance(arguments, self.input):
            _check_text(arguments.model_dump(), "")
            return arguments
        if isinstance(arguments, BaseModel):
            arguments = arguments.model_dump(exclude_unset=True)
        data = dict(arguments or {})
        _check_text(data, "")
        try:
            return self.input.model_validate(_decode_json_strings(self.input, data))
        except ValidationError as exc:
            raise InvalidInput(validation_message(exc)) from exc

    def run(self, engine: Engine, arguments: Any, caller: Caller) -> BaseModel:
        """Parse, authorise and call the engine."""
        data = self.parse(arguments)
        caller.require(self.needed_scope(data))
        if caller.bound and not self.bound_ok:
            raise Forbidden(f"{self.name} is not available to a key bound to a scope or agent")
        return self.handler(engine, data, caller)


REGISTRY: dict[str, Operation] = {}


def operation(
    name: str,
    *,
    title: str,
    input: type[BaseModel],
    output: type[BaseModel],
    scope: KeyScope | Callable[[Any], KeyScope],
    **flags: Any,
) -> Callable[[Callable[[Engine, Any, Caller], BaseModel]], Callable[[Engine, Any, Caller], BaseModel]]:
    """Register the decorated handler; its docstring is the description agents read."""

    def register(fn: Callable[[Engine, Any, Caller], BaseModel]) -> Callable[..., BaseModel]:
        if name in REGISTRY:
            raise ValueError(f"operation {name!r} registered twice")
        doc = " ".join((fn.__doc__ or "").split())
        REGISTRY[name] = Operation(name, title, doc, input, output, fn, scope, **flags)
        return fn

    return register


def invoke(engine: Engine, name: str, arguments: Any, caller: Caller) -> BaseModel:
    """Run the operation ``name``; raises MemorydError subclasses on bad input or access."""
    try:
        op = REGISTRY[name]
    except KeyError:
        raise InvalidInput(f"unknown operation {name!r}") from None
    return op.run(engine, arguments, caller)


def tool_operations() -> dict[str, Operation]:
    """MCP tool name -> operation, aliases included."""
    return {tool: op for op in REGISTRY.values() for tool in op.tools}


def as_text(result: BaseModel) -> str:
    """A readable rendering of an operation's result (what an agent reads)."""
    render = getattr(result, "as_text", None)
    if callable(render):
        return render()
    return result.model_dump_json(indent=2, exclude_none=True)


def _check_text(value: Any, where: str) -> None:
    """Reject strings that are not valid Unicode (lone surrogates from JSON escapes)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidInput(f"{where or 'input'}: text is not valid Unicode") from None
    elif isinstance(value, Mapping):
        for key, item in value.items():
            _check_text(key, where)
            _check_text(item, f"{where}.{key}" if where else str(key))
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _check_text(item, f"{where}.{i}" if where else str(i))


def _decode_json_strings(model: type[BaseModel], data: dict[str, Any]) -> dict[str, Any]:
    """Accept JSON-encoded lists/objects where a list/object is expected.

    Some MCP clients (Claude Desktop) send ``"[\\"a\\"]"`` for a list argument.
    """
    for name, info in model.model_fields.items():
        value = data.get(name)
        if not isinstance(value, str) or not value.lstrip().startswith(("[", "{")):
            continue
        annotation = info.annotation
        kinds = {get_origin(a) or a for a in (get_args(annotation) or (annotation,))}
        if kinds & {list, dict} or any(isinstance(k, type) and issubclass(k, BaseModel) for k in kinds):
            try:
                data[name] = json.loads(value)
            except ValueError:
                pass
    return data


class Strict(BaseModel):
    """Base of input models: unknown fields are errors that name the field."""

    model_config = ConfigDict(extra="forbid")


# --- shared pieces ------------------------------------------------------------------
MemoryId = Field(min_length=1, max_length=256, description="The memory's id.")
Tags = Field(default=None, max_length=64, description="Tags (any match).")


class FilterFields(Strict):
    """Filters shared by search and list."""

    timeframe: Timeframe | None = Field(None, description="Only memories created within this window.")
    since: datetime | None = None
    until: datetime | None = None
    node_types: list[NodeType] | None = Field(None, description="Only these node types.")
    categories: list[str] | None = None
    tags: list[str] | None = Tags
    tags_mode: Literal["any", "all"] = "any"
    scope: str | None = Field(None, description="'user' or 'project:<name>'.")
    agent_id: str | None = Field(None, description="Only memories stored by this agent.")
    session_id: str | None = None
    tiers: list[Tier] | None = None
    include_superseded: bool = False

    def filters(self) -> dict[str, Any]:
        return self.model_dump(include=set(FilterFields.model_fields), exclude_defaults=True)


class SearchItem(BaseModel):
    """One search result, flattened for agents."""

    id: str
    content: str
    summary: str | None = None
    node_type: str
    category: str | None = None
    tags: list[str] = []
    score: float
    keyword_rank: int | None = None
    semantic_similarity: float | None = None
    retention: float | None = None
    association: bool = False
    importance: float
    severity: str | None = None
    scope: str
    agent_id: str | None = None
    source: str | None = None
    created_at: datetime
    updated_at: datetime
    memory: Memory | None = Field(None, description="The whole memory (detail_level=full).")

    @classmethod
    def of(cls, hit: SearchHit, detail: str = "summary") -> SearchItem:
        m = hit.memory
        limit = {"brief": 200, "summary": 1000}.get(detail)
        content = m.content if limit is None or len(m.content) <= limit else m.content[: limit - 1] + "…"
        return cls(
            id=m.id, content=content, summary=m.summary, node_type=m.node_type,
            category=m.category, tags=m.tags, score=round(hit.score, 6),
            keyword_rank=hit.keyword_rank, semantic_similarity=hit.semantic_similarity,
            retention=hit.retention, association=hit.association, importance=m.importance,
            severity=m.severity, scope=m.scope, agent_id=m.agent_id, source=m.source,
            created_at=m.created_at, updated_at=m.updated_at,
            memory=m if detail == "full" else None,
        )


class SearchOutput(BaseModel):
    """Search results, best first."""

    query: str
    total: int
    results: list[SearchItem]

    def as_text(self) -> str:
        if not self.results:
            return f"No memories found for {self.query!r}."
        lines = [f"Found {self.total} memories for {self.query!r}:"]
        for i, r in enumerate(self.results, 1):
            label = r.node_type + (f"/{r.category}" if r.category else "")
            tags = f" tags={','.join(r.tags)}" if r.tags else ""
            lines.append(f"{i}. [{r.score:.2f}] ({label}, {r.created_at:%Y-%m-%d}) {r.content}")
            lines.append(f"   id={r.id}{tags}")
        return "\n".join(lines)


def search_hits(engine: Engine, query: str, limit: int, filters: dict[str, Any], caller: Caller,
            **options: Any) -> list[SearchHit]:
    return engine.search(query, limit, filters=caller.read_filters(filters), **options)


# --- search -------------------------------------------------------------------------
class SearchInput(FilterFields):
    """Arguments of search."""

    query: str = Field(min_length=1, max_length=4096, description="What to look for (free text).")
    limit: int = Field(10, ge=1, le=100, description="How many results at most.")
    mode: Literal["hybrid", "keyword", "vector"] = Field(
        "hybrid", description="hybrid (BM25 + vectors), keyword (BM25 only) or vector."
    )
    min_score: float | None = Field(None, ge=0.0, le=1.0, description="Drop results scoring below.")
    mmr: bool = Field(False, description="Diversify results (maximal marginal relevance).")
    detail_level: Literal["brief", "summary", "full"] = Field(
        "summary", description="brief: 200 chars of content; summary: 1000; full: the whole memory."
    )
    session_key: str | None = Field(None, max_length=256, description="Caller's session (for the testing effect).")


@operation("search", title="Search memories", input=SearchInput, output=SearchOutput, scope="read",
           read_only=True, idempotent=True, tools=("search",))
def search(engine: Engine, data: SearchInput, caller: Caller) -> SearchOutput:
    """Search long-term memory by meaning and keywords (hybrid BM25 + vector search, fused and
    ranked by relevance, retention and recency). Use before answering anything that past
    sessions may have covered: user preferences, project decisions, earlier errors and fixes.
    Filters: timeframe (1h..all), node_types, tags, categories, scope, agent_id."""
    hits = search_hits(engine, data.query, data.limit, data.filters(), caller, mode=data.mode,
                   min_score=data.min_score, mmr=data.mmr, session_key=data.session_key)
    items = [SearchItem.of(h, data.detail_level) for h in hits]
    return SearchOutput(query=data.query, total=len(items), results=items)


# --- smart ingest -------------------------------------------------------------------
class IngestFields(Strict):
    """What a memory to ingest may carry."""

    node_type: NodeType = Field("fact", description="fact, preference, decision, pattern, event, error, ...")
    tags: list[str] = Field(default_factory=list, max_length=64)
    source: str | None = Field(None, max_length=1024, description="Where it came from.")
    summary: str | None = Field(None, max_length=2000)
    category: str | None = Field(None, max_length=128)
    subcategory: str | None = Field(None, max_length=128)
    importance: float | None = Field(None, ge=0.0, le=1.0)
    severity: Severity | None = None
    scope: str | None = Field(None, description="'user' (default) or 'project:<name>'.")
    session_id: str | None = Field(None, max_length=256)
    metadata: dict[str, Any] = Field(default_factory=dict)
    force_create: bool = Field(False, description="Store as new even if a near-duplicate exists.")
    allow_secrets: bool = Field(False, description="Store even if it looks like a credential.")


class IngestItem(IngestFields):
    content: str = Field(min_length=1, description="The memory, in one or a few sentences.")


class IngestInput(IngestFields):
    """Arguments of smart_ingest: one ``content`` or up to 50 ``items``."""

    content: str | None = Field(None, min_length=1, description="The memory to store.")
    items: list[IngestItem] | None = Field(None, min_length=1, max_length=50,
                                           description="A batch (instead of content).")

    @model_validator(mode="after")
    def _one_of(self) -> IngestInput:
        if (self.content is None) == (self.items is None):
            raise ValueError("give either content or items, not both or neither")
        return self


class IngestOutput(BaseModel):
    """What smart ingest decided for each item (decision etc. repeat the first item's)."""

    decision: str
    memory_id: str
    similarity: float | None = None
    superseded_id: str | None = None
    reason: str
    results: list[IngestResult]

    @classmethod
    def of(cls, results: list[IngestResult]) -> IngestOutput:
        first = results[0]
        return cls(decision=first.decision, memory_id=first.memory_id, similarity=first.similarity,
                   superseded_id=first.superseded_id, reason=first.reason, results=results)

    def as_text(self) -> str:
        lines = []
        for r in self.results:
            sim = f" (similarity {r.similarity:.2f})" if r.similarity is not None else ""
            lines.append(f"{r.decision.upper()} {r.memory_id}{sim}: {r.reason}")
        return "\n".join(lines)


def ingest_items(engine: Engine, items: list[dict[str, Any]], caller: Caller) -> list[IngestResult]:
    """Smart-ingest items (dicts of IngestItem fields) for a caller: scope/agent stamped on."""
    prepared = [caller.write_fields(item) for item in items]
    if not hasattr(engine, "ingest_many"):  # the engine predates smart ingest
        flat = [{k: v for k, v in p.items() if k not in ("force_create", "allow_secrets")} for p in prepared]
        memories = engine.add_many(flat, actor=caller.actor())
        return [IngestResult(decision="create", memory_id=m.id, reason="stored", memory=m)
                for m in memories]
    return engine.ingest_many(prepared, actor=caller.actor())


@operation("smart_ingest", title="Store a memory (smart)", input=IngestInput, output=IngestOutput,
           scope="write", tools=("smart_ingest", "ingest"))
def smart_ingest(engine: Engine, data: IngestInput, caller: Caller) -> IngestOutput:
    """Store something worth remembering. Compares it with what is already stored and decides:
    create a new memory, update or reinforce a near-duplicate, supersede a contradicted one, or
    merge several. Store durable facts, preferences, decisions and lessons, one idea per memory.
    Pass items (up to 50) to store a batch."""
    shared = data.model_dump(exclude={"content", "items"}, exclude_none=True)
    if data.items is not None:
        items = [{**shared, **item.model_dump(exclude_unset=True)} for item in data.items]
    else:
        items = [{**shared, "content": data.content}]
    return IngestOutput.of(ingest_items(engine, items, caller))


# --- one memory ---------------------------------------------------------------------
class MemoryActionInput(Strict):
    """Arguments of the memory tool."""

    action: Literal["get", "delete", "state", "promote", "demote", "edit", "history", "purge"]
    id: str = MemoryId
    reason: str | None = Field(None, max_length=2000, description="Why (promote, demote).")
    content: str | None = Field(None, min_length=1, description="New content (edit).")
    summary: str | None = None
    node_type: NodeType | None = None
    category: str | None = Field(None, max_length=128)
    tags: list[str] | None = Field(None, max_length=64)
    importance: float | None = Field(None, ge=0.0, le=1.0)
    severity: Severity | None = None
    metadata: dict[str, Any] | None = None

    def changes(self) -> dict[str, Any]:
        return self.model_dump(exclude={"action", "id", "reason"}, exclude_none=True)


class MemoryActionOutput(BaseModel):
    """The result of a memory action: the memory, its state or its history."""

    action: str
    id: str
    memory: Memory | None = None
    state: MemoryStateReport | None = None
    history: list[HistoryEntry] | None = None
    deleted: bool = False

    def as_text(self) -> str:
        if self.deleted:
            return f"Deleted memory {self.id}."
        if self.history is not None:
            return "\n".join(f"#{h.seq} {h.at:%Y-%m-%d %H:%M} {h.operation}"
                             f"{' by ' + h.actor if h.actor else ''}" for h in self.history)
        if self.state is not None:
            s = self.state
            return (f"Memory {s.id}: {s.state}, tier {s.tier}, retention {s.retention:.2f}, "
                    f"stability {s.stability_days:.1f} days, accessed {s.access_count} times")
        assert self.memory is not None
        m = self.memory
        return f"[{m.node_type}] {m.content}\nid={m.id} tags={','.join(m.tags)} updated={m.updated_at:%Y-%m-%d}"


_MEMORY_SCOPES: dict[str, KeyScope] = {"get": "read", "state": "read", "history": "read",
                                       "purge": "admin"}


def _get(engine: Engine, memory_id: str, caller: Caller) -> Memory:
    return caller.visible(engine.get(memory_id))


@operation("memory", title="Read or change one memory", input=MemoryActionInput,
           output=MemoryActionOutput, scope=lambda d: _MEMORY_SCOPES.get(d.action, "write"),
           destructive=True, tools=("memory",))
def memory_action(engine: Engine, data: MemoryActionInput, caller: Caller) -> MemoryActionOutput:
    """Act on one memory by id. get: the memory; state: how strong it is now (active, dormant,
    silent); history: every change; promote: it was right or helpful (strengthens it); demote: it
    was wrong or stale (weakens it, keeps it); edit: change content/tags/type/importance;
    delete: remove it (history keeps a tombstone); purge: remove it and scrub its history (admin)."""
    memory = _get(engine, data.id, caller)
    actor, out = caller.actor(), MemoryActionOutput(action=data.action, id=data.id)
    if data.action == "get":
        out.memory = memory
    elif data.action == "state":
        out.state = engine.memory_state(data.id)
    elif data.action == "history":
        out.history = engine.history(data.id)
    elif data.action == "promote":
        out.memory = engine.promote(data.id, reason=data.reason, actor=actor)
    elif data.action == "demote":
        out.memory = engine.demote(data.id, reason=data.reason, actor=actor)
    elif data.action == "edit":
        changes = data.changes()
        if not changes:
            raise InvalidInput("edit needs at least one of content, summary, node_type, "
                               "category, tags, importance, severity, metadata")
        out.memory = engine.update(data.id, actor=actor, **changes)
    elif data.action == "delete":
        engine.delete(data.id, actor=actor)
        out.deleted = True
    else:  # purge
        engine.purge(data.id, actor=actor)
        out.deleted = True
    return out


class FeedbackInput(Strict):
    """Arguments of promote and demote."""

    id: str = MemoryId
    reason: str | None = Field(None, max_length=2000)


@operation("promote", title="Promote a memory", input=FeedbackInput, output=Memory, scope="write")
def promote(engine: Engine, data: FeedbackInput, caller: Caller) -> Memory:
    """The memory was right or helpful: strengthen it."""
    _get(engine, data.id, caller)
    return engine.promote(data.id, reason=data.reason, actor=caller.actor())


@operation("demote", title="Demote a memory", input=FeedbackInput, output=Memory, scope="write")
def demote(engine: Engine, data: FeedbackInput, caller: Caller) -> Memory:
    """The memory was wrong or stale: weaken it (it is kept, and can be promoted again)."""
    _get(engine, data.id, caller)
    return engine.demote(data.id, reason=data.reason, actor=caller.actor())


# --- codebase -----------------------------------------------------------------------
class CodebaseInput(Strict):
    """Arguments of the codebase tool."""

    action: Literal["remember_pattern", "remember_decision", "get_context"]
    codebase: str = Field(min_length=1, max_length=128, description="The codebase (repository) name.")
    name: str | None = Field(None, max_length=200, description="Pattern name (remember_pattern).")
    description: str | None = Field(None, max_length=20_000, description="Pattern description.")
    decision: str | None = Field(None, max_length=20_000, description="The decision (remember_decision).")
    rationale: str | None = Field(None, max_length=20_000)
    alternatives: list[str] = Field(default_factory=list, max_length=50)
    files: list[str] = Field(default_factory=list, max_length=200, description="Files it concerns.")
    limit: int = Field(10, ge=1, le=200, description="get_context: how many of each kind.")

    @model_validator(mode="after")
    def _needs(self) -> CodebaseInput:
        if self.action == "remember_pattern" and not (self.name and self.description):
            raise ValueError("remember_pattern needs name and description")
        if self.action == "remember_decision" and not self.decision:
            raise ValueError("remember_decision needs decision")
        return self


class CodebaseOutput(BaseModel):
    action: str
    memory: Memory | None = None
    context: CodebaseContext | None = None

    def as_text(self) -> str:
        if self.memory is not None:
            return f"Stored {self.memory.node_type} {self.memory.id}: {self.memory.content}"
        assert self.context is not None
        c = self.context
        lines = [f"Codebase {c.codebase}: {len(c.patterns)} patterns, {len(c.decisions)} decisions"]
        lines += [f"- pattern: {m.content}" for m in c.patterns]
        lines += [f"- decision: {m.content}" for m in c.decisions]
        lines += [f"- intention ({i.priority}): {i.description}" for i in c.intentions]
        return "\n".join(lines)


def _codebase_scope(caller: Caller, codebase: str) -> None:
    if caller.memory_scope is not None and caller.memory_scope != f"project:{codebase}":
        raise Forbidden(f"this key is limited to scope {caller.memory_scope!r}")


@operation("codebase", title="Codebase patterns and decisions", input=CodebaseInput,
           output=CodebaseOutput, scope=lambda d: "read" if d.action == "get_context" else "write",
           tools=("codebase",))
def codebase(engine: Engine, data: CodebaseInput, caller: Caller) -> CodebaseOutput:
    """Remember how a codebase works. remember_pattern: a code pattern or convention (name,
    description, files); remember_decision: an architectural decision with its rationale and the
    alternatives considered; get_context: the patterns, decisions and due intentions for a
    codebase, optionally only those touching some files. Call get_context when starting work."""
    _codebase_scope(caller, data.codebase)
    actor = caller.actor()
    if data.action == "remember_pattern":
        memory = engine.remember_pattern(data.name, data.description, data.files, data.codebase,
                                         actor=actor)
        return CodebaseOutput(action=data.action, memory=memory)
    if data.action == "remember_decision":
        memory = engine.remember_decision(data.decision, data.rationale, data.alternatives,
                                          data.files, data.codebase, actor=actor)
        return CodebaseOutput(action=data.action, memory=memory)
    context = engine.codebase_context(data.codebase, files=data.files or None, limit=data.limit)
    if caller.bound_agent is not None:
        keep = lambda ms: [m for m in ms if m.agent_id == caller.bound_agent]  # noqa: E731
        context = context.model_copy(update={"patterns": keep(context.patterns),
                                             "decisions": keep(context.decisions)})
    return CodebaseOutput(action=data.action, context=context)


# --- intentions ---------------------------------------------------------------------
class IntentionCheckContext(Strict):
    codebase: str | None = None
    files: list[str] = Field(default_factory=list, max_length=200)
    topic: str | None = None
    text: str | None = Field(None, max_length=20_000)
    event: str | None = None


class IntentionInput(Strict):
    """Arguments of the intention tool."""

    action: Literal["set", "check", "update", "list"]
    description: str | None = Field(None, max_length=4000, description="What to do (set).")
    trigger: IntentionTrigger | None = Field(
        None, description="set: {type: time, at | in_minutes} | {type: context, codebase, "
        "file_pattern, topic} | {type: event, event}.")
    priority: Priority = "normal"
    deadline: datetime | None = None
    id: str | None = Field(None, max_length=256, description="The intention (update).")
    status: str | None = Field(
        None, description="update: complete | snooze | cancel. list: active, snoozed, completed, "
        "cancelled, fired or all (default: open ones).")
    snooze_minutes: float | None = Field(None, gt=0, le=525_600)
    context: IntentionCheckContext | None = Field(None, description="check: what the agent is doing now.")

    @model_validator(mode="after")
    def _needs(self) -> IntentionInput:
        if self.action == "set" and not (self.description and self.trigger):
            raise ValueError("set needs description and trigger")
        if self.action == "update":
            if not self.id:
                raise ValueError("update needs id")
            if self.status not in ("complete", "snooze", "cancel"):
                raise ValueError("update needs status complete, snooze or cancel")
        return self


class IntentionOutput(BaseModel):
    action: str
    intention: Intention | None = None
    intentions: list[Intention] = []

    def as_text(self) -> str:
        if self.intention is not None:
            i = self.intention
            due = f", due {i.due_at:%Y-%m-%d %H:%M}" if i.due_at else ""
            return f"Intention {i.id} ({i.status}, {i.priority}{due}): {i.description}"
        if not self.intentions:
            return "No intentions."
        return "\n".join(f"- [{i.priority}] {i.description} (id={i.id}, {i.status})"
                         for i in self.intentions)


def visible_intentions(caller: Caller, intentions: list[Intention]) -> list[Intention]:
    return [i for i in intentions
            if (caller.memory_scope is None or i.scope == caller.memory_scope)
            and (caller.bound_agent is None or i.agent_id == caller.bound_agent)]


@operation("intention", title="Prospective memory", input=IntentionInput, output=IntentionOutput,
           scope=lambda d: "write" if d.action in ("set", "update") else "read",
           tools=("intention",))
def intention(engine: Engine, data: IntentionInput, caller: Caller) -> IntentionOutput:
    """Remember to do something later. set: a description plus a trigger (a time: at or
    in_minutes; a context: codebase, file_pattern, topic; or an event); check: the intentions
    due now or matching the current context; update: complete, snooze or cancel one by id;
    list: intentions by status."""
    out = IntentionOutput(action=data.action)
    if data.action == "set":
        out.intention = engine.set_intention(
            data.description, data.trigger, priority=data.priority, deadline=data.deadline,
            agent_id=caller.agent_id, scope=caller.memory_scope or "user",
        )
    elif data.action == "check":
        context = data.context.model_dump() if data.context else {}
        out.intentions = visible_intentions(caller, engine.check_intentions(context))
    elif data.action == "update":
        visible = visible_intentions(caller, engine.list_intentions("all"))
        if not any(i.id == data.id for i in visible):
            raise InvalidInput(f"no intention with id {data.id!r}")
        out.intention = engine.update_intention(data.id, data.status,
                                                snooze_minutes=data.snooze_minutes)
    else:
        out.intentions = visible_intentions(caller, engine.list_intentions(data.status))
    return out


# --- AgentOS names: memory_store / memory_recall ------------------------------------
class MemoryStoreInput(Strict):
    """Arguments of memory_store (the AgentOS / OpenClaw memory tool)."""

    summary: str | None = Field(None, max_length=2000, description="One line: what to remember.")
    detail: str | None = Field(None, description="The full text (defaults to summary).")
    text: str | None = Field(None, description="Alias of detail (memory-lancedb's name).")
    category: str | None = Field(None, max_length=128, description="e.g. conversation, diagnosis, error.")
    tags: list[str] = Field(default_factory=list, max_length=64)
    importance: float | None = Field(None, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _some_text(self) -> MemoryStoreInput:
        if not any(v and v.strip() for v in (self.summary, self.detail, self.text)):
            raise ValueError("give summary, detail or text")
        return self


@operation("memory_store", title="Store a memory (AgentOS)", input=MemoryStoreInput,
           output=IngestOutput, scope="write", tools=("memory_store",))
def memory_store(engine: Engine, data: MemoryStoreInput, caller: Caller) -> IngestOutput:
    """Explicitly store something important in long-term memory: a summary line plus optional
    detail, a category and tags. Near-duplicates are merged rather than stored twice."""
    content = (data.detail or data.text or data.summary or "").strip()
    summary = data.summary.strip() if data.summary and data.summary.strip() != content else None
    item = {"content": content, "summary": summary, "category": data.category, "tags": data.tags,
            "importance": data.importance}
    return IngestOutput.of(ingest_items(engine, [item], caller))


class MemoryRecallInput(Strict):
    """Arguments of memory_recall (the AgentOS / OpenClaw memory tool)."""

    query: str = Field(min_length=1, max_length=4096, description="What to search for.")
    timeframe: Timeframe = Field("all", description="1h, 24h, 7d, 30d, 90d or all.")
    category: str | None = Field(None, max_length=128,
                                 description="Filter: a category or node type; 'system.*' globs.")
    limit: int = Field(6, ge=1, le=50)


@operation("memory_recall", title="Recall memories (AgentOS)", input=MemoryRecallInput,
           output=SearchOutput, scope="read", read_only=True, idempotent=True,
           tools=("memory_recall",))
def memory_recall(engine: Engine, data: MemoryRecallInput, caller: Caller) -> SearchOutput:
    """Search memory for past events, diagnoses, decisions, errors and preferences, optionally
    within a timeframe (1h..90d, all) and a category (e.g. error, diagnosis, system.*)."""
    filters = {} if data.timeframe == "all" else {"timeframe": data.timeframe}
    fetch = data.limit if data.category is None else min(100, data.limit * 5)
    hits = search_hits(engine, data.query, fetch, filters, caller)
    if data.category is not None:
        pattern = data.category.lower()
        hits = [h for h in hits
                if fnmatch.fnmatchcase((h.memory.category or "").lower(), pattern)
                or h.memory.node_type == pattern][: data.limit]
    items = [SearchItem.of(h) for h in hits]
    return SearchOutput(query=data.query, total=len(items), results=items)


# --- graph, maintenance, status -----------------------------------------------------
class ExploreInput(Strict):
    id: str = MemoryId
    depth: int = Field(2, ge=1, le=3, description="How many hops.")


class ExploreOutput(Neighbourhood):
    def as_text(self) -> str:
        lines = [f"{self.center.id}: {self.center.content}"]
        lines += [f"{'  ' * n.depth}-{n.edge_type}({n.weight:.2f})-> {n.memory.id}: {n.memory.content}"
                  for n in self.neighbours]
        return "\n".join(lines)


@operation("explore", title="Explore connections", input=ExploreInput, output=ExploreOutput,
           scope="read", read_only=True, idempotent=True, tools=("explore",))
def explore(engine: Engine, data: ExploreInput, caller: Caller) -> ExploreOutput:
    """The memories connected to one memory (related, caused_by, supersedes, ...), up to 3 hops."""
    _get(engine, data.id, caller)
    hood = engine.explore(data.id, depth=data.depth)
    if caller.bound:
        seen = {n.memory.id for n in hood.neighbours if _is_visible(caller, n.memory)}
        seen.add(hood.center.id)
        hood = hood.model_copy(update={
            "neighbours": [n for n in hood.neighbours if n.memory.id in seen],
            "edges": [e for e in hood.edges if e.source_id in seen and e.target_id in seen],
        })
    return ExploreOutput.model_validate(hood.model_dump())


def _is_visible(caller: Caller, memory: Memory) -> bool:
    try:
        caller.visible(memory)
    except MemoryNotFound:
        return False
    return True


class ConsolidateInput(Strict):
    dry_run: bool = Field(False, description="Report what would change without changing anything.")


@operation("consolidate", title="Consolidate memory", input=ConsolidateInput,
           output=ConsolidationReport, scope=lambda d: "read" if d.dry_run else "write",
           bound_ok=False, tools=("consolidate",))
def consolidate(engine: Engine, data: ConsolidateInput, caller: Caller) -> ConsolidationReport:
    """Tidy memory like sleep does: move faded memories to colder tiers, merge near-duplicates,
    link related memories. Never deletes (merged memories are archived). Use dry_run to preview."""
    return engine.consolidate(dry_run=data.dry_run)


class GcInput(Strict):
    min_retention: float = Field(0.1, ge=0.0, le=1.0)
    max_age_days: float | None = Field(None, gt=0)
    dry_run: bool = True


@operation("gc", title="Garbage-collect faded memories", input=GcInput, output=GcReport,
           scope="admin", destructive=True, bound_ok=False)
def gc(engine: Engine, data: GcInput, caller: Caller) -> GcReport:
    """Delete memories whose retention fell below min_retention (dry run by default)."""
    return engine.gc(min_retention=data.min_retention, max_age_days=data.max_age_days,
                     dry_run=data.dry_run, actor=caller.actor())


class NoInput(Strict):
    """No arguments."""


class StatsOutput(BaseModel):
    """Counts and facts about the store and the embedder."""

    model_config = ConfigDict(extra="allow")

    memories: int
    by_node_type: dict[str, int] = {}
    by_tier: dict[str, int] = {}
    embedding_model: str | None = None
    embedder: dict[str, Any] = {}


@operation("stats", title="Memory statistics", input=NoInput, output=StatsOutput, scope="read",
           read_only=True, idempotent=True, bound_ok=False, tools=("stats",))
def stats(engine: Engine, data: NoInput, caller: Caller) -> StatsOutput:
    """How many memories there are, by type and tier, and which embedding model is in use."""
    return StatsOutput.model_validate(engine.stats())


class HealthOutput(BaseModel):
    """Whether the store answers and whether the embedding model is loaded."""

    status: Literal["ok", "unhealthy"]
    version: str
    store: dict[str, Any]
    embedder: dict[str, Any]


def health_report(engine: Engine) -> HealthOutput:
    """Deep health: the store answers a query; the embedder's state is reported."""
    embedder = {"model_id": engine.embedder.model_id, "loaded": engine.embedder.loaded}
    try:
        store = engine.store.health()
    except MemorydError as exc:
        return HealthOutput(status="unhealthy", version=__version__,
                            store={"ok": False, "error": str(exc)}, embedder=embedder)
    return HealthOutput(status="ok", version=__version__, store=store, embedder=embedder)


@operation("health", title="Health", input=NoInput, output=HealthOutput, scope="read",
           read_only=True, idempotent=True, tools=("health",))
def health(engine: Engine, data: NoInput, caller: Caller) -> HealthOutput:
    """Whether memoryd's store answers and its embedding model is loaded."""
    return health_report(engine)


# --- resources (REST /api/v1) --------------------------------------------------------
class MemoryCreateInput(Strict):
    """A memory to store as given (no similarity gating)."""

    content: str = Field(min_length=1)
    summary: str | None = None
    node_type: NodeType = "fact"
    category: str | None = Field(None, max_length=128)
    subcategory: str | None = Field(None, max_length=128)
    tags: list[str] = Field(default_factory=list, max_length=64)
    source: str | None = Field(None, max_length=1024)
    session_id: str | None = Field(None, max_length=256)
    scope: str | None = None
    importance: float = Field(0.5, ge=0.0, le=1.0)
    severity: Severity | None = None
    created_at: datetime | None = None
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


@operation("memory_create", title="Create a memory", input=MemoryCreateInput, output=Memory,
           scope="write")
def memory_create(engine: Engine, data: MemoryCreateInput, caller: Caller) -> Memory:
    """Store one memory exactly as given (use smart_ingest to deduplicate)."""
    fields = caller.write_fields(data.model_dump(exclude_none=True))
    return engine.add(fields.pop("content"), actor=caller.actor(), **fields)


class MemoryIdInput(Strict):
    id: str = MemoryId


@operation("memory_get", title="Get a memory", input=MemoryIdInput, output=Memory, scope="read",
           read_only=True, idempotent=True)
def memory_get(engine: Engine, data: MemoryIdInput, caller: Caller) -> Memory:
    """One memory by id."""
    return _get(engine, data.id, caller)


class MemoryUpdateInput(Strict):
    id: str = MemoryId
    content: str | None = Field(None, min_length=1)
    summary: str | None = None
    node_type: NodeType | None = None
    category: str | None = Field(None, max_length=128)
    subcategory: str | None = Field(None, max_length=128)
    tags: list[str] | None = Field(None, max_length=64)
    source: str | None = Field(None, max_length=1024)
    importance: float | None = Field(None, ge=0.0, le=1.0)
    severity: Severity | None = None
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    metadata: dict[str, Any] | None = None


@operation("memory_update", title="Update a memory", input=MemoryUpdateInput, output=Memory,
           scope="write")
def memory_update(engine: Engine, data: MemoryUpdateInput, caller: Caller) -> Memory:
    """Change fields of a memory (new content is re-embedded); returns the new version."""
    _get(engine, data.id, caller)
    changes = data.model_dump(exclude={"id"}, exclude_unset=True)
    return engine.update(data.id, actor=caller.actor(), **changes)


class MemoryDeleteInput(Strict):
    id: str = MemoryId
    purge: bool = Field(False, description="Also scrub the content from history (admin).")


class DeleteOutput(BaseModel):
    id: str
    deleted: bool
    purged: bool = False


@operation("memory_delete", title="Delete a memory", input=MemoryDeleteInput, output=DeleteOutput,
           scope=lambda d: "admin" if d.purge else "write", destructive=True, idempotent=True)
def memory_delete(engine: Engine, data: MemoryDeleteInput, caller: Caller) -> DeleteOutput:
    """Delete a memory with its vector and edges; history keeps a tombstone unless purged."""
    _get(engine, data.id, caller)
    if data.purge:
        engine.purge(data.id, actor=caller.actor())
    else:
        engine.delete(data.id, actor=caller.actor())
    return DeleteOutput(id=data.id, deleted=True, purged=data.purge)


class MemoryListInput(FilterFields):
    limit: int = Field(50, ge=1, le=1000)
    offset: int = Field(0, ge=0, le=10_000_000)
    order: Literal["created_desc", "created_asc", "updated_desc"] = "created_desc"


class MemoryPage(BaseModel):
    items: list[Memory]
    total: int
    limit: int
    offset: int
    next_offset: int | None


@operation("memory_list", title="List memories", input=MemoryListInput, output=MemoryPage,
           scope="read", read_only=True, idempotent=True)
def memory_list(engine: Engine, data: MemoryListInput, caller: Caller) -> MemoryPage:
    """Memories matching the filters, newest first, paged by limit and offset."""
    filters = caller.read_filters(data.filters())
    items = engine.list(filters, limit=data.limit, offset=data.offset, order=data.order)
    total = engine.count(filters) if hasattr(engine, "count") else None
    if total is None:
        from memoryd.models import SearchFilters

        total = engine.store.count(SearchFilters.model_validate(filters), now=engine.clock())
    more = data.offset + len(items) < total
    return MemoryPage(items=items, total=total, limit=data.limit, offset=data.offset,
                      next_offset=data.offset + len(items) if more else None)


class HistoryOutput(BaseModel):
    id: str
    entries: list[HistoryEntry]


@operation("history", title="History of a memory", input=MemoryIdInput, output=HistoryOutput,
           scope="read", read_only=True, idempotent=True)
def history(engine: Engine, data: MemoryIdInput, caller: Caller) -> HistoryOutput:
    """Every recorded change of a memory, oldest first (deleted memories keep theirs)."""
    entries = engine.history(data.id)
    if caller.bound:
        memory = engine.store.get(data.id)
        if memory is None or not _is_visible(caller, memory):
            raise MemoryNotFound(data.id)
    return HistoryOutput(id=data.id, entries=entries)


# --- keys (admin) -------------------------------------------------------------------
class KeyInfo(BaseModel):
    """An API key as shown to people: never the secret or its hash."""

    id: str
    label: str
    prefix: str
    scopes: list[str]
    memory_scope: str | None
    agent_id: str | None
    created_at: datetime
    last_used: datetime | None
    revoked_at: datetime | None

    @classmethod
    def of(cls, key: ApiKey) -> KeyInfo:
        return cls.model_validate(key.model_dump(exclude={"key_hash"}))


class KeyList(BaseModel):
    keys: list[KeyInfo]


class KeyCreateInput(Strict):
    label: str = Field(min_length=1, max_length=128)
    scopes: list[Literal["read", "write", "admin"]] = Field(default=["read", "write"], min_length=1)
    memory_scope: str | None = Field(None, description="Bind the key to 'user' or 'project:<name>'.")
    agent_id: str | None = Field(None, min_length=1, max_length=256, description="Bind the key to an agent.")


class KeyCreated(BaseModel):
    key: KeyInfo
    secret: str = Field(description="The key itself: shown once, store it now.")


class KeyIdInput(Strict):
    id: str = Field(min_length=1, max_length=64)


@operation("keys_list", title="List API keys", input=NoInput, output=KeyList, scope="admin",
           read_only=True, idempotent=True, bound_ok=False)
def keys_list(engine: Engine, data: NoInput, caller: Caller) -> KeyList:
    """Every API key (label, prefix, scopes, last use); never the secrets."""
    from memoryd import keys

    return KeyList(keys=[KeyInfo.of(k) for k in keys.list_keys(engine.store)])


@operation("keys_create", title="Create an API key", input=KeyCreateInput, output=KeyCreated,
           scope="admin", bound_ok=False)
def keys_create(engine: Engine, data: KeyCreateInput, caller: Caller) -> KeyCreated:
    """Create an API key; the secret is in the response and is never shown again."""
    from memoryd import keys

    made = keys.create_key(engine.store, data.label, scopes=data.scopes,
                           memory_scope=data.memory_scope, agent_id=data.agent_id)
    return KeyCreated(key=KeyInfo.of(made.key), secret=made.secret)


@operation("keys_revoke", title="Revoke an API key", input=KeyIdInput, output=KeyInfo,
           scope="admin", destructive=True, idempotent=True, bound_ok=False)
def keys_revoke(engine: Engine, data: KeyIdInput, caller: Caller) -> KeyInfo:
    """Revoke an API key by id or prefix; it stops working immediately."""
    from memoryd import keys

    return KeyInfo.of(keys.revoke_key(engine.store, data.id))


# The gateway operations (recall, capture, flush, session_warm) register themselves.
from memoryd import gateway as _gateway  # noqa: E402,F401  (import for its registrations)

__all__ = ["Caller", "Forbidden", "Operation", "REGISTRY", "as_text", "invoke", "operation",
           "tool_operations", "TIMEFRAMES", "field"]
