"""The daily journal: what memoryd learned, changed and forgot on one day, as Markdown.

:func:`collect_day` reads the day's history page by page and keeps what the sections
need: every change is counted, but at most ``section_limit`` changes per section are
kept to be listed. :func:`render_markdown` turns the result into Markdown.

Purged memories appear by id only. Their own history rows no longer hold content, and
content a row records about *another* memory (the new text on a superseded memory's
row) is never printed: the other memory's current content is looked up instead.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, tzinfo
from typing import TYPE_CHECKING, Any

from memoryd.dates import day_bounds
from memoryd.errors import InvalidInput
from memoryd.models import NODE_TYPES, HistoryEntry, Memory

if TYPE_CHECKING:
    from memoryd.store.base import Store

PAGE_SIZE = 10_000
MAX_CHANGES = 200_000
SECTION_LIMIT = 200
SNIPPET_CHARS = 280

LEARNED = frozenset({"create"})
UPDATED = frozenset({"update", "supersede", "merge"})
STRENGTHENED = frozenset({"reinforce", "promote"})
WEAKENED = frozenset({"demote"})
FORGOTTEN = frozenset({"delete", "purge"})

_HEADINGS = {
    "fact": "Facts", "preference": "Preferences", "decision": "Decisions",
    "pattern": "Patterns", "event": "Events", "observation": "Observations", "note": "Notes",
    "concept": "Concepts", "person": "People", "code": "Code", "message": "Messages",
    "summary": "Summaries", "insight": "Insights", "error": "Errors", "task": "Tasks",
    "intention": "Intentions",
}
_HOUSEKEEPING_LABELS = {
    "reembed": "re-embedded",
    "archive": "archived",
    "retier": "re-tiered",
    "restore": "restored from a backup",
}
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>])")


def iter_changes(
    store: Store, start: datetime, end: datetime, *, page_size: int = PAGE_SIZE
) -> Iterator[HistoryEntry]:
    """History rows recorded in ``[start, end)``, in seq order, ``page_size`` rows per query.

    The first page comes from ``changes_between``; the next ones continue by seq after the
    last row read (paging by time could stall: a batch write stamps many rows with one
    time), keeping the rows inside the window, until history ends or a whole page falls
    outside the window.
    """
    if page_size < 1:
        raise InvalidInput("page_size must be at least 1")
    page = store.changes_between(start, end, limit=page_size)
    yield from page
    while len(page) == page_size:
        page = store.changes_since(page[-1].seq, limit=page_size)
        inside = [e for e in page if start <= e.at < end]
        yield from inside
        if not inside:
            return


# --- collecting ----------------------------------------------------------------------
@dataclass
class DayJournal:
    """One day's history, digested: counts of every change and the changes to list."""

    day: date
    start: datetime
    end: datetime
    tz: tzinfo | None
    counts: Counter[str] = field(default_factory=Counter)
    learned: list[HistoryEntry] = field(default_factory=list)
    updated: list[HistoryEntry] = field(default_factory=list)
    forgotten: list[HistoryEntry] = field(default_factory=list)
    touched: dict[str, set[str]] = field(default_factory=dict)  # operation -> memory ids
    memories: dict[str, Memory] = field(default_factory=dict)  # current versions, by id
    content_after: dict[int, str] = field(default_factory=dict)  # seq of an edit -> result
    truncated: bool = False

    @property
    def total(self) -> int:
        """How many changes were read."""
        return sum(self.counts.values())

    def count(self, operations: frozenset[str]) -> int:
        """How many of the changes read were one of ``operations``."""
        return sum(self.counts[op] for op in operations)


def collect_day(
    store: Store,
    day: date,
    tz: tzinfo | None = None,
    *,
    page_size: int = PAGE_SIZE,
    max_changes: int = MAX_CHANGES,
    section_limit: int = SECTION_LIMIT,
) -> DayJournal:
    """Read the history of ``day`` (midnight to midnight in ``tz``, default local time).

    Reading stops after ``max_changes`` changes (``truncated`` is then set). The memories
    the listed changes name are looked up, to show their current content.
    """
    start, end = day_bounds(day, tz)
    journal = DayJournal(day=day, start=start, end=end, tz=tz)
    listed = ((LEARNED, journal.learned), (UPDATED, journal.updated),
              (FORGOTTEN, journal.forgotten))
    for i, entry in enumerate(iter_changes(store, start, end, page_size=page_size)):
        if i >= max_changes:
            journal.truncated = True
            break
        op = entry.operation
        journal.counts[op] += 1
        if op in STRENGTHENED | WEAKENED:
            journal.touched.setdefault(op, set()).add(entry.memory_id)
        for kinds, kept in listed:
            if op in kinds and len(kept) < section_limit:
                kept.append(entry)
    journal.memories = store.get_many(_named_ids(journal))
    for entry in journal.updated:
        if _is_content_edit(entry):
            after = _content_after(store, entry, journal.memories.get(entry.memory_id))
            if after is not None:
                journal.content_after[entry.seq] = after
    return journal


