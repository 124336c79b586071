"""What every engine procedure works with: the store, the embedder, the settings, the clock,
and who is acting with which view of the memories.

:class:`EngineContext` is small and frozen; procedures in this package take it instead of
the whole :class:`~memoryd.engine.Engine`, so they never call back into the facade.

:class:`Access` is the one place where a caller bound to a memory scope, an agent or some
domains is kept inside its own memories: every read narrows its filters with
:meth:`Access.narrow`, every lookup by id passes :meth:`Access.allows`, every new memory is
stamped by :meth:`Access.stamp` and, once classified, checked by :meth:`Access.check_lands`;
every write into a scope (a memory, a graph node or edge, a task, a wait) passes
:meth:`Access.check_writes_to`, which says who may write into a project's scope.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Callable

from memoryd.errors import Forbidden, MemoryNotFound
from memoryd.models import Memory, NewMemory, SearchFilters
from memoryd.store.base import Actor

if TYPE_CHECKING:
    from memoryd.cognition.gating import GatingParams
    from memoryd.engine.memory.access_writer import AccessWriter
    from memoryd.config import Settings
    from memoryd.embed import Embedder
    from memoryd.store.base import Store

Clock = Callable[[], datetime]


@dataclass(frozen=True)
class Access:
    """Which memories the acting caller may see and change.

    ``scope``, ``agent_id`` and ``domains`` are bindings (of an API key): when set, the caller
    sees and writes only memories with that scope / agent / at least one of those domains.
    ``default_domains`` is not a binding but a preference (``X-Memoryd-Domain``): searches
    and lists that name no domain look only there. ``Access()`` sees everything.
    """

    scope: str | None = None
    agent_id: str | None = None
    domains: frozenset[str] | None = None
    default_domains: tuple[str, ...] | None = None

    @property
    def restricted(self) -> bool:
        """Whether the caller is limited to one memory scope or agent, or to some domains."""
        return self.scope is not None or self.agent_id is not None or self.domains is not None

    def allows(self, memory: Memory) -> bool:
        """Whether the caller may see (and, with write rights, change) ``memory``."""
        return (self.scope is None or memory.scope == self.scope) and (
            self.agent_id is None or memory.agent_id == self.agent_id
        ) and (self.domains is None or not self.domains.isdisjoint(memory.domains))

    def narrow(self, filters: SearchFilters) -> SearchFilters:
        """``filters`` limited to the caller's bindings; asking for another scope, agent or
        domain is Forbidden."""
        update: dict[str, object] = {}
        for name, bound in (("scope", self.scope), ("agent_id", self.agent_id)):
            if bound is None:
                continue
            asked = getattr(filters, name)
            if asked not in (None, bound):
                raise Forbidden(f"this key is limited to {name} {bound!r}")
            update[name] = bound
        if self.domains is not None:
            asked_domains = filters.domains
            outside = sorted(set(asked_domains or ()) - self.domains)
            if outside:
                raise Forbidden(f"this key is limited to domains {', '.join(sorted(self.domains))}"
                                f"; {', '.join(outside)} is outside them")
            update["domains"] = list(asked_domains or sorted(self.domains))
        return filters.model_copy(update=update) if update else filters

    def with_default(self, filters: SearchFilters) -> SearchFilters:
        """``filters`` looking in the default domains when they name none (then narrowed)."""
        if self.default_domains and filters.domains is None:
            filters = filters.model_copy(update={"domains": list(self.default_domains)})
        return self.narrow(filters)

    def check_lands(self, memory: Memory) -> None:
        """Forbidden when a classified memory would fall outside the caller's domains."""
        if self.domains is not None and self.domains.isdisjoint(memory.domains):
            where = ", ".join(memory.domains) or "no domain"
            raise Forbidden(f"this key may only write memories in domains "
                            f"{', '.join(sorted(self.domains))}; this one belongs to {where}")

    def stamp(self, new: NewMemory, actor: Actor) -> NewMemory:
        """A new memory with the caller's bound scope and agent (or the acting agent) on it."""
        update: dict[str, str] = {}
        if self.scope is not None:
            if "scope" in new.model_fields_set and new.scope != self.scope:
                raise Forbidden(f"this key may only write to scope {self.scope!r}")
            update["scope"] = self.scope
        if self.agent_id is not None:
            if new.agent_id not in (None, self.agent_id):
                raise Forbidden(f"this key may only write as agent {self.agent_id!r}")
            update["agent_id"] = self.agent_id
        elif actor.agent_id is not None and new.agent_id is None:
            update["agent_id"] = actor.agent_id
        return new.model_copy(update=update) if update else new

    def check_writes_to(self, scope: str, writers: Mapping[str, Collection[str]]) -> None:
        """Forbidden unless the caller may write into ``scope`` (create or change a memory,
        a graph node or edge, a task or a wait there).

        A key bound to a scope writes only there. An unbound caller (an unbound key, the CLI,
        stdio MCP) writes anywhere. A key bound to an agent or to domains and not to a scope
        writes to ``user``, and to ``project:<name>`` only when ``writers[name]`` lists its
        agent (``MEMORYD_PROJECT_WRITERS``): otherwise it could plant a memory that the
        project's own key recalls as the project's.
        """
        if self.scope is not None:
            if scope != self.scope:
                raise Forbidden(f"this key may only write to scope {self.scope!r}")
            return
        if not self.restricted or not scope.startswith("project:"):
            return
        if self.agent_id is not None and self.agent_id in writers.get(scope[8:], ()):
            return
        raise Forbidden(f"writing to {scope} is not available to a key bound to an agent or "
                        "domains unless MEMORYD_PROJECT_WRITERS lists its agent for that "
                        f"project; use a key bound to {scope}")

    def require_unrestricted(self, what: str) -> None:
        """Forbidden for a bound caller: ``what`` spans every scope, agent and domain."""
        if self.restricted:
            raise Forbidden(f"{what} covers every scope, agent and domain; a bound key cannot "
                            "use it")


