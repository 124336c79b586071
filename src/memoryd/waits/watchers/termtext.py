"""Turn a raw terminal byte stream into the lines a person would read.

Escape sequences (CSI, OSC, charset and mode switches) are removed; a carriage return
lets later text overwrite the line (progress bars: the last state wins); a backspace
erases the character before it (readline's echo of corrections).

>>> render_line("\\x1b[32mok\\x1b[0m 50%\\rok 100%")
'ok 100%'
"""

from __future__ import annotations

import re

_ANSI = re.compile(
    r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC ... BEL or ST (window titles)
    r"|\x1b\[[0-?]*[ -/]*[@-~]"  # CSI (colours, cursor movement, modes)
    r"|\x1b[()*+][0-9A-Za-z]"  # charset designation
    r"|\x1b[@-Z\\-_=>78]"  # two-byte escapes
)
_CONTROL = re.compile(r"[\x00-\x07\x0b-\x0c\x0e-\x1f\x7f]")


def render_line(raw: str) -> str:
    """One line of terminal output as displayed (no trailing newline in ``raw``)."""
    text = _ANSI.sub("", raw).rstrip("\r")
    if "\r" in text:
        segments = text.split("\r")
        rendered = ""
        for seg in segments:  # each segment overwrites from column 0
            rendered = seg + rendered[len(seg):]
        text = rendered
    if "\b" in text:
        out: list[str] = []
        for ch in text:
            if ch == "\b":
                if out:
                    out.pop()
            else:
                out.append(ch)
        text = "".join(out)
    return _CONTROL.sub("", text)


def render_lines(lines: list[str]) -> list[str]:
    """:func:`render_line` over many lines."""
    return [render_line(line) for line in lines]


class PromptFilter:
    """Drops lines that are a shell prompt followed by a typed command (the echo).

    ``prompt`` is the text left of the cursor when the wait started, if the pane sat at
    a prompt; any new line that starts with it is the shell echoing a command line, and
    must never satisfy a criteria ("echo BUILD OK" would match "BUILD OK" at once).
    """

    def __init__(self, prompt: str) -> None:
        self.prompt = prompt.strip()

    def keep(self, line: str) -> bool:
        """True for a line of program output, False for an echoed command line."""
        return not (len(self.prompt) >= 1 and line.lstrip().startswith(self.prompt))
