"""File watcher: new lines of a file, read like ``tail -F``.

The tail keeps (inode, offset). Each check stats the path: a different inode means the
file was rotated (renamed away and recreated), so the rest of the old file is read
through the descriptor still open on it and the new file is read from its start; a size
below the offset means it was truncated in place (``> file``), so reading restarts at 0.
A partial last line is held back until its newline arrives (or until it has waited for
one check, so a prompt without a newline still matches).
"""

from __future__ import annotations

import os
from typing import Any

from memoryd.waits.criteria import Criteria
from memoryd.waits.model import Observation
from memoryd.waits.watchers.base import Timer, excerpt

READ_CHUNK = 1 << 20  # at most this many new bytes per check; the rest waits for the next


class FileTail:
    """New complete lines of a file across rotation and truncation."""

    def __init__(self, path: str, *, inode: int | None = None, offset: int | None = None) -> None:
        self.path = path
        self._fd: int | None = None
        self.inode = inode
        self.offset = offset if offset is not None else 0
        self._pending = b""
        self._pending_age = 0
        self.release_partial = True
        if inode is None:  # a new wait: start at the end, only new lines count
            self._open_current(at_end=True)

    def _open_current(self, *, at_end: bool) -> bool:
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return False
        st = os.fstat(fd)
        self._close_fd()
        self._fd, self.inode = fd, st.st_ino
        self.offset = st.st_size if at_end else 0
        self._pending = b""
        return True

    def _close_fd(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _read_fd(self, limit: int = READ_CHUNK) -> bytes:
        assert self._fd is not None
        data = os.pread(self._fd, limit, self.offset)
        self.offset += len(data)
        return data

    def read_lines(self) -> tuple[list[str], bool]:
        """(new complete lines, whether anything changed) since the last call."""
        chunks: list[bytes] = []
        changed = False
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            st = None
        if self._fd is None and st is not None:
            resumed_inode, resumed_offset = self.inode, self.offset
            self._open_current(at_end=False)
            if resumed_inode == self.inode and resumed_offset <= os.fstat(self._fd).st_size:
                self.offset = resumed_offset  # resuming after a restart: same file, same place
            changed = True
        if self._fd is not None and st is not None and st.st_ino != self.inode:
            chunks.append(self._read_fd())  # rotated: finish the old file, then the new one
            self._open_current(at_end=False)
            changed = True
        elif self._fd is not None and st is not None and st.st_size < self.offset:
            self.offset, self._pending = 0, b""  # truncated in place
            changed = True
        if self._fd is not None:
            chunks.append(self._read_fd())
        data = self._pending + b"".join(chunks)
        changed = changed or len(data) > len(self._pending)
        return self._split(data), changed

    def _split(self, data: bytes) -> list[str]:
        *complete, rest = data.split(b"\n")
        # A line without its newline is released once it has stayed unchanged for a check.
        self._pending_age = self._pending_age + 1 if rest and rest == self._pending else 0
        if rest and self._pending_age >= 1 and self.release_partial:
            complete.append(rest)
            rest, self._pending_age = b"", 0
        self._pending = rest
        return [c.decode("utf-8", "replace").rstrip("\r") for c in complete]

    def close(self) -> None:
        """Close the descriptor."""
        self._close_fd()


class FileWatcher:
    """Resolves when a new line of the file matches the criteria."""

    def __init__(self, path: str, criteria: Criteria, cursor: dict[str, Any] | None = None) -> None:
        cursor = cursor or {}
        self.criteria = criteria
        self.tail = FileTail(path, inode=cursor.get("inode"), offset=cursor.get("offset"))

    def check(self) -> Observation:
        """Read the new lines and match them."""
        with Timer() as t:
            lines, changed = self.tail.read_lines()
            hit = self.criteria.first_match(lines)
        seen = hit if hit is not None else (lines[-1] if lines else "")
        return Observation(matched=hit is not None, seen=excerpt(seen), changed=changed,
                           cost_ms=t.ms, detail={"new_lines": len(lines)})

    def cursor(self) -> dict[str, Any]:
        """The inode and offset read so far."""
        return {"inode": self.tail.inode, "offset": self.tail.offset - len(self.tail._pending)}

    def wake_fd(self) -> int | None:
        """Files are polled."""
        return None

    def close(self, final: bool = True) -> None:
        """Close the file."""
        self.tail.close()
