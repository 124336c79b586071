"""Sources of system activity readings (psutil and log files).

Each source's ``poll()`` returns the readings that cross its thresholds right now; the
:class:`~memoryd.waits.activity.episodes.EpisodeTracker` turns them into episodes.
Process command lines pass through memoryd's secret scanner and an option scrubber
(``--password X``, ``--token=X``, ``PGPASSWORD=X``) before they leave the source.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import psutil

from memoryd.cognition.secrets import redact, scan
from memoryd.waits.criteria import parse_criteria
from memoryd.waits.watchers.file import FileTail

_SECRET_NAME = r"(?:pass(?:word|wd)?|secret|token|api[-_]?key|auth|credential|private[-_]?key)"
_OPTION = re.compile(rf"(?i)(--?[\w-]*{_SECRET_NAME}[\w-]*)(=|\s+)(\S+)")
_ENV = re.compile(rf"(?i)\b([A-Z0-9_]*{_SECRET_NAME}[A-Z0-9_]*)=(\S+)")
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True)
class Reading:
    """One observation over a threshold: its dedup key, category, severity, numbers."""

    key: str
    category: str
    severity: str
    numbers: dict[str, float]
    summary: str


def scrub_command_line(cmdline: str) -> str:
    """A command line with credentials redacted (secret scanner + option values)."""
    text = redact(cmdline, scan(cmdline))
    text = _OPTION.sub(lambda m: f"{m.group(1)}{m.group(2)}[REDACTED]", text)
    return _ENV.sub(lambda m: f"{m.group(1)}=[REDACTED]", text)


def _severity(value: float, warning: float, critical: float) -> str:
    return "critical" if value >= critical else "warning"


@dataclass
class ProcessSpikes:
    """Processes over a resident-memory or CPU threshold (CPU % of one core, sampled
    between two polls, so the first poll reports memory only)."""

    rss_mb: float = 2048.0
    cpu_percent: float = 90.0
    _procs: dict[int, psutil.Process] = field(default_factory=dict)

    def poll(self) -> list[Reading]:
        """Readings for the processes over a threshold now."""
        out: list[Reading] = []
        seen: dict[int, psutil.Process] = {}
        for proc in psutil.process_iter(["pid", "name"]):
            proc = self._procs.get(proc.pid, proc)
            seen[proc.pid] = proc
            try:
                with proc.oneshot():
                    rss = proc.memory_info().rss / 2**20
                    cpu = proc.cpu_percent(interval=None)
                    if rss < self.rss_mb and cpu < self.cpu_percent:
                        continue
                    command = scrub_command_line(" ".join(proc.cmdline()) or proc.name())[:300]
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
            if rss >= self.rss_mb:
                out.append(Reading(f"process.memory:{proc.pid}", "system.process.memory",
                                   _severity(rss, self.rss_mb, self.rss_mb * 2),
                                   {"rss_mb": round(rss, 1), "pid": proc.pid},
                                   f"{command} (pid {proc.pid}) uses {rss:.0f} MB of memory"))
            if cpu >= self.cpu_percent:
                out.append(Reading(f"process.cpu:{proc.pid}", "system.process.cpu", "warning",
                                   {"cpu_percent": round(cpu, 1), "pid": proc.pid},
                                   f"{command} (pid {proc.pid}) uses {cpu:.0f}% CPU"))
        self._procs = seen
        return out


@dataclass
class SwapPressure:
    """Swap use over a share of the swap space."""

    percent: float = 80.0

    def poll(self) -> list[Reading]:
        """A reading while swap use is over the threshold."""
        swap = psutil.swap_memory()
        if not swap.total or swap.percent < self.percent:
            return []
        return [Reading("swap", "system.memory.swap", _severity(swap.percent, self.percent, 95),
                        {"swap_percent": swap.percent, "swap_used_mb": round(swap.used / 2**20)},
                        f"swap {swap.percent:.0f}% used ({swap.used / 2**30:.1f} GB)")]


@dataclass
class DiskFilling:
    """Mounted file systems over a share of their space."""

    percent: float = 90.0
    mountpoints: tuple[str, ...] | None = None

    def poll(self) -> list[Reading]:
        """A reading per file system over the threshold."""
        mounts = self.mountpoints or tuple(p.mountpoint for p in psutil.disk_partitions(all=False))
        out = []
        for mount in dict.fromkeys(mounts):
            try:
                usage = psutil.disk_usage(mount)
            except OSError:
                continue
            if usage.percent >= self.percent:
                out.append(Reading(f"disk:{mount}", "system.disk",
                                   _severity(usage.percent, self.percent, 98),
                                   {"used_percent": usage.percent,
                                    "free_gb": round(usage.free / 2**30, 2)},
                                   f"disk {mount} {usage.percent:.0f}% full "
                                   f"({usage.free / 2**30:.1f} GB free)"))
        return out


@dataclass
class LogErrors:
    """New lines of a log file matching an error pattern; the same message (digits
    ignored) is one episode whose count grows."""

    path: str
    pattern: str = r"(?i)\b(error|fatal|panic|exception|traceback)\b"
    _tail: FileTail | None = None
    _counts: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._criteria = parse_criteria({"regex": self.pattern})
        self._tail = FileTail(self.path)

    def poll(self) -> list[Reading]:
        """A reading per distinct error message among the new lines."""
        assert self._tail is not None
        lines, _ = self._tail.read_lines()
        out: dict[str, Reading] = {}
        for line in lines:
            if not self._criteria.matches_line(line):
                continue
            text = scrub_command_line(line.strip())[:300]
            shape = _DIGITS.sub("#", text)[:120]
            self._counts[shape] = self._counts.get(shape, 0) + 1
            out[shape] = Reading(f"log:{self.path}:{shape}", "system.log.error", "error",
                                 {"count": float(self._counts[shape])},
                                 f"{self.path}: {text}")
        return list(out.values())