def _named_ids(journal: DayJournal) -> list[str]:
    ids = [e.memory_id for e in journal.learned + journal.updated]
    for entry in journal.updated:
        for key in ("by", "into"):
            if isinstance(entry.details.get(key), str):
                ids.append(entry.details[key])
    return list(dict.fromkeys(ids))


def _purged(entry: HistoryEntry) -> bool:
    return entry.details.get("purged") is True


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _content_before(entry: HistoryEntry) -> str | None:
    """The memory's content just before this change, if the row records it."""
    if _purged(entry):
        return None
    changed = entry.details.get("changed")
    if isinstance(changed, dict) and _text(changed.get("content")) is not None:
        return changed["content"]
    if _text(entry.details.get("previous_content")) is not None:
        return entry.details["previous_content"]
    if entry.operation == "delete":
        return _text(entry.details.get("content"))
    return None


def _is_content_edit(entry: HistoryEntry) -> bool:
    """A direct content change (not a gated one, whose row records what was added)."""
    return (entry.operation == "update" and "added" not in entry.details
            and _content_before(entry) is not None)


def _content_after(store: Store, entry: HistoryEntry, current: Memory | None) -> str | None:
    """What a content edit produced: the content before the memory's next recorded
    change, else its current content."""
    for later in store.history(entry.memory_id):
        if later.seq <= entry.seq:
            continue
        if later.operation == "purge":
            return None
        before = _content_before(later)
        if before is not None:
            return before
    return current.content if current is not None else None


