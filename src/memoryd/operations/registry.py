"""The operation registry: every operation an agent or program can call, defined once.

Each :class:`Operation` names an engine call with a typed input model, a typed output
model, the key scope it needs (``read`` < ``write`` < ``admin``) and how it behaves
(read-only, destructive, idempotent). The MCP server (``memoryd.mcp``) turns the
operations with ``tools`` into MCP tools; the REST app (``memoryd.api``) binds them to
routes. Neither face holds logic: they parse, call :func:`invoke`, and format.

Who calls is a :class:`Caller`: its scopes, optionally a memory scope (``project:x``)
and/or agent it is bound to and domains it is limited to, and the domains it looks in by
default (``X-Memoryd-Domain``). :meth:`Operation.run` checks the scopes and
hands the handler an engine acting for the caller (``engine.acting_as``), so a bound caller
sees and writes only its own memories on every path, for every face.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, get_args, get_origin

from pydantic import BaseModel, Field, ValidationError
from pydantic_core import to_json

from memoryd.errors import Forbidden, InvalidInput, validation_message
from memoryd.keys import KeyScope, grants
from memoryd.models import ApiKey, Strict, check_domain_name
from memoryd.operations.arguments import check_arguments
from memoryd.operations.integers import whole_numbers
from memoryd.operations.screening import screened
from memoryd.operations.timings import TIMINGS

if TYPE_CHECKING:  # the engine (and numpy) load on first use: `memoryd mcp` starts faster
    from memoryd.engine import Access, Engine
    from memoryd.store.base import Actor

ALL_SCOPES: frozenset[str] = frozenset({"read", "write", "admin"})
# Where HTTP auth leaves the verified Caller in the ASGI scope (read by routes and MCP tools).
CALLER_SCOPE_KEY = "memoryd.caller"


# --- who calls ----------------------------------------------------------------------
@dataclass(frozen=True)
class Caller:
    """Who is calling: scopes, the key (if any) and the scope/agent it is bound to.

    ``agent_id`` is the effective agent: the key's bound agent, else the ``X-Agent-Id``
    the client sent. It is stamped on writes and recorded in history; it never widens
    what the caller may see. ``domains`` are the key's domains (a binding);
    ``default_domains`` the ``X-Memoryd-Domain`` the client sent (a default, within them).
    """

    scopes: frozenset[str] = ALL_SCOPES
    name: str = "local"
    key_id: str | None = None
    memory_scope: str | None = None
    bound_agent: str | None = None
    agent_id: str | None = None
    key_label: str | None = None
    domains: tuple[str, ...] | None = None
    default_domains: tuple[str, ...] | None = None

    @classmethod
    def local(cls, name: str = "local", agent_id: str | None = None) -> Caller:
        """A trusted local caller (stdio MCP, CLI): every scope, nothing bound."""
        return cls(name=name, agent_id=agent_id)

    @classmethod
    def anonymous(cls, agent_id: str | None = None, domain_header: str | None = None) -> Caller:
        """An unauthenticated HTTP caller (only with MEMORYD_ALLOW_ANONYMOUS): read and write."""
        return cls(scopes=frozenset({"read", "write"}), name="anonymous", agent_id=agent_id,
                   default_domains=domain_names(domain_header))

    @classmethod
    def from_key(cls, key: ApiKey, agent_header: str | None = None,
                 domain_header: str | None = None) -> Caller:
        """The caller a verified key stands for; a key bound to an agent cannot act as another,
        a key limited to domains cannot look in others by default."""
        if key.agent_id and agent_header and agent_header != key.agent_id:
            raise Forbidden(
                f"this key is bound to agent {key.agent_id!r}; another X-Agent-Id is not "
                "allowed"
            )
        defaults = domain_names(domain_header)
        outside = sorted(set(defaults or ()) - set(key.domains or defaults or ()))
        if outside:
            raise Forbidden(f"this key is limited to domains {', '.join(key.domains or [])}; "
                            f"X-Memoryd-Domain {', '.join(outside)} is not allowed")
        return cls(
            scopes=frozenset(key.scopes),
            name=f"key:{key.label}",
            key_id=key.id,
            key_label=key.label,
            memory_scope=key.memory_scope,
            bound_agent=key.agent_id,
            agent_id=key.agent_id or agent_header,
            domains=tuple(key.domains) if key.domains else None,
            default_domains=defaults,
        )

    @property
    def bound(self) -> bool:
        """Whether the caller is limited to one memory scope or agent, or to some domains."""
        return (self.memory_scope is not None or self.bound_agent is not None
                or self.domains is not None)

    def actor(self) -> Actor:
        """The actor recorded in history for this caller's changes."""
        from memoryd.store.base import Actor

        return Actor(name=self.name, agent_id=self.agent_id, key_label=self.key_label)

    def require(self, needed: KeyScope) -> None:
        """Raise Forbidden unless the caller's scopes grant ``needed``."""
        if not grants(self.scopes, needed):
            have = ", ".join(sorted(self.scopes)) or "none"
            raise Forbidden(f"this operation needs the {needed!r} scope; the key has {have}")

    def access(self) -> Access:
        """What the caller may see and change: its key's bindings."""
        from memoryd.engine import Access

        return Access(scope=self.memory_scope, agent_id=self.bound_agent,
                      domains=frozenset(self.domains) if self.domains else None,
                      default_domains=self.default_domains)


