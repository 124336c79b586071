"""Find credentials in text before it is stored (Vestige #154: a live client secret sat in
the store for months).

:func:`scan` returns :class:`Finding` spans; :func:`redact` replaces them with
``[REDACTED:<kind>]``; :func:`ensure_no_secrets` raises :class:`~memoryd.errors.SecretDetected`.
:func:`scan_fields` screens every text value of a write at once (content, summary, tags,
metadata keys and values at any depth, source, category, ...) and names the field of each
finding; :func:`redact_fields` and :func:`ensure_no_secrets_in_fields` are its redact and
refuse modes. Refusals name the kind and the field, never the secret.

Two families of rules:

* **Provider formats** with a fixed prefix and alphabet (:mod:`memoryd.cognition.secret_rules`:
  memoryd's own ``mk_`` keys, cloud, source hosting, messaging, payment and model providers,
  PEM private keys, JWTs, ...), specific enough to flag on sight; OpenAI-style ``sk-...``
  keys must contain a digit (so ``sk-this-is-not-a-key`` is prose).
* **Context rules**: passwords in URLs (``scheme://user:pass@host``), AWS secret keys after
  an ``aws_secret_access_key`` name, ``Bearer`` tokens, ``Authorization: Basic`` credentials,
  and generic assignments (``password=``, ``api_key:``, ``"secret": "..."``, ``token =`` ...).
  Values that are code (calls, subscripts, attribute chains, ``$VAR``/``${...}``/``<...>``
  placeholders, ALL_CAPS names, ``None``) or obvious placeholders (``changeme``,
  ``your-api-key``, ``xxxx``, ``***``) are never flagged.

The entropy decision (``password=hunter``): a generic assignment is flagged only when its
value looks machine-made or at least password-like, because prose and code are full of
``password=...``/``token=...`` with placeholder values and a false alarm blocks a write.
Token-like names (api_key, secret, token, ...) need >= 16 characters, a digit, two
character classes and Shannon entropy >= 3.0 bits/char (random base62/hex strings of that
length sit at 3.5-4.0). Password-like names need >= 8 characters, a digit or symbol, two
classes and entropy >= 2.5. So ``password=hunter`` and ``password=hunter2`` (too short,
human) pass, ``password=Tr0ub4dor&3`` is caught; letters-only passphrases are a known miss.
Stripe *test* keys (``sk_test_``) are not flagged.

Measured on the 5,094 messages of the BEAM development chats (code-heavy agent
conversations): 3 findings, all hard-coded passwords in example code; 0.1 ms median per
message (2.5 KB on average), every field of a write 0.3 ms (bench/results/security.md).
Every rule is linear-time (tests feed pathological inputs).
"""

from __future__ import annotations

import base64
import bisect
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from memoryd.cognition.secret_rules import (
    IDENT_CHARS,
    PLACEHOLDER_EXACT,
    PLACEHOLDER_WORDS,
    PROVIDER_RULES,
)
from memoryd.errors import InvalidInput, SecretDetected, SecretInFields

__all__ = [
    "FieldFinding",
    "Finding",
    "SecretInFields",
    "SecretScanParams",
    "ensure_no_secrets",
    "ensure_no_secrets_in_fields",
    "redact",
    "redact_fields",
    "scan",
    "scan_fields",
    "shannon_entropy",
]


@dataclass(frozen=True)
class Finding:
    """One suspected credential: its kind and the [start, end) span in the scanned text."""

    kind: str
    start: int
    end: int


@dataclass(frozen=True)
class SecretScanParams:
    """Thresholds of the context rules (see the module docstring for why).

    token_min_length / token_min_entropy: generic api_key/secret/token values (16, 3.0).
    password_min_length / password_min_entropy: generic password values (8, 2.5).
    bearer_min_length: ``Authorization: Bearer <token>`` tokens (20).
    """

    token_min_length: int = 16
    token_min_entropy: float = 3.0
    password_min_length: int = 8
    password_min_entropy: float = 2.5
    bearer_min_length: int = 20


