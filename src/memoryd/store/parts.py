"""What every part of a store has in common.

A store is its core (:class:`memoryd.store.base.Store`: memories, vectors, search, history,
edges) and parts reached as its attributes: ``store.work`` (tasks, their messages, wait jobs
and intentions), ``store.domains``, ``store.graph_files``, ``store.keys``,
``store.bookkeeping`` (watermarks and reports) and ``store.transfer`` (export, import,
backup, restore). Each part is built with the store's database handle
(:class:`memoryd.store.database.Database`), holds its own policy, and reaches the database
only through that handle, which the core shares, so one ``store.transaction()`` spans the
core and every part.
"""

from __future__ import annotations

import inspect
from abc import ABC
from typing import Any

from memoryd.store.database import Database
from memoryd.store.translate import translating_by_instance


class Part(ABC):
    """A part of a store over its database handle. Every public method of a part is a
    contract call: the driver's errors reach callers as StoreError."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @property
    def backend(self) -> str:
        """The backend of the store this part belongs to."""
        return self.db.backend

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, member in list(vars(cls).items()):
            if (not name.startswith("_") and inspect.isfunction(member)
                    and not getattr(member, "__translated__", False)):
                setattr(cls, name, translating_by_instance(member))
