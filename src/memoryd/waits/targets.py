"""Target syntax: what a wait watches, parsed from one string (no side effects).

=================================  ========================================================
``file:/var/log/build.log``        new lines of a file (a bare absolute path works too)
``tmux:SESSION:WINDOW.PANE``       a tmux pane (``tmux:%12`` names a pane by id)
``pty:COMMAND ARGS``               a command memoryd starts in a pseudo-terminal
``pid:1234``                       a running process, until it exits
``command:COMMAND ARGS``           a command memoryd starts, until it exits
``http://...`` / ``https://...``   a URL's status or body
``window:0x3a00007``               an X11 window by id (hex or decimal)
``window:TITLE``                   an X11 window whose title contains TITLE
``screen``                         the whole X11 screen
=================================  ========================================================

>>> parse_target("tmux:build:0.1").pane
'build:0.1'
>>> parse_target("pid:42").pid
42
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from memoryd.waits.errors import InvalidWait

KINDS = ("file", "tmux", "pty", "pid", "command", "http", "window", "screen")
# The polling ladder of each kind (memoryd.waits.policy.LADDERS).
LADDER_OF = {
    "file": "text", "tmux": "text", "pty": "text", "pid": "process", "command": "process",
    "http": "http", "window": "screen", "screen": "screen",
}
_PANE = re.compile(r"(?:[^:\s]+:\d+\.\d+|%\d+)")
_MAX_TARGET = 4096


@dataclass(frozen=True)
class Target:
    """A parsed target: its kind and the kind's own value (see the module docstring)."""

    kind: str
    value: str
    raw: str

    @property
    def path(self) -> Path:
        """file: the absolute path."""
        return Path(self.value)

    @property
    def pane(self) -> str:
        """tmux: the pane as tmux's -t understands it."""
        return self.value

    @property
    def argv(self) -> list[str]:
        """pty/command: the command line split like a shell would."""
        return shlex.split(self.value)

    @property
    def pid(self) -> int:
        """pid: the process id."""
        return int(self.value)

    @property
    def url(self) -> str:
        """http: the URL."""
        return self.value

    @property
    def window_id(self) -> int | None:
        """window: the id when one was given (else the value is a title)."""
        if re.fullmatch(r"0x[0-9a-fA-F]+", self.value):
            return int(self.value, 16)
        return int(self.value) if self.value.isdigit() else None

    @property
    def ladder(self) -> str:
        """The name of this kind's polling ladder."""
        return LADDER_OF[self.kind]


def parse_target(text: str) -> Target:
    """Parse a target string; raises :class:`InvalidWait` naming what is wrong."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidWait("target", "is empty")
    if len(text) > _MAX_TARGET:
        raise InvalidWait("target", f"is longer than {_MAX_TARGET} characters")
    raw = text.strip()
    if raw.startswith("/"):
        raw = "file:" + raw
    if raw == "screen":
        return Target("screen", "", raw)
    scheme, sep, rest = raw.partition(":")
    if not sep:
        raise InvalidWait("target", f"has no kind; use one of {', '.join(KINDS)}")
    if scheme in ("http", "https"):
        return Target("http", raw, raw)
    parser = _PARSERS.get(scheme)
    if parser is None:
        raise InvalidWait(
            "target", "unknown kind (URL schemes other than http/https are refused); "
            f"use one of {', '.join(KINDS)}")
    return Target(scheme, parser(rest), raw)


def _file(rest: str) -> str:
    try:
        path = Path(rest).expanduser()
    except RuntimeError:  # ~user of nobody
        raise InvalidWait("target", "file path must be absolute") from None
    if not path.is_absolute():
        raise InvalidWait("target", "file path must be absolute")
    return str(path)


def _tmux(rest: str) -> str:
    if not _PANE.fullmatch(rest):
        raise InvalidWait("target", "tmux pane must look like SESSION:WINDOW.PANE or %ID")
    return rest


def _command(rest: str) -> str:
    try:
        argv = shlex.split(rest)
    except ValueError as exc:
        raise InvalidWait("target", f"command does not parse: {exc}") from None
    if not argv:
        raise InvalidWait("target", "command is empty")
    return rest.strip()


def _pid(rest: str) -> str:
    if not rest.strip().isdigit() or int(rest) <= 0:
        raise InvalidWait("target", "pid must be a positive integer")
    return str(int(rest))


def _window(rest: str) -> str:
    if not rest.strip():
        raise InvalidWait("target", "window needs an id (0x...) or a title")
    return rest.strip()


def _screen(rest: str) -> str:
    if rest.strip():
        raise InvalidWait("target", "screen takes no value (the display comes from settings)")
    return ""


_PARSERS = {
    "file": _file, "tmux": _tmux, "pty": _command, "command": _command,
    "pid": _pid, "window": _window, "screen": _screen,
}