DEFAULT_SCAN_PARAMS = SecretScanParams()

# --- context rules ---------------------------------------------------------------------------
# Found from cheap anchors (``://``, ``bearer``, an assignment operator) with short anchored
# regexes around them: an unanchored case-insensitive search for every credential name costs
# milliseconds per message on code-heavy text.

_AWS_SECRET = re.compile(
    r"(?i)aws_?secret(?:_?access)?_?key[\"']?\s*(?:=>|:=|[:=])\s*[\"']?"
    r"(?P<value>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"
)
_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
_URL_AUTHORITY = re.compile(r"[^\s:/@\"'<>]+:(?P<value>[^\s@/\"'<>]+)@[A-Za-z0-9\[\]._\-]+")
_BEARER_VALUE = re.compile(r"[ \t]+(?P<value>[A-Za-z0-9\-._~+/]+=*)")
_BASIC_VALUE = re.compile(r"[ \t]+(?P<value>[A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])")
_PASSWORD_NAMES = r"pass(?:word|wd|phrase)?|pwd"
_TOKEN_NAMES = (
    r"api[_\-]?key|apikey|api[_\-]?secret|secret(?:[_\-]?key)?|client[_\-]?secret|"
    r"app[_\-]?secret|access[_\-]?key|access[_\-]?token|auth[_\-]?token|refresh[_\-]?token|"
    r"private[_\-]?key|signing[_\-]?key|token"
)
# A credential name is the last word(s) of the identifier before the operator:
# ``password``, ``DB_PASSWORD``, ``x-api-key``, ``stripe.api_key`` (only ``api_key`` is seen).
_NAME = re.compile(
    r"(?i)(?:[a-z0-9]+[_\-])*?(?P<name>(?P<pw>" + _PASSWORD_NAMES + ")|" + _TOKEN_NAMES + ")"
)
_OPERATOR = re.compile(r"=>|:=|==?|:")
_VALUE = re.compile(r"[ \t]*(?P<quote>[\"'`]?)(?P<value>[^\s\"'`,;]+)")
_ASSIGNMENT_HINTS = ("pass", "pwd", "key", "secret", "token")
_DOTTED_NAME = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$")
_ALL_CAPS_NAME = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")


def shannon_entropy(value: str) -> float:
    """Shannon entropy of ``value`` in bits per character (0 for an empty string)."""
    if not value:
        return 0.0
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _classes(value: str) -> int:
    return sum(
        (
            any(c.islower() for c in value),
            any(c.isupper() for c in value),
            any(c.isdigit() for c in value),
            any(not c.isalnum() and c not in "_-." for c in value),
        )
    )


def _is_code_or_placeholder(value: str) -> bool:
    """Values that are expressions, variable references or obvious placeholders."""
    low = value.lower()
    if low in PLACEHOLDER_EXACT or set(value) <= set("*x.?#-_0"):
        return True
    if value[0] in "$%{<[(@&*" or value.endswith(("(", ")", "]", "}", ">")):
        return True
    if any(ch in value for ch in "()[]{}<>") or "${" in value or "{{" in value:
        return True
    if _DOTTED_NAME.match(value) or _ALL_CAPS_NAME.match(value):
        return True
    return any(word in low for word in PLACEHOLDER_WORDS)


def _looks_like_token(value: str, params: SecretScanParams) -> bool:
    return (
        len(value) >= params.token_min_length
        and any(c.isdigit() for c in value)
        and _classes(value) >= 2
        and shannon_entropy(value) >= params.token_min_entropy
    )


def _looks_like_password(value: str, params: SecretScanParams) -> bool:
    return (
        len(value) >= params.password_min_length
        and any(c.isdigit() or not c.isalnum() for c in value)
        and _classes(value) >= 2
        and shannon_entropy(value) >= params.password_min_entropy
    )


