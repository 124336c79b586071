"""Where wait jobs are kept between restarts: a two-method interface, and a JSON file.

The scheduler calls ``save(job)`` on every status change, wake attempt and (rate-limited)
cursor move, and ``load()`` once at start; anything with these two methods can back it
(a store table keyed by ``job.id`` holding ``job.to_dict()``).
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

from memoryd.waits.model import WaitJob


class JobStore(Protocol):
    """Persists wait jobs (upsert by id)."""

    def load(self) -> list[WaitJob]:
        """Every job saved so far."""
        ...

    def save(self, job: WaitJob) -> None:
        """Insert or replace the job with this id."""
        ...


class CallbackJobStore:
    """A JobStore made of two functions on plain dicts (``WaitJob.to_dict()`` form), for
    a backend that stores rows: ``CallbackJobStore(load=rows_fn, save=upsert_fn)``."""

    def __init__(self, load: Callable[[], Iterable[dict[str, Any]]],
                 save: Callable[[dict[str, Any]], None]) -> None:
        self._load, self._save = load, save

    def load(self) -> list[WaitJob]:
        """Every job the backend returns."""
        return [WaitJob.from_dict(row) for row in self._load()]

    def save(self, job: WaitJob) -> None:
        """Hand the job's dict form to the backend."""
        self._save(job.to_dict())


class MemoryJobStore:
    """Keeps jobs in memory only (nothing survives the process)."""

    def __init__(self) -> None:
        self._jobs: dict[str, WaitJob] = {}

    def load(self) -> list[WaitJob]:
        """Every job saved so far."""
        return list(self._jobs.values())

    def save(self, job: WaitJob) -> None:
        """Insert or replace."""
        self._jobs[job.id] = job


class JsonFileJobStore:
    """All jobs in one JSON file, replaced atomically on each save (fine for hundreds)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._jobs: dict[str, dict] = {}
        if self.path.exists():
            data = json.loads(self.path.read_text() or "{}")
            self._jobs = {j["id"]: j for j in data.get("jobs", [])}

    def load(self) -> list[WaitJob]:
        """Every job in the file."""
        with self._lock:
            return [WaitJob.from_dict(j) for j in self._jobs.values()]

    def save(self, job: WaitJob) -> None:
        """Upsert the job and rewrite the file (write to a temp file, then rename)."""
        with self._lock:
            self._jobs[job.id] = job.to_dict()
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # A temp name of its own per write: two schedulers (or processes) sharing
            # the file must never rename each other's half-written temp file.
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=self.path.name + ".",
                                       suffix=".tmp")
            try:
                with os.fdopen(fd, "w") as out:
                    out.write(json.dumps({"jobs": list(self._jobs.values())}))
                os.replace(tmp, self.path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