def domain_names(header: str | None) -> tuple[str, ...] | None:
    """The domains of an ``X-Memoryd-Domain`` header (comma-separated names); InvalidInput
    naming a malformed one."""
    names = [part.strip() for part in (header or "").split(",") if part.strip()]
    if not names:
        return None
    try:
        return tuple(dict.fromkeys(check_domain_name(n) for n in names))
    except ValueError as exc:
        raise InvalidInput(f"X-Memoryd-Domain: {exc}") from None


# --- the registry -------------------------------------------------------------------
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
    # Fields not screened for secrets here (memoryd.operations.screening says which and why).
    unscreened: tuple[str, ...] = ()

    def needed_scope(self, data: BaseModel) -> KeyScope:
        return self.scope(data) if callable(self.scope) else self.scope

    def parse(self, arguments: BaseModel | Mapping[str, Any] | None) -> BaseModel:
        """Validate raw arguments into the input model; InvalidInput names the bad fields."""
        try:
            return self.validate(arguments)
        except ValidationError as exc:
            raise InvalidInput(validation_message(exc)) from exc

    def validate(self, arguments: BaseModel | Mapping[str, Any] | None) -> BaseModel:
        """The input model of raw arguments, read as JSON is read (strictly: ``true`` is not a
        number, ``0`` not a date, ``"5"`` not an integer). InvalidInput for text with NUL or
        invalid Unicode and for numbers no store can hold (:mod:`.arguments`); pydantic's
        ValidationError for the rest, so that a face can say where each error is."""
        if isinstance(arguments, self.input):
            check_arguments(arguments)
            return arguments
        if isinstance(arguments, BaseModel):
            arguments = arguments.model_dump(exclude_unset=True)
        if arguments is not None and not isinstance(arguments, Mapping):
            raise InvalidInput("input: must be an object of named arguments")
        data = _decode_json_strings(self.input, dict(arguments or {}))
        check_arguments(data)
        data = whole_numbers(self.input, data)  # 5.0 is an integer in JSON
        return self.input.model_validate_json(to_json(data), strict=True)

    def run(self, engine: Engine, arguments: Any, caller: Caller) -> BaseModel:
        """Parse, authorise, screen for secrets and call the handler with the engine acting for
        the caller (the call's duration is recorded in
        :data:`~memoryd.operations.timings.TIMINGS`)."""
        data = self.parse(arguments)
        caller.require(self.needed_scope(data))
        if caller.bound and not self.bound_ok:
            raise Forbidden(f"{self.name} is not available to a key bound to a scope, agent or "
                            "domains")
        started = time.perf_counter()
        try:
            data = screened(data, self.unscreened, engine)  # redacted text may break a rule
            return self.handler(engine.acting_as(caller.actor(), caller.access()), data, caller)
        except ValidationError as exc:  # a model built from the input inside the handler
            raise InvalidInput(validation_message(exc)) from exc
        finally:
            TIMINGS.record(self.name, time.perf_counter() - started)


REGISTRY: dict[str, Operation] = {}


def operation(
    name: str,
    *,
    title: str,
    input: type[BaseModel],
    output: type[BaseModel],
    scope: KeyScope | Callable[[Any], KeyScope],
    **flags: Any,
) -> Callable[
    [Callable[[Engine, Any, Caller], BaseModel]], Callable[[Engine, Any, Caller], BaseModel]
]:
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


def as_text(result: BaseModel) -> str:
    """A readable rendering of an operation's result (what an agent reads)."""
    render = getattr(result, "as_text", None)
    if callable(render):
        return render()
    return result.model_dump_json(indent=2, exclude_none=True)


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
        if kinds & {list, dict} or any(
            isinstance(k, type) and issubclass(k, BaseModel) for k in kinds
        ):
            try:
                data[name] = json.loads(value)
            except ValueError:
                pass
    return data


class NoInput(Strict):
    """No arguments."""


MemoryId = Field(min_length=1, max_length=256, description="The memory's id.")