# --- rendering -----------------------------------------------------------------------
def render_markdown(journal: DayJournal) -> str:
    """The journal as Markdown: a heading, a summary line, then one section per kind of
    change (learned, updated and corrected, strengthened / weakened, forgotten)."""
    lines = [f"# memoryd journal — {journal.day.isoformat()}", ""]
    if journal.total == 0:
        lines.append("Nothing was recorded on this day.")
        return "\n".join(lines) + "\n"
    lines += [_summary(journal), ""]
    if journal.truncated:
        note = (f"> Stopped after reading {journal.total:,} changes; the day holds more. "
                "Counts and lists cover the changes read.")
        lines += [note, ""]
    for section in (_learned_section, _updated_section, _strength_section, _forgotten_section):
        lines += section(journal)
    housekeeping = _housekeeping(journal)
    if housekeeping:
        lines += [housekeeping, ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def journal_markdown(store: Store, day: date, tz: tzinfo | None = None) -> str:
    """The Markdown journal of ``day`` (midnight to midnight in ``tz``, default local time)."""
    return render_markdown(collect_day(store, day, tz))


def _summary(journal: DayJournal) -> str:
    parts = [
        (journal.count(LEARNED), "learned"),
        (journal.count(UPDATED), "updated or corrected"),
        (journal.count(STRENGTHENED), "strengthened"),
        (journal.count(WEAKENED), "weakened"),
        (journal.count(FORGOTTEN), "forgotten"),
        (_housekeeping_count(journal), "housekeeping"),
    ]
    counts = " · ".join(f"{n} {label}" for n, label in parts if n)
    return f"{counts}. _Times are {journal.start.tzname() or 'local'}._"


def _learned_section(journal: DayJournal) -> list[str]:
    if not journal.learned:
        return []
    deleted_types = {e.memory_id: e.details.get("node_type") for e in journal.forgotten
                     if e.operation == "delete" and not _purged(e)}
    groups: dict[str, list[str]] = {}
    for entry in journal.learned:
        memory = journal.memories.get(entry.memory_id)
        node_type = memory.node_type if memory else _text(deleted_types.get(entry.memory_id))
        groups.setdefault(node_type or "", []).append(_learned_line(journal, entry, memory))
    order = {t: i for i, t in enumerate(NODE_TYPES)}
    lines = ["## Learned", ""]
    for node_type in sorted(groups, key=lambda t: (order.get(t, len(order)), t)):
        heading = _HEADINGS.get(node_type) or _escape(node_type.capitalize()) or "Other"
        lines += [f"### {heading}", "", *groups[node_type], ""]
    return lines + _more(journal.count(LEARNED) - len(journal.learned))


def _learned_line(journal: DayJournal, entry: HistoryEntry, memory: Memory | None) -> str:
    when = _clock(journal, entry)
    if memory is not None:
        text = _snippet(memory.content)
    elif _text(entry.details.get("content")) is not None and not _purged(entry):
        text = f"{_snippet(entry.details['content'])} _(since deleted)_"
    else:
        return f"- {when} {_code(entry.memory_id)} _(content purged)_"
    extras = []
    if memory is not None and memory.tags:
        extras.append("tags: " + ", ".join(_escape(t) for t in memory.tags))
    agent = (memory.agent_id if memory else None) or entry.agent_id
    if agent:
        extras.append(f"agent: {_escape(agent)}")
    return f"- {when} {text}" + (f" — {' · '.join(extras)}" if extras else "")


def _updated_section(journal: DayJournal) -> list[str]:
    if not journal.updated:
        return []
    lines = ["## Updated and corrected", ""]
    lines += [_updated_line(journal, e) for e in journal.updated]
    return lines + [""] + _more(journal.count(UPDATED) - len(journal.updated))


def _updated_line(journal: DayJournal, entry: HistoryEntry) -> str:
    when, details = _clock(journal, entry), entry.details
    if _purged(entry):
        return f"- {when} changed {_code(entry.memory_id)} _(content purged)_"
    memory = journal.memories.get(entry.memory_id)
    this = _snippet(memory.content) if memory else _code(entry.memory_id)
    if entry.operation == "supersede":
        return f"- {when} superseded: {this} → {_other(journal, details.get('by'))}"
    if entry.operation == "merge" and "into" in details:
        return f"- {when} merged into another memory: {this} → {_other(journal, details['into'])}"
    before = _content_before(entry)
    added = _text(details.get("added"))
    if added is not None and before is not None:
        merged = details.get("merged")
        verb = (f"merged {_plural(len(merged), 'near-duplicate')} and extended"
                if isinstance(merged, list) and merged else "extended")
        return f"- {when} {verb}: {_snippet(before)} + {_snippet(added)}"
    if before is not None:
        after = journal.content_after.get(entry.seq)
        result = _snippet(after) if after is not None else "_(no longer stored)_"
        return f"- {when} updated: {_snippet(before)} → {result}"
    changed = details.get("changed")
    names = [n for n in changed if n != "updated_at"] if isinstance(changed, dict) else []
    what = ", ".join(_escape(n) for n in names) or "fields"
    return f"- {when} changed {what} of: {this}"


def _other(journal: DayJournal, memory_id: Any) -> str:
    """Another memory, by its current content (never by content recorded on this row)."""
    if not isinstance(memory_id, str):
        return "another memory"
    other = journal.memories.get(memory_id)
    if other is None:
        return f"{_code(memory_id)} _(no longer stored)_"
    return _snippet(other.content)


def _strength_section(journal: DayJournal) -> list[str]:
    labels = (("reinforce", "reinforced"), ("promote", "promoted"), ("demote", "demoted"))
    lines = []
    for op, label in labels:
        times, memories = journal.counts[op], len(journal.touched.get(op, ()))
        if times:
            lines.append(f"- {label} {_plural(times, 'time')} "
                         f"({_plural(memories, 'memory', 'memories')})")
    return ["## Strengthened / weakened", "", *lines, ""] if lines else []


def _forgotten_section(journal: DayJournal) -> list[str]:
    if not journal.forgotten:
        return []
    lines = ["## Forgotten", ""]
    for entry in journal.forgotten:
        when = _clock(journal, entry)
        content = _text(entry.details.get("content"))
        if entry.operation == "delete" and content is not None and not _purged(entry):
            node_type = _text(entry.details.get("node_type"))
            kind = f" ({_escape(node_type)})" if node_type else ""
            lines.append(f"- {when} deleted{kind}: {_snippet(content)}")
        else:
            verb = "purged" if entry.operation == "purge" else "deleted"
            lines.append(f"- {when} {verb} {_code(entry.memory_id)}")
    return lines + [""] + _more(journal.count(FORGOTTEN) - len(journal.forgotten))


def _housekeeping_count(journal: DayJournal) -> int:
    listed = LEARNED | UPDATED | STRENGTHENED | WEAKENED | FORGOTTEN
    return sum(n for op, n in journal.counts.items() if op not in listed)


def _housekeeping(journal: DayJournal) -> str | None:
    listed = LEARNED | UPDATED | STRENGTHENED | WEAKENED | FORGOTTEN
    parts = [f"{n} {_HOUSEKEEPING_LABELS.get(op, _escape(op))}"
             for op, n in sorted(journal.counts.items()) if op not in listed]
    return f"_Housekeeping: {', '.join(parts)}._" if parts else None


# --- text helpers --------------------------------------------------------------------
def _clock(journal: DayJournal, entry: HistoryEntry) -> str:
    return entry.at.astimezone(journal.tz).strftime("%H:%M")


def _escape(text: str) -> str:
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def _snippet(text: str) -> str:
    """One line of at most SNIPPET_CHARS characters, safe inside a Markdown list item."""
    flat = " ".join(text.split())
    if len(flat) > SNIPPET_CHARS:
        flat = flat[: SNIPPET_CHARS - 1].rstrip() + "…"
    return _escape(flat)


def _code(text: str) -> str:
    return f"`{text.replace('`', '')}`"


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _more(hidden: int) -> list[str]:
    return [f"_…and {hidden} more._", ""] if hidden > 0 else []
