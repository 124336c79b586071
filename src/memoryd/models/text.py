"""Rules on strings, each stated once as a regular expression that is both published and
enforced, so the OpenAPI schema and the server cannot disagree.

A :class:`Matches` annotation puts its pattern in the field's JSON schema (``pattern``) and
refuses, with its own message, a value the pattern does not find. The pattern is read the way
JSON Schema (ECMA-262) reads it and the way schema-driven clients generate from it: a search
(not anchored unless it says ``^``/``$``), ``$`` at the very end only, ``\\d``/``\\w`` over
ASCII. Patterns here avoid ``\\s``, whose meaning differs between engines, and spell their
blank characters out: :data:`BLANK_CLASS` is exactly what Python's ``str.strip()`` strips.

>>> from typing import Annotated
>>> Word = Annotated[str, Matches("^[a-z]+$", "must be lowercase letters")]
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic_core import core_schema


def _char_class(chars: str) -> str:
    """The inside of a regex character class matching exactly ``chars`` (in the Basic
    Multilingual Plane), as escapes ECMA-262 and Python read alike."""
    runs: list[list[int]] = []
    for code in sorted(ord(c) for c in chars):
        if runs and code == runs[-1][1] + 1:
            runs[-1][1] = code
        else:
            runs.append([code, code])

    def esc(code: int) -> str:
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    return "".join(esc(a) if a == b else f"{esc(a)}-{esc(b)}" for a, b in runs)


#: The characters that count as blank around a word: exactly those ``str.strip()`` strips.
BLANK = "".join(chr(c) for c in range(0x10000) if chr(c).isspace())
BLANK_CLASS = _char_class(BLANK)
#: Somewhere a character that is not blank (JSON Schema pattern).
NOT_BLANK = f"[^{BLANK_CLASS}]"
# Characters that show nothing: blanks, C0/C1 controls, the common invisible format characters
# (soft hyphen, zero-width and direction marks, word joiners, byte order mark, interlinear
# annotation), private use code points and the tag characters. Planes past the first are
# written as the characters themselves: ECMA-262 and Python spell their escapes differently.
_INVISIBLE = (
    r"\x00-\x20\x7f-\xa0\xad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u1680"
    r"\u2000-\u200f\u2028-\u202f\u205f-\u206f\u3000\u3164\ue000-\uf8ff\ufe00-\ufe0f\ufeff"
    r"\uffa0\ufff0-\ufffb" + "\U000e0000-\U000e0fff\U000f0000-\U0010ffff"
)
#: Somewhere a character that shows (JSON Schema pattern): content must have one.
VISIBLE = f"[^{_INVISIBLE}]"


@lru_cache(maxsize=256)
def compile_pattern(pattern: str) -> re.Pattern[str]:
    """``pattern`` as JSON Schema reads it, for Python's ``re.search``: a closing ``$`` is the
    end of the string (Python's also matches before a final newline) and ``\\d``, ``\\w`` and
    ``\\b`` are ASCII."""
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = pattern[:-1] + r"\Z"
    return re.compile(pattern, re.ASCII)


_VISIBLE_RE = compile_pattern(VISIBLE)


def has_visible(text: str) -> bool:
    """Whether ``text`` has a character that shows (see :data:`VISIBLE`)."""
    return _VISIBLE_RE.search(text) is not None


@dataclass(frozen=True)
class Matches:
    """A string rule: ``pattern`` is published in the JSON schema and enforced with
    ``message`` (which names the rule, never the value: the value may be a secret)."""

    pattern: str
    message: str

    def check(self, value: Any) -> Any:
        """``value`` if it is not a string or the pattern finds it; else ValueError."""
        if isinstance(value, str) and not compile_pattern(self.pattern).search(value):
            raise ValueError(self.message)
        return value

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        compile_pattern(self.pattern)  # a bad pattern fails when the model is built
        return core_schema.no_info_after_validator_function(self.check, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> dict[str, Any]:
        out = handler(schema)
        target = handler.resolve_ref_schema(out)
        target["pattern"] = self.pattern
        return out
