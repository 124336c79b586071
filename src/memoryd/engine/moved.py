"""Engine names that moved to a capability, and the forwarding that keeps them working.

``Engine.__getattr__`` looks a missing name up in :data:`MOVED`; a name found there is
reached at its new path (``engine.admin.create_key`` for ``engine.create_key``) after a
:class:`DeprecationWarning` that names that path. Nothing inside memoryd uses the old names.
"""

from __future__ import annotations

import warnings
from typing import Any

#: old ``Engine`` name -> its path from the engine now
MOVED: dict[str, str] = {
    # the engine's context
    "access": "context.access",
    "clock": "context.clock",
    # engine.domains
    "domain": "domains.get",
    "domain_threshold": "domains.threshold",
    "discover_domains": "domains.discover",
    "recluster_domains": "domains.recluster",
    "rename_domain": "domains.rename",
    "merge_domains": "domains.merge",
    "split_domain": "domains.split",
    "set_domain_threshold": "domains.set_threshold",
    "domain_proposals": "domains.proposals",
    "accept_proposal": "domains.accept",
    "reject_proposal": "domains.reject",
    # engine.tasks
    "register_task": "tasks.register",
    "update_task": "tasks.update",
    "get_task": "tasks.get",
    "list_tasks": "tasks.list",
    "complete_task": "tasks.complete",
    "set_intention": "tasks.set_intention",
    "check_intentions": "tasks.check_intentions",
    "update_intention": "tasks.update_intention",
    "list_intentions": "tasks.list_intentions",
    # engine.waits
    "start_waits": "waits.start",
    "waits_running": "waits.running",
    "smart_wait": "waits.watch",
    "wait_status": "waits.status",
    "list_waits": "waits.list",
    "cancel_wait": "waits.cancel",
    # engine.codebase
    "remember_pattern": "codebase.remember_pattern",
    "remember_decision": "codebase.remember_decision",
    "codebase_context": "codebase.context",
    # engine.views
    "changes": "views.changes",
    "last_change": "views.last_change",
    "timeline": "views.timeline",
    "overview": "views.overview",
    "retention_curve": "views.retention_curve",
    "memory_graph": "views.memory_graph",
    "memory_state": "views.memory_state",
    "importance_score": "views.importance_score",
    # engine.admin
    **{name: f"admin.{name}" for name in (
        "create_key", "register_key", "verify_key", "touch_key", "list_keys", "revoke_key",
        "has_active_key", "bound_agents", "ledger", "ledger_head", "verify_ledger", "journal",
        "export_jsonl", "import_jsonl", "backup", "restore", "reembed",
        "schedule_consolidation", "consolidate", "gc", "purge", "health")},
}


def warn_moved(old: str, new: str, stacklevel: int = 3) -> None:
    """The DeprecationWarning for ``engine.<old>``, pointing at ``engine.<new>``
    (``stacklevel`` counts from the caller of this function)."""
    warnings.warn(f"Engine.{old} is deprecated; use engine.{new}", DeprecationWarning,
                  stacklevel=stacklevel)


def forward(engine: object, name: str) -> Any:
    """``engine.<name>`` for a name in :data:`MOVED` (with the warning); AttributeError for
    any other name."""
    path = MOVED.get(name)
    if path is None:
        raise AttributeError(f"{type(engine).__name__!r} object has no attribute {name!r}")
    warn_moved(name, path, stacklevel=4)  # the code that named engine.<name>
    target = engine
    for part in path.split("."):
        target = getattr(target, part)
    return target