@dataclass(frozen=True)
class EngineContext:
    """The parts an engine procedure needs, and on whose behalf it acts."""

    store: Store
    embedder: Embedder
    settings: Settings
    clock: Clock
    gating: GatingParams
    access: Access = Access()
    actor: Actor = Actor()
    # Writes the testing effect of searches in the background (None: at once).
    accesses: AccessWriter | None = field(default=None, compare=False, repr=False)
    # Set by Engine.close: a long pass over every memory (domain discovery) stops at its next
    # batch, and its transaction rolls back, instead of holding the close for minutes.
    closing: threading.Event = field(default_factory=threading.Event, compare=False, repr=False)

    def acting(self, actor: Actor | None = None, access: Access | None = None) -> EngineContext:
        """The same context for another actor and/or view."""
        return replace(self, actor=actor or self.actor, access=access or self.access)

    def check_writes_to(self, scope: str) -> None:
        """Forbidden unless the acting caller may write into ``scope``
        (:meth:`Access.check_writes_to` with the settings' ``project_writers``)."""
        self.access.check_writes_to(scope, self.settings.project_writers)

    def filters(self, filters: SearchFilters | None = None, **fields: object) -> SearchFilters:
        """Filters (plus ``fields``) narrowed to what the caller may see."""
        base = filters or SearchFilters()
        if fields:
            base = base.model_copy(update=fields)
        return self.access.narrow(base)

    def get(self, memory_id: str) -> Memory:
        """One memory the caller may see; MemoryNotFound otherwise (nothing leaks)."""
        memory = self.store.get(memory_id)
        if memory is None or not self.access.allows(memory):
            raise MemoryNotFound(memory_id)
        return memory

    def get_many(self, memory_ids: list[str]) -> dict[str, Memory]:
        """The memories among ``memory_ids`` that exist and the caller may see."""
        found = self.store.get_many(memory_ids)
        if not self.access.restricted:
            return found
        return {i: m for i, m in found.items() if self.access.allows(m)}


def work_context(ctx: EngineContext) -> EngineContext:
    """``ctx``, unless its caller is limited to domains: tasks and waits carry a scope and an
    agent but no domains, so such a key would see every task and wait of its scope."""
    if ctx.access.domains is not None:
        raise Forbidden("task memory and smart waits are not available to a key limited "
                        "to domains")
    return ctx
