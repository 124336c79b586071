"""Where the knowledge-graph model used to live; it is :mod:`memoryd.models.kg` now (beside
the other models, so that ``models`` and ``graph`` do not import each other).

``from memoryd.graph.model import X`` still works, after a :class:`DeprecationWarning`
naming the new module.
"""

from __future__ import annotations

import warnings
from typing import Any

from memoryd.models import kg


def __getattr__(name: str) -> Any:
    if not name.startswith("__") and hasattr(kg, name):
        warnings.warn(f"memoryd.graph.model.{name} moved to memoryd.models.kg.{name}",
                      DeprecationWarning, stacklevel=2)
        return getattr(kg, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
