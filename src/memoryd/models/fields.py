"""The building blocks of memoryd's models, each defined once: closed sets of values, field
types with their limits, and the checks every input passes (finite numbers, dates that survive
time-zone arithmetic, bounded JSON).

Input models are made of these types, so a limit changes in one place for every face.
"""

from __future__ import annotations

import json
import math
import re
from datetime import datetime, timedelta, timezone
from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from memoryd.models.text import BLANK_CLASS, NOT_BLANK, VISIBLE, Matches

NodeType = Literal[
    "fact", "preference", "decision", "pattern", "event", "observation", "note", "concept",
    "person", "code", "message", "summary", "insight", "error", "task", "intention",
    # Kinds of knowledge-graph node (memoryd.graph) that are not memory types above.
    "convention", "gotcha", "component", "command",
]
NODE_TYPES: tuple[str, ...] = get_args(NodeType)
Tier = Literal["hot", "warm", "cold"]
Severity = Literal["low", "medium", "high", "critical"]
Timeframe = Literal["1h", "24h", "7d", "30d", "90d", "all"]
TIMEFRAMES: dict[str, timedelta | None] = {
    "1h": timedelta(hours=1), "24h": timedelta(hours=24), "7d": timedelta(days=7),
    "30d": timedelta(days=30), "90d": timedelta(days=90), "all": None,
}
assert tuple(TIMEFRAMES) == get_args(Timeframe)

SCOPE_PATTERN = r"^(user|project:[A-Za-z0-9_.\-/]{1,128})$"
_SCOPE_RE = re.compile(SCOPE_PATTERN[:-1] + r"\Z")
_DOMAIN_RE = re.compile(r"^[a-z0-9](?:[a-z0-9_-]{0,62}[a-z0-9])?\Z")
# A domain name as given (blanks around it and upper case are forgiven).
DOMAIN_PATTERN = (f"^[{BLANK_CLASS}]*" + r"[A-Za-z0-9](?:[A-Za-z0-9_-]{0,62}[A-Za-z0-9])?"
                  + f"[{BLANK_CLASS}]*$")
#: Names a domain may not take: words of the REST paths under /api/v1/domains.
RESERVED_DOMAIN_NAMES = frozenset({"proposals", "merge", "discover", "threshold"})
TAG_MAX_CHARS = 64
MAX_TAGS = 64
JSON_MAX_DEPTH = 10
JSON_MAX_BYTES = 64 * 1024
_EARLIEST = datetime(1, 1, 2, tzinfo=timezone.utc)
_LATEST = datetime(9999, 12, 30, tzinfo=timezone.utc)


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(timezone.utc)


def as_utc(value: datetime) -> datetime:
    """Treat naive datetimes as UTC and convert aware ones to UTC."""
    if value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


def check_utc(value: datetime) -> datetime:
    """A datetime in UTC, refused when it is too close to the ends of the calendar for time-zone
    arithmetic (years 1 and 9999)."""
    try:
        utc = as_utc(value)
    except (OverflowError, ValueError):
        raise ValueError("date is out of range (years 0001-9999 in UTC)") from None
    if not _EARLIEST <= utc <= _LATEST:
        raise ValueError("date is out of range (years 0001-9999 in UTC)")
    return utc


def check_scope(value: str) -> str:
    """``user`` or ``project:<name>``."""
    if not _SCOPE_RE.match(value):
        raise ValueError("scope must be 'user' or 'project:<name>'")
    return value


def check_domain_name(value: str) -> str:
    """A domain name: 1-64 lowercase letters, digits, ``-`` and ``_``, starting and ending with
    a letter or digit (``home``, ``infra``, ``rust-cargo``); upper case is folded."""
    name = value.strip().lower()
    if not _DOMAIN_RE.match(name):
        raise ValueError("a domain name must be 1-64 lowercase letters, digits, '-' or '_', "
                         "starting and ending with a letter or digit")
    if name in RESERVED_DOMAIN_NAMES:
        raise ValueError(f"{name!r} is reserved; choose another domain name")
    return name


def clean_tags(tags: list[str]) -> list[str]:
    """Tags stripped and de-duplicated in order, in one pass; blank or over-long tags refused.

    :data:`Tags` checks the list's length before this runs, so a flood of tags is refused
    before any per-tag work (de-duplicating 40,000 tags by list search held a server for
    seconds).
    """
    out: dict[str, None] = {}
    for i, tag in enumerate(tags):
        if len(tag) > TAG_MAX_CHARS:
            raise ValueError(f"tag {i} is longer than {TAG_MAX_CHARS} characters")
        tag = tag.strip()
        if not tag:
            raise ValueError(f"tag {i} is blank; tags must be non-empty strings")
        out[tag] = None
    return list(out)


def reject_bool(value: Any) -> Any:
    """A number field's value, unless it is a boolean (``true`` is not 1.0)."""
    if isinstance(value, bool):
        raise ValueError("must be a number, not true or false")
    return value


# ISO 8601 / RFC 3339 date and time, e.g. 2024-05-17T09:30:00Z (without an offset: UTC).
_ISO_DATETIME = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:[Zz]|[+-]\d{2}(?::?\d{2})?)?",
    re.ASCII,
)


