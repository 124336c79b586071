"""Importing ONNX Runtime without crashing a process that already loaded usearch.

onnxruntime 1.23 and later crash the process (SIGSEGV, in the C++ runtime's locale set-up)
when they are imported after usearch's extension module, which carries its own static copy
of that runtime. memoryd imports onnxruntime first itself (before its HNSW index needs
usearch); a host program that imported usearch before memoryd loads its model would crash
with no message. Here the import is tried in a child process first in that case, and a crash
there becomes a clear error instead.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from types import ModuleType

from memoryd.errors import EmbeddingError

#: The module usearch's C++ extension loads as.
_USEARCH_NATIVE = "usearch.compiled"
_PROBE = "import usearch.index, onnxruntime"
_PROBE_TIMEOUT_S = 30.0


def onnxruntime_loadable() -> bool:
    """Import onnxruntime when that is safe here; whether it is loaded afterwards.

    Safe: it is loaded already, or usearch is not, or a child process that loads usearch
    first survives importing it. False also when it is not installed."""
    if "onnxruntime" in sys.modules:
        return True
    if _USEARCH_NATIVE in sys.modules and _crashes_after_usearch():
        return False
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def import_onnxruntime() -> ModuleType:
    """The onnxruntime module; EmbeddingError if importing it here would crash the process.

    ImportError when it is not installed, as a plain import would raise.
    """
    if "onnxruntime" not in sys.modules and _USEARCH_NATIVE in sys.modules \
            and _crashes_after_usearch():
        raise EmbeddingError(
            "onnxruntime cannot be loaded in this process: usearch was imported first, and "
            "onnxruntime imported after it crashes the process (a clash of their C++ "
            "runtimes). Put `import onnxruntime` before the program's first import of usearch."
        )
    import onnxruntime

    return onnxruntime


@functools.lru_cache(maxsize=1)
def _crashes_after_usearch() -> bool:
    """Whether a fresh interpreter dies on a signal importing onnxruntime after usearch."""
    try:
        probe = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True,
                               env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
                               timeout=_PROBE_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False  # no verdict: import as before
    return probe.returncode < 0
