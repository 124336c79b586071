"""Days and time zones as people and agents write them: parsing and bounds."""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta, tzinfo

from memoryd.errors import InvalidInput
from memoryd.models.text import BLANK_CLASS

#: A day as given (blanks around it are forgiven) and an IANA time zone name, as published.
DAY_PATTERN = f"^[{BLANK_CLASS}]*" + r"[0-9]{4}-[0-9]{2}-[0-9]{2}" + f"[{BLANK_CLASS}]*$"
TZ_PATTERN = (f"^[{BLANK_CLASS}]*" + r"[A-Za-z][A-Za-z0-9_+\-]*(?:/[A-Za-z0-9_+\-]+)*"
              + f"[{BLANK_CLASS}]*$")
_DAY_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def day_bounds(day: date, tz: tzinfo | None = None) -> tuple[datetime, datetime]:
    """Start (inclusive) and end (exclusive) of ``day`` in ``tz``.

    ``tz`` defaults to this machine's local time zone, applied to each midnight on its
    own so that a day with a daylight-saving change is 23 or 25 hours long.
    """
    try:
        midnights = [datetime.combine(d, time.min) for d in (day, day + timedelta(days=1))]
        if tz is None:
            start, end = (m.astimezone() for m in midnights)
        else:
            start, end = (m.replace(tzinfo=tz) for m in midnights)
        for bound in (start, end):
            bound.timestamp()  # an out-of-range day fails here rather than in the store
    except (OverflowError, OSError, ValueError):
        raise InvalidInput(f"day {day.isoformat()} is out of range") from None
    return start, end


def parse_tz(name: str) -> tzinfo:
    """An IANA time zone by name (e.g. ``Europe/Berlin``, ``UTC``); InvalidInput if unknown."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidInput(
            "unknown time zone; use an IANA name such as Europe/Berlin or UTC"
        ) from None


def parse_day(text: str) -> date:
    """``YYYY-MM-DD`` as a date; InvalidInput with an example when it is not one."""
    if not _DAY_RE.fullmatch(text.strip()):
        raise InvalidInput("day must be a date as YYYY-MM-DD (e.g. 2024-05-17)")
    try:
        day = date.fromisoformat(text.strip())
    except ValueError as exc:
        raise InvalidInput(f"day is not a valid date: {exc}") from None
    day_bounds(day)
    return day
