"""Find credentials in text before it is stored (Vestige #154: a live client secret sat in
the store for months).

:func:`scan` returns :class:`Finding` spans; :func:`redact` replaces them with
``[REDACTED:<kind>]``; :func:`ensure_no_secrets` raises :class:`~memoryd.errors.SecretDetected`.

Two families of rules:

* **Provider formats** with a fixed prefix and alphabet (AWS key ids, GitHub, GitLab, Slack,
  Stripe, OpenAI, Anthropic, Google, Hugging Face, npm, PyPI, SendGrid, PEM private keys,
  JWTs). These are specific enough to flag on sight; the only extra check is that
  OpenAI-style ``sk-...`` keys contain a digit (so ``sk-this-is-not-a-key`` is prose).
* **Context rules**: passwords in URLs (``scheme://user:pass@host``), AWS secret keys after
  an ``aws_secret_access_key`` name, ``Bearer`` tokens, and generic assignments
  (``password=``, ``api_key:``, ``"secret": "..."``, ``token =`` ...). Values that are code
  (calls, subscripts, attribute chains, ``$VAR``/``${...}``/``<...>`` placeholders,
  ALL_CAPS names, ``None``) or obvious placeholders (``changeme``, ``your-api-key``,
  ``xxxx``, ``***``) are never flagged.

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
conversations): 3 findings, all hard-coded passwords in example code; about 0.5 ms per
2 KB message. Every rule is linear-time (tests feed pathological inputs).
"""

from __future__ import annotations

import bisect
import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from memoryd.errors import SecretDetected

__all__ = [
    "Finding",
    "SecretScanParams",
    "ensure_no_secrets",
    "redact",
    "scan",
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

# --- provider formats ------------------------------------------------------------------------
# Each rule: (kind, literal hints, pattern). A rule runs only when one of its hints occurs in
# the text (a plain substring test), and patterns start with their literal prefix so that the
# regex engine can skip ahead; the left boundary (no identifier character before the match)
# is checked in Python because a leading look-behind would disable that optimisation.

_E = r"(?![A-Za-z0-9_\-])"  # right boundary: not glued to a longer identifier
_IDENT_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")

_PROVIDER_RULES: tuple[tuple[str, tuple[str, ...], re.Pattern[str]], ...] = (
    (
        "private_key",
        ("PRIVATE KEY",),
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
            r"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|[\s\S]*\Z)",
            re.S,
        ),
    ),
    (
        "aws_access_key_id",
        ("AKIA", "ASIA", "ABIA", "ACCA"),
        re.compile(r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}" + _E),
    ),
    ("github_token", ("gh",), re.compile(r"gh[pousr]_[A-Za-z0-9]{36,255}" + _E)),
    ("github_token", ("github_pat_",), re.compile(r"github_pat_[A-Za-z0-9_]{22,255}" + _E)),
    ("gitlab_token", ("glpat-",), re.compile(r"glpat-[A-Za-z0-9_\-]{20,}" + _E)),
    (
        "slack_token",
        ("xox",),
        re.compile(r"xox[abposr]-[0-9]{6,}-[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*" + _E),
    ),
    (
        "slack_webhook",
        ("hooks.slack.com",),
        re.compile(r"https://hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]{16,}"),
    ),
    ("stripe_key", ("_live_",), re.compile(r"[sr]k_live_[A-Za-z0-9]{16,}" + _E)),
    ("anthropic_key", ("sk-ant-",), re.compile(r"sk-ant-(?:[a-z0-9]+-)?[A-Za-z0-9_\-]{20,}" + _E)),
    (
        "openai_key",
        ("sk-",),
        re.compile(
            r"sk-(?!ant-)(?:proj-|svcacct-|admin-)?(?=[A-Za-z0-9_\-]*\d)[A-Za-z0-9_\-]{20,}" + _E
        ),
    ),
    ("google_api_key", ("AIza",), re.compile(r"AIza[0-9A-Za-z_\-]{35}" + _E)),
    ("huggingface_token", ("hf_",), re.compile(r"hf_[A-Za-z0-9]{30,}" + _E)),
    ("npm_token", ("npm_",), re.compile(r"npm_[A-Za-z0-9]{36}" + _E)),
    ("pypi_token", ("pypi-AgE",), re.compile(r"pypi-AgE[A-Za-z0-9_\-]{50,}" + _E)),
    (
        "sendgrid_key",
        ("SG.",),
        re.compile(r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}" + _E),
    ),
    (
        "jwt",
        ("eyJ",),
        re.compile(r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{16,}" + _E),
    ),
)


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
_PLACEHOLDER_WORDS = (
    "example",
    "your",
    "xxx",
    "changeme",
    "change_me",
    "change-me",
    "placeholder",
    "dummy",
    "redacted",
    "sample",
    "replace",
    "insert",
    "secret_here",
    "here",
    "todo",
    "fake",
    "mytoken",
    "mypassword",
    "notasecret",
)
_PLACEHOLDER_EXACT = {
    "none",
    "null",
    "nil",
    "true",
    "false",
    "undefined",
    "password",
    "secret",
    "token",
    "required",
    "optional",
    "string",
    "str",
    "empty",
}
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
    if low in _PLACEHOLDER_EXACT or set(value) <= set("*x.?#-_0"):
        return True
    if value[0] in "$%{<[(@&*" or value.endswith(("(", ")", "]", "}", ">")):
        return True
    if any(ch in value for ch in "()[]{}<>") or "${" in value or "{{" in value:
        return True
    if _DOTTED_NAME.match(value) or _ALL_CAPS_NAME.match(value):
        return True
    return any(word in low for word in _PLACEHOLDER_WORDS)


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
    return before not in _IDENT_CHARS


def _context_findings(text: str, params: SecretScanParams) -> Iterable[Finding]:
    lowered = text.lower()
    if "aws" in lowered and "secret" in lowered:
        yield from _aws_secret_findings(text)
    if "://" in text:
        yield from _url_password_findings(text)
    if "bearer" in lowered:
        yield from _bearer_findings(text, lowered, params)
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


def _assignment_findings(text: str, lowered: str, params: SecretScanParams) -> Iterable[Finding]:
    for op in _OPERATOR.finditer(text):
        # The identifier just before the operator (skipping a closing quote and blanks).
        end = op.start()
        while end > 0 and text[end - 1] in " \t":
            end -= 1
        if end > 0 and text[end - 1] in "\"'":
            end -= 1
        start = end
        while start > 0 and text[start - 1] in _IDENT_CHARS and end - start < 64:
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
    for kind, hints, pattern in _PROVIDER_RULES:
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
        kinds: list[str] = []
        for finding in findings:
            if finding.kind not in kinds:
                kinds.append(finding.kind)
        raise SecretDetected(kinds)
