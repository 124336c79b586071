"""The engine: every operation of memoryd, written once, below every face.

:class:`Engine` is the facade programs use (``memoryd.open()`` returns one). The modules of
this package are the procedures behind it; each takes an :class:`EngineContext` (store,
embedder, settings, clock, and who acts with which :class:`Access`), never the Engine.
"""

from memoryd.engine.context import Access, Clock, EngineContext
from memoryd.engine.facade import Engine

__all__ = ["Access", "Clock", "Engine", "EngineContext"]