def _left_ok(text: str, start: int, allow_separator: bool = False) -> bool:
    """No identifier character just before ``start`` (optionally allowing ``_``/``-``, so
    that ``DB_PASSWORD`` and ``x-api-key`` count as names)."""
    if start == 0:
        return True
    before = text[start - 1]
    if allow_separator and before in "_-":
        return True
    return before not in IDENT_CHARS


def _context_findings(text: str, params: SecretScanParams) -> Iterable[Finding]:
    lowered = text.lower()
    if "aws" in lowered and "secret" in lowered:
        yield from _aws_secret_findings(text)
    if "://" in text:
        yield from _url_password_findings(text)
    if "bearer" in lowered:
        yield from _bearer_findings(text, lowered, params)
    if "basic" in lowered and "authorization" in lowered:
        yield from _basic_auth_findings(text, lowered)
    if any(hint in lowered for hint in _ASSIGNMENT_HINTS):
        yield from _assignment_findings(text, lowered, params)


def _aws_secret_findings(text: str) -> Iterable[Finding]:
    for m in _AWS_SECRET.finditer(text):
        value = m.group("value")
        if _classes(value) >= 2 and not _is_code_or_placeholder(value):
            yield Finding("aws_secret_access_key", m.start("value"), m.end("value"))


def _url_password_findings(text: str) -> Iterable[Finding]:
    pos = text.find("://")
    while pos != -1:
        start = pos
        while start > 0 and text[start - 1] in _SCHEME_CHARS:
            start -= 1
        m = _URL_AUTHORITY.match(text, pos + 3)
        if start < pos and text[start].isalpha() and m:
            value = m.group("value")
            if not _is_code_or_placeholder(value) and len(value) >= 3:
                yield Finding("url_password", m.start("value"), m.end("value"))
        pos = text.find("://", pos + 3)


def _bearer_findings(text: str, lowered: str, params: SecretScanParams) -> Iterable[Finding]:
    pos = lowered.find("bearer")
    while pos != -1:
        m = _BEARER_VALUE.match(text, pos + 6)
        if m and _left_ok(text, pos):
            value = m.group("value")
            if (
                len(value) >= params.bearer_min_length
                and not _is_code_or_placeholder(value)
                and _looks_like_token(value, params)
            ):
                yield Finding("bearer_token", m.start("value"), m.end("value"))
        pos = lowered.find("bearer", pos + 6)


def _basic_auth_findings(text: str, lowered: str) -> Iterable[Finding]:
    """``Authorization: Basic <base64 of user:password>`` (the header, as logged or pasted)."""
    pos = lowered.find("basic")
    while pos != -1:
        line_start = lowered.rfind("\n", 0, pos) + 1
        m = _BASIC_VALUE.match(text, pos + 5)
        if m and "authorization" in lowered[max(line_start, pos - 40) : pos]:
            password = _basic_password(m.group("value"))
            if password and len(password) >= 3 and not _is_code_or_placeholder(password):
                yield Finding("basic_auth", m.start("value"), m.end("value"))
        pos = lowered.find("basic", pos + 5)


