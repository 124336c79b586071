"""Other systems' names for memoryd's operations, so agents built for them switch unchanged.

Each dialect is one module, a table of translations: its input models take the other
system's argument names, its handlers turn them into memoryd's arguments, call memoryd's own
operation for the verb (``search``, ``smart_ingest``, ...) and turn the result into the other
system's shape. No dialect holds engine logic of its own.

=========  ==========================================  ====================================
dialect    names                                       over memoryd's
=========  ==========================================  ====================================
openclaw   memory_search, memory_get, memory_forget     search, engine.find, engine.forget
agentos    memory_store, memory_recall                  smart_ingest, search
vestige    search and smart_ingest argument names       search, smart_ingest
=========  ==========================================  ====================================

Importing this package registers their operations; :mod:`memoryd.operations.profiles`
reads their MCP profiles from :data:`PROFILES` and :data:`OVERRIDES`.
"""

from __future__ import annotations

from memoryd.operations.dialects import agentos, openclaw, vestige

#: MCP profiles named for a dialect: the tool names an agent of that system expects.
PROFILES: dict[str, tuple[str, ...]] = {"openclaw": openclaw.PROFILE, "vestige": vestige.PROFILE}
#: Tool names that a dialect's profile binds to another operation than memoryd's.
OVERRIDES: dict[str, dict[str, str]] = {"vestige": vestige.OVERRIDES}

__all__ = ["OVERRIDES", "PROFILES", "agentos", "openclaw", "vestige"]