def iso_datetime(value: Any) -> Any:
    """A date-time as given: a ``datetime``, or an ISO 8601 string with date and time. Epoch
    seconds (``0``, ``1e9``, ``"0"``) are refused: they are too easily a mistake."""
    if isinstance(value, datetime):
        return value
    if isinstance(value, str) and _ISO_DATETIME.fullmatch(value):
        try:
            return datetime.fromisoformat(value.upper())
        except ValueError:
            pass  # e.g. 2024-02-30
    raise ValueError("must be an ISO 8601 date and time, e.g. 2024-05-17T09:30:00Z")


def check_json(value: Any) -> Any:
    """A JSON value memoryd will store: at most ``JSON_MAX_DEPTH`` levels, ``JSON_MAX_BYTES``
    serialised, string keys, finite numbers only."""
    _walk_json(value, 1)
    size = len(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    if size > JSON_MAX_BYTES:
        raise ValueError(f"is {size} bytes as JSON; the limit is {JSON_MAX_BYTES}")
    return value


def _walk_json(value: Any, depth: int) -> None:
    if depth > JSON_MAX_DEPTH:
        raise ValueError(f"nests deeper than {JSON_MAX_DEPTH} levels")
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError("object keys must be strings")
            _walk_json(item, depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _walk_json(item, depth + 1)
    elif isinstance(value, float) and not math.isfinite(value):
        raise ValueError("numbers must be finite (no NaN or Infinity)")
    elif value is not None and not isinstance(value, (str, int, float, bool)):
        raise ValueError(f"cannot hold a {type(value).__name__}")


UTCDateTime = Annotated[datetime, BeforeValidator(iso_datetime), AfterValidator(check_utc)]
Scope = Annotated[str, Matches(SCOPE_PATTERN, "scope must be 'user' or 'project:<name>'"),
                  Field(description="'user' (default) or 'project:<name>'.")]
# A tag: up to 64 characters, not all blank (so not empty either).
Tag = Annotated[str, Field(max_length=TAG_MAX_CHARS),
                Matches(NOT_BLANK, "tags must be non-empty strings")]
# The list's length is checked first (Field before the validator): see clean_tags.
Tags = Annotated[list[Tag], Field(max_length=MAX_TAGS), AfterValidator(clean_tags),
                 Field(description="Labels.")]
Metadata = Annotated[dict[str, Any], AfterValidator(check_json), Field(
    description="Free-form JSON object (at most 10 levels deep, 64 KiB).")]
DomainName = Annotated[str, Field(min_length=1, max_length=80), Matches(
    DOMAIN_PATTERN, "a domain name must be 1-64 lowercase letters, digits, '-' or '_', starting "
    "and ending with a letter or digit"), AfterValidator(check_domain_name), Field(
    description="A domain's name, e.g. 'home' or 'infra' (upper case is folded).")]
DomainNames = Annotated[list[DomainName], Field(min_length=1, max_length=64)]
Importance = Annotated[float, Field(ge=0.0, le=1.0, description="0..1; how much it matters."),
                       BeforeValidator(reject_bool)]
Summary = Annotated[str, Field(max_length=2000, description="A one-line summary.")]
Category = Annotated[str, Field(max_length=128, description="A category, e.g. 'error'.")]
Source = Annotated[str, Field(max_length=1024, description="Where it came from.")]
Label = Annotated[str, Field(max_length=256)]
# What a search looks for: up to 4096 characters, not all blank.
QueryText = Annotated[str, Field(min_length=1, max_length=4096),
                      Matches(NOT_BLANK, "query is empty")]
CODEBASE_PATTERN = r"^[A-Za-z0-9_.\-/]{1,128}$"
CodebaseName = Annotated[str, Field(min_length=1, max_length=128), Matches(
    CODEBASE_PATTERN, "codebase must be 1-128 characters of letters, digits, _ . - /")]
Content = Annotated[str, Field(min_length=1, description="The memory, in one or a few sentences."),
                    Matches(VISIBLE, "content is empty (or only invisible characters)")]
MemoryIdText = Annotated[str, Field(min_length=1, max_length=256, description="The memory's id.")]


def check_new_memory_id(value: str) -> str:
    """An id a new memory may be given (imports): one every face can name, so no surrounding
    spaces, no control characters and no '/' (a REST path could not hold it)."""
    if value != value.strip() or not value.strip():
        raise ValueError("an id must not be blank or start or end with a space")
    if not value.isprintable() or "/" in value:
        raise ValueError("an id must not contain control characters or '/'")
    return value


NewMemoryId = Annotated[MemoryIdText, AfterValidator(check_new_memory_id)]


class Strict(BaseModel):
    """Base of input models: unknown fields are errors that name the field; numbers must be
    finite."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


def check_validity(valid_from: datetime | None, valid_until: datetime | None) -> None:
    """``valid_from`` must not be after ``valid_until``."""
    if valid_from is not None and valid_until is not None and valid_from > valid_until:
        raise ValueError("valid_from must not be after valid_until")


class StrictValidity(Strict):
    """An input model whose ``valid_from`` (if it has one) is not after its ``valid_until``."""

    @model_validator(mode="after")
    def _validity(self) -> StrictValidity:
        check_validity(getattr(self, "valid_from", None), getattr(self, "valid_until", None))
        return self