def _basic_password(value: str) -> str | None:
    try:
        decoded = base64.b64decode(value, validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return None
    _, sep, password = decoded.partition(":")
    return password if sep and decoded.isprintable() else None


def _assignment_findings(text: str, lowered: str, params: SecretScanParams) -> Iterable[Finding]:
    for op in _OPERATOR.finditer(text):
        # The identifier just before the operator (skipping a closing quote and blanks).
        end = op.start()
        while end > 0 and text[end - 1] in " \t":
            end -= 1
        if end > 0 and text[end - 1] in "\"'":
            end -= 1
        start = end
        while start > 0 and text[start - 1] in IDENT_CHARS and end - start < 64:
            start -= 1
        if start == end or not any(h in lowered[start:end] for h in _ASSIGNMENT_HINTS):
            continue
        name = _NAME.fullmatch(text, start, end)
        if name is None:
            continue
        m = _VALUE.match(text, op.end())
        if m is None:
            continue
        value = m.group("value")
        if m.group("quote"):
            value = value.rstrip("\"'`")
        if not value or _is_code_or_placeholder(value):
            continue
        is_password = name.group("pw") is not None
        ok = _looks_like_password(value, params) if is_password else _looks_like_token(value, params)
        if ok:
            kind = "password_assignment" if is_password else "secret_assignment"
            yield Finding(kind, m.start("value"), m.start("value") + len(value))


def scan(text: str, params: SecretScanParams = DEFAULT_SCAN_PARAMS) -> list[Finding]:
    """Suspected credentials in ``text``, sorted by position, without overlaps.

    Provider formats win over context rules when spans overlap; among overlapping findings
    of the same family the earlier (then longer) one is kept.
    """
    found: list[tuple[int, Finding]] = []
    for kind, hints, pattern in PROVIDER_RULES:
        if not any(hint in text for hint in hints):
            continue
        for m in pattern.finditer(text):
            if _left_ok(text, m.start()):
                found.append((0, Finding(kind, m.start(), m.end())))
    found.extend((1, f) for f in _context_findings(text, params))
    found.sort(key=lambda pf: (pf[0], pf[1].start, -(pf[1].end - pf[1].start)))
    kept: list[Finding] = []  # disjoint, sorted by start
    starts: list[int] = []
    for _, finding in found:
        i = bisect.bisect_right(starts, finding.start)
        if i > 0 and kept[i - 1].end > finding.start:
            continue
        if i < len(kept) and kept[i].start < finding.end:
            continue
        kept.insert(i, finding)
        starts.insert(i, finding.start)
    return kept


def redact(text: str, findings: Iterable[Finding]) -> str:
    """``text`` with every finding's span replaced by ``[REDACTED:<kind>]``."""
    out = text
    for finding in sorted(findings, key=lambda f: f.start, reverse=True):
        out = out[: finding.start] + f"[REDACTED:{finding.kind}]" + out[finding.end :]
    return out


def ensure_no_secrets(text: str, params: SecretScanParams = DEFAULT_SCAN_PARAMS) -> None:
    """Raise :class:`~memoryd.errors.SecretDetected` (with the kinds found) if ``text``
    contains a suspected credential."""
    findings = scan(text, params)
    if findings:
        raise SecretDetected(list(dict.fromkeys(f.kind for f in findings)))


# --- every field of a write ---------------------------------------------------------------
MAX_FIELD_DEPTH = 32
# No rule can match in less: provider formats are 20+ characters, password values 8+, a URL
# with a password 9+. Tags, short metadata values and keys are skipped without scanning.
_MIN_SECRET_CHARS = 8
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_\-]{1,40}")


@dataclass(frozen=True)
class FieldFinding:
    """A suspected credential in one field of a write.

    ``field`` is a path: ``content``, ``tags[2]``, ``metadata.db.password``, or
    ``metadata[key 0]`` when a mapping key is itself the secret (keys that are not plain
    identifiers never appear in a path, so a path cannot leak a secret). ``start``/``end``
    span the finding within that field's text.
    """

    field: str
    kind: str
    start: int
    end: int


def scan_fields(
    fields: Mapping[str, Any],
    params: SecretScanParams = DEFAULT_SCAN_PARAMS,
    *,
    max_depth: int = MAX_FIELD_DEPTH,
) -> list[FieldFinding]:
    """Suspected credentials in every text value of a write, each with its field path.

    Walks strings, lists and mappings (keys and values) down to ``max_depth`` levels;
    numbers, booleans, dates and ``None`` are skipped. A string under a mapping key is read
    as ``key=value``, so ``{"password": "Tr0ub4dor&3x"}`` is caught like the assignment.
    Raises InvalidInput for structures nested deeper than ``max_depth`` (they cannot be
    screened, so they are not stored either).

    >>> [(f.field, f.kind) for f in scan_fields({"content": "notes", "tags": ["ok", token]})]
    [('tags[1]', 'github_token')]
    """
    found: list[FieldFinding] = []

    def visit(path: str, text: str, key: str | None) -> tuple[str, bool]:
        findings = _findings(path, text, key, params)
        found.extend(findings)
        return text, bool(findings)

    for name, value in fields.items():
        _walk(value, str(name), 1, max_depth, visit)
    return found


