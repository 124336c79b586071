"""The knowledge graphs' cache: graphs read from the store, and rendered cores.

One per engine, owned by its knowledge-graph facade (``engine.kg``) and shared by every
caller of that engine. A graph entry is valid while the store's change sequence
number is the one it was read at (:mod:`memoryd.engine.kg.load` refreshes it); a core
entry while its graphs are the same objects, for a limited time (recency moves).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from collections.abc import Callable, Iterable
from typing import Any

from memoryd.models.kg import Graph
from memoryd.models import GraphFileState

MAX_CORES = 256


@dataclass(frozen=True)
class Loaded:
    """A graph as read from the store, and where the store was when it was read."""

    graph: Graph
    slugs: dict[str, str]  # memory id -> node id, for every node (read-only)
    seen: int  # store.last_seq() when it was read or last refreshed
    scope_seq: int  # the highest change sequence number among its node memories


@dataclass
class FileMemo:
    """The file text and fingerprint of each node and edge of one graph as last written, by
    object identity (graphs are values: an unchanged node is the same object in the next
    version). Each entry holds its object, so an id is never reused while remembered."""

    entries: dict[int, tuple[Any, str, str]] = field(default_factory=dict)

    def get(self, item: Any, text: Callable[[Any], str], fingerprint: Callable[[Any], str]
            ) -> tuple[str, str]:
        """``(text(item), fingerprint(item))``, computed once per object."""
        hit = self.entries.get(id(item))
        if hit is None or hit[0] is not item:
            hit = (item, text(item), fingerprint(item))
            self.entries[id(item)] = hit
        return hit[1], hit[2]

    def keep(self, items: Iterable[Any]) -> None:
        """Forget every object but ``items``."""
        self.entries = {id(i): self.entries[id(i)] for i in items if id(i) in self.entries}


@dataclass
class GraphCache:
    """Graphs by (scope, agent binding), and rendered cores by their inputs."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    graphs: dict[tuple[str, str | None], Loaded] = field(default_factory=dict)
    cores: dict[Any, tuple[float, Any]] = field(default_factory=dict)
    files: dict[str, GraphFileState] = field(default_factory=dict)
    memos: dict[str, FileMemo] = field(default_factory=dict)

    def memo(self, scope: str) -> FileMemo:
        """The file memo of one graph."""
        with self.lock:
            return self.memos.setdefault(scope, FileMemo())

    def core(self, key: Any, now: float, max_age: float) -> Any | None:
        """A cached core for ``key`` not older than ``max_age`` seconds."""
        with self.lock:
            hit = self.cores.get(key)
        return hit[1] if hit is not None and now - hit[0] <= max_age else None

    def put_core(self, key: Any, now: float, value: Any) -> None:
        with self.lock:
            if len(self.cores) > MAX_CORES:
                self.cores.clear()
            self.cores[key] = (now, value)
