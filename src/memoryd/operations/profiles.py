"""Which operations an MCP client sees as tools: named profiles, chosen per server.

A model pays for every tool description in its context, so the default profile is small:
``memory`` (search, store, read, give feedback, edit, delete, codebase, intentions). Others:

=========  ===============================================================================
profile    tools
=========  ===============================================================================
memory     the default (8 tools)
kg         knowledge graphs (user and project graphs, the always-loaded core)
tasks      task memory and smart waits
admin      recall blocks, exploration, consolidation, statistics, health, domains, new keys
openclaw   OpenClaw's memory tools (memoryd.operations.dialects.openclaw)
vestige    Vestige's tool names and argument names (memoryd.operations.dialects.vestige)
full       every tool (without the compatibility variants)
=========  ===============================================================================

``MEMORYD_MCP_TOOLS`` (or ``--tools``) is a comma list of profiles and tool names, e.g.
``memory,kg`` or ``memory,recall``.
"""

from __future__ import annotations

from memoryd.errors import InvalidInput
from memoryd.operations import dialects
from memoryd.operations.dialects import agentos
from memoryd.operations.registry import REGISTRY, Operation

DEFAULT = "memory"
PROFILES: dict[str, tuple[str, ...]] = {
    "memory": ("search", "smart_ingest", "memory", "memory_feedback", "memory_edit",
               "memory_delete", "codebase", "intention"),
    "kg": ("kg_read", "kg_write", "kg_link", "kg_search", "kg_recall", "kg_archive", "kg_sync",
           "kg_ping"),
    "tasks": ("task_register", "task_update", "task_get", "task_list", "task_complete",
              "smart_wait", "wait_status", "wait_list", "wait_cancel"),
    "admin": ("recall", agentos.RECALL, "explore", "consolidate", "stats", "health", "domains",
              "keys_create"),
    **dialects.PROFILES,
}
# Tool names that a profile binds to another operation than the default one.
OVERRIDES: dict[str, dict[str, str]] = dialects.OVERRIDES
# The order tools are listed in: what an agent needs most first.
TOOL_ORDER = ("search", "recall", "smart_ingest", "ingest", "memory", *agentos.TOOLS, "codebase",
              "intention", "explore", "consolidate", "stats", "health")


def tool_operations() -> dict[str, Operation]:
    """MCP tool name -> operation, aliases included, in TOOL_ORDER (others after)."""
    tools = {tool: op for op in REGISTRY.values() for tool in op.tools}
    rank = {name: i for i, name in enumerate(TOOL_ORDER)}
    return dict(sorted(tools.items(), key=lambda item: rank.get(item[0], len(rank))))


def select_tools(spec: str | None = None) -> dict[str, Operation]:
    """Tool name -> operation for a comma list of profiles and tool names (default: memory).

    Raises InvalidInput naming an unknown profile or tool. When two entries bind one name to
    different operations (``vestige`` with ``memory``), the entry given first wins.
    """
    by_name = tool_operations()
    chosen: dict[str, Operation] = {}
    for entry in [e.strip() for e in (spec or DEFAULT).split(",") if e.strip()]:
        if entry == "full":
            names: tuple[str, ...] = tuple(by_name)
        elif entry in PROFILES:
            names = PROFILES[entry]
        elif entry in by_name:
            names = (entry,)
        else:
            known = ", ".join([*PROFILES, "full"])
            raise InvalidInput(f"unknown MCP tool or profile {entry!r}; profiles: {known}")
        overrides = OVERRIDES.get(entry, {})
        for name in names:
            if name not in chosen:
                chosen[name] = REGISTRY[overrides[name]] if name in overrides else by_name[name]
    return chosen
