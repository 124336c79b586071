"""Real glob matching for file patterns: ``*``, ``?``, ``[...]`` and ``**`` across directories.

``fnmatch`` lets ``*`` cross ``/``, so ``src/*.py`` would match ``src/a/b.py``; here ``*``
stays within one path segment and ``**`` spans any number of segments.
"""

from __future__ import annotations

import re
from functools import lru_cache


@lru_cache(maxsize=512)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """Compile a glob pattern to an anchored regular expression."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern[i : i + 2] == "**":
                i += 2
                if i < n and pattern[i] == "/":
                    i += 1
                    out.append("(?:.*/)?")  # zero or more whole directories
                else:
                    out.append(".*")
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z")


def glob_match(pattern: str, path: str) -> bool:
    """Whether ``path`` matches ``pattern`` (paths use ``/``; a leading ``./`` is ignored)."""
    return bool(glob_regex(_norm(pattern)).match(_norm(path)))


def touches(stored: str, path: str) -> bool:
    """Whether a stored file reference (path, directory or glob) covers ``path``."""
    stored, path = _norm(stored), _norm(path)
    if any(ch in stored for ch in "*?["):
        return glob_match(stored, path)
    return path == stored or path.startswith(stored.rstrip("/") + "/")


def _norm(path: str) -> str:
    path = path.replace("\\", "/").strip()
    return path[2:] if path.startswith("./") else path