def redact_fields(
    fields: Mapping[str, Any],
    params: SecretScanParams = DEFAULT_SCAN_PARAMS,
    *,
    max_depth: int = MAX_FIELD_DEPTH,
) -> tuple[dict[str, Any], list[FieldFinding]]:
    """A copy of ``fields`` with every finding replaced by ``[REDACTED:<kind>]`` (mapping
    keys included), and the findings; the input is not changed."""
    found: list[FieldFinding] = []

    def visit(path: str, text: str, key: str | None) -> tuple[str, bool]:
        findings = _findings(path, text, key, params)
        found.extend(findings)
        return redact(text, [Finding(f.kind, f.start, f.end) for f in findings]), bool(findings)

    out = {name: _walk(value, str(name), 1, max_depth, visit) for name, value in fields.items()}
    return out, found


def ensure_no_secrets_in_fields(
    fields: Mapping[str, Any],
    params: SecretScanParams = DEFAULT_SCAN_PARAMS,
    *,
    max_depth: int = MAX_FIELD_DEPTH,
) -> None:
    """Raise :class:`SecretInFields` (naming kinds and fields) if any field holds a secret."""
    findings = scan_fields(fields, params, max_depth=max_depth)
    if findings:
        raise SecretInFields(findings)


Visit = Callable[[str, str, "str | None"], tuple[str, bool]]


def _findings(
    path: str, text: str, key: str | None, params: SecretScanParams
) -> list[FieldFinding]:
    if len(text) < _MIN_SECRET_CHARS:
        return []
    if key is None:
        return [FieldFinding(path, f.kind, f.start, f.end) for f in scan(text, params)]
    # Read as an assignment, then keep what lies in the value (the key is scanned itself).
    offset = len(key) + 1
    return [
        FieldFinding(path, f.kind, f.start - offset, f.end - offset)
        for f in scan(f"{key}={text}", params)
        if f.start >= offset
    ]


def _walk(
    value: Any, path: str, depth: int, max_depth: int, visit: Visit, key: str | None = None
) -> Any:
    """``value`` rebuilt with ``visit`` applied to every string (keys included)."""
    if isinstance(value, str):
        return visit(path, value, key)[0]
    if isinstance(value, (bool, int, float)) or value is None:
        return value
    if depth > max_depth:
        raise InvalidInput(
            f"{path}: nested deeper than {max_depth} levels; it cannot be screened for secrets"
        )
    if isinstance(value, Mapping):
        return _walk_mapping(value, path, depth, max_depth, visit)
    if isinstance(value, (list, tuple)):
        items = [_walk(v, f"{path}[{i}]", depth + 1, max_depth, visit) for i, v in enumerate(value)]
        return items if isinstance(value, list) else tuple(items)
    dump = getattr(value, "model_dump", None)
    if callable(dump):  # a pydantic model: screen its fields, rebuild it
        walked = _walk_mapping(dump(), path, depth, max_depth, visit)
        return type(value).model_validate(walked)
    return value


def _walk_mapping(
    value: Mapping[Any, Any], path: str, depth: int, max_depth: int, visit: Visit
) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for i, (raw_key, item) in enumerate(value.items()):
        key_path = f"{path}[key {i}]"
        is_text = isinstance(raw_key, str)
        new_key, secret = visit(key_path, raw_key, None) if is_text else (raw_key, False)
        clean = is_text and not secret and _PLAIN_KEY.fullmatch(raw_key)
        item_path = f"{path}.{raw_key}" if clean else f"{path}[{i}]"
        name = raw_key if isinstance(raw_key, str) else None
        if new_key in out:  # two keys redacted to the same text
            new_key = f"{new_key}#{i}"
        out[new_key] = _walk(item, item_path, depth + 1, max_depth, visit, key=name)
    return out
