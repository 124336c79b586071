"""The Engine's capabilities as attributes, and the old Engine names still working.

Every name in ``memoryd.engine.moved.MOVED`` reaches what its new path reaches, with a
DeprecationWarning naming that path; the operations the faces run use only the new paths
(they run here with the warning turned into an error).
"""

from __future__ import annotations

import warnings

import pytest

from memoryd.engine import Engine
from memoryd.engine.moved import MOVED
from memoryd.operations import Caller, invoke

CAPABILITIES = ("kg", "domains", "tasks", "waits", "codebase", "views", "admin")


def _resolve(engine: Engine, path: str) -> object:
    target: object = engine
    for part in path.split("."):
        target = getattr(target, part)
    return target


def _same(old: object, new: object) -> bool:
    if hasattr(old, "__func__"):  # bound methods of two facade objects of the same engine
        return old.__func__ is new.__func__ and type(old.__self__) is type(new.__self__)
    return old == new


@pytest.mark.parametrize("old", sorted(MOVED))
def test_a_moved_name_warns_and_reaches_its_new_path(mem: Engine, old: str) -> None:
    with pytest.warns(DeprecationWarning, match=rf"Engine\.{old} is deprecated; use "
                                                rf"engine\.{MOVED[old]}") as caught:
        found = getattr(mem, old)
    assert caught[0].filename == __file__  # the warning points at the caller
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        assert _same(found, _resolve(mem, MOVED[old]))


def test_old_calls_still_work(mem: Engine) -> None:
    memory = mem.add("Deploys go out on Tuesdays")
    with pytest.warns(DeprecationWarning, match="engine.admin.create_key"):
        made = mem.create_key("old-style")
    assert [k.label for k in mem.admin.list_keys()] == ["old-style"] == [made.key.label]
    with pytest.warns(DeprecationWarning, match=r"use engine\.domains\.list\(\)"):
        assert mem.domains() == mem.domains.list() == []
    with pytest.warns(DeprecationWarning, match="engine.views.memory_state"):
        assert mem.memory_state(memory.id).id == memory.id
    with pytest.warns(DeprecationWarning, match="engine.context.clock"):
        assert mem.clock() <= mem.context.clock()


def test_unknown_names_are_attribute_errors(mem: Engine) -> None:
    with pytest.raises(AttributeError, match="no_such_method"):
        mem.no_such_method  # noqa: B018
    assert not hasattr(mem, "register_tasks")


def test_capabilities_follow_the_acting_caller(mem: Engine) -> None:
    from memoryd import Access, Forbidden
    bound = mem.acting_as(access=Access(agent_id="bot-1"))
    for name in CAPABILITIES:
        assert getattr(bound, name)._ctx.access == Access(agent_id="bot-1"), name
    with pytest.raises(Forbidden):
        bound.admin.list_keys()
    limited = mem.acting_as(access=Access(domains=frozenset({"home"})))
    with pytest.raises(Forbidden, match="limited to domains"):
        limited.tasks.list()


CALLS = [
    ("memory_create", {"content": "The build cache lives in /var/cache/ci"}),
    ("stats", {}), ("health", {}), ("overview", {}), ("changes", {"since": 0}),
    ("timeline", {"days": 3, "tz": "UTC"}), ("memory_graph", {}), ("domains_list", {}),
    ("domain_proposals", {}), ("keys_list", {}), ("ledger", {}), ("ledger_verify", {}),
    ("consolidate", {"dry_run": True}), ("gc", {}), ("task_register", {"name": "Ship 2.0"}),
    ("task_list", {}), ("wait_list", {}), ("kg_read", {}), ("kg_graphs", {}),
    ("intention", {"action": "list"}), ("journal", {"day": "2026-01-05", "tz": "UTC"}),
    ("codebase", {"action": "get_context", "codebase": "shop"}),
    ("tool_domains", {"action": "list"}),
]


def test_the_operations_use_no_deprecated_name(mem: Engine) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        for name, arguments in CALLS:
            invoke(mem, name, arguments, Caller.local())
        created = invoke(mem, "memory_create", {"content": "Kept for one check"}, Caller.local())
        invoke(mem, "memory_retention", {"id": created.id}, Caller.local())
        task = invoke(mem, "task_register", {"name": "Migrate"}, Caller.local())
        invoke(mem, "task_get", {"id": task.task.id}, Caller.local())


def test_the_knowledge_graphs_own_their_cache(mem: Engine, shared_embedder, tmp_path) -> None:
    """One cache per engine, held by engine.kg and shared by every caller of that engine;
    the context procedures run with carries none."""
    import dataclasses

    import memoryd
    from memoryd import Actor
    from memoryd.engine import EngineContext

    assert "graphs" not in {f.name for f in dataclasses.fields(EngineContext)}
    bound = mem.acting_as(Actor("key:bot", agent_id="bot-1"))
    assert bound.kg._cache is mem.kg._cache is mem.labelled("helper").kg._cache
    with memoryd.open(f"sqlite:///{tmp_path / 'other.db'}", embedder=shared_embedder) as other:
        assert other.kg._cache is not mem.kg._cache
    shop = tmp_path / "shop"
    shop.mkdir()
    mem.kg.write(project=str(shop), nodes=[{"name": "Busy timeout", "type": "gotcha",
                                             "body": "Set busy_timeout first."}])
    assert mem.kg._cache.graphs  # the write went through the engine's one cache
    assert "Busy timeout" in mem.acting_as(Actor("cli")).kg.read(project=str(shop)).text
