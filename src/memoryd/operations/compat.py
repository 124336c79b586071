"""Where the OpenClaw and Vestige operations used to live; they are in
:mod:`memoryd.operations.dialects` now.

``from memoryd.operations.compat import X`` still works for every name of
:mod:`~memoryd.operations.dialects.openclaw` and :mod:`~memoryd.operations.dialects.vestige`,
after a :class:`DeprecationWarning` naming the new module.
"""

from __future__ import annotations

import warnings
from typing import Any

from memoryd.operations.dialects import openclaw, vestige


def __getattr__(name: str) -> Any:
    for module in (openclaw, vestige):
        if not name.startswith("__") and hasattr(module, name):
            warnings.warn(f"memoryd.operations.compat.{name} moved to {module.__name__}.{name}",
                          DeprecationWarning, stacklevel=2)
            return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
