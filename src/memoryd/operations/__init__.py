"""Every operation an agent or program can call, defined once (see ``registry``).

Importing this package registers all of them: search, memories, knowledge (codebase,
intentions, graph), the knowledge graphs (kg_*), domains, admin, the agent hooks (recall,
capture, flush, session_warm), task memory and smart waits, and other systems' names for
them (``dialects``: OpenClaw, AgentOS, Vestige).

>>> out = invoke(engine, "search", {"query": "typescript", "limit": 5}, Caller.local())
>>> out.results[0].content
"""

from __future__ import annotations

from memoryd.operations.admin import health_report, is_ready
from memoryd.operations.registry import (
    CALLER_SCOPE_KEY,
    REGISTRY,
    Caller,
    Operation,
    Strict,
    as_text,
    invoke,
    operation,
)

# isort: split
from memoryd.operations import (  # noqa: F401
    admin,
    dialects,
    domains,
    gateway,
    graph,
    knowledge,
    memories,
    search,
    tasks,
    tools,
    tools_knowledge,
    views,
    waits,
)
from memoryd.operations.profiles import PROFILES, select_tools, tool_operations

__all__ = [
    "CALLER_SCOPE_KEY",
    "PROFILES",
    "REGISTRY",
    "Caller",
    "Operation",
    "Strict",
    "as_text",
    "health_report",
    "is_ready",
    "invoke",
    "operation",
    "select_tools",
    "tool_operations",
]
