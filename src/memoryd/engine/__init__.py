"""The engine: every operation of memoryd, written once, below every face.

:class:`Engine` is what programs use (``memoryd.open()`` returns one): a core of memory
verbs and capabilities reached as its attributes, one package each (``memory/`` holds the
procedures behind the core; ``kg/``, ``domains/``, ``tasks/``, ``waits/``, ``codebase/``,
``views/`` and ``admin/`` each hold a capability's procedures and the ``facade.py`` its
attribute returns). Every procedure takes an :class:`EngineContext` (store, embedder,
settings, clock, and who acts with which :class:`Access`), never the Engine.
"""

from memoryd.engine.context import Access, Clock, EngineContext
from memoryd.engine.facade import Engine

__all__ = ["Access", "Clock", "Engine", "EngineContext"]
