"""Load the project's own agent-memory data set: many small stores of what an agent keeps.

``bench/recall/agent_memories.txt`` holds stores of short memories an agent would write over
MCP (facts, preferences, decisions, conventions, events) and the questions or requests an
agent would search with, each labelled with the memories that answer it (none for a question
the store cannot answer). It is memoryd's own data, written for this bench, and is read into
BEAM's shape (:class:`~bench.recall.data.Conversation`) so every recall bench reads it alike.

Format (one store after another; ``#`` starts a comment line)::

    ## store <name>
    fact: The staging database is PostgreSQL 16.
    pref: Maria wants code review comments as numbered lists.
    q: what version of postgres is staging on? => 1
    q: who owns the billing service? => -

A memory line is ``<type>: <text>`` (type one of :data:`TYPES`); memories are numbered from 1
within their store. A question line is ``q: <text> => <numbers>`` (comma-separated) or
``=> -`` when nothing in the store answers it. A question's ability is the type of its first
answer, or ``abstention``.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

from bench.recall.data import Conversation, Message, Question

DATA_FILE = Path(__file__).resolve().with_name("agent_memories.txt")
TYPES = ("fact", "pref", "decision", "convention", "event")
ABILITY = {"fact": "fact", "pref": "preference", "decision": "decision",
           "convention": "convention", "event": "event"}
#: Stores are written a memory a minute from this moment (their order is their write order).
START = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)

_STORE = re.compile(r"^##\s*store\s+(\S+)\s*$")
_MEMORY = re.compile(r"^(" + "|".join(TYPES) + r"):\s*(.+)$")
_QUESTION = re.compile(r"^q:\s*(.+?)\s*=>\s*(-|\d+(?:\s*,\s*\d+)*)\s*$")


class AgentDataError(ValueError):
    """A line of the data file that is not in the format (with its line number)."""


def load_agent(path: Path | None = None) -> list[Conversation]:
    """Every store of the data file, numbered from 1 in file order."""
    source = path or DATA_FILE
    if not source.is_file():
        return []
    stores: list[Conversation] = []
    types: list[str] = []
    for number, raw in enumerate(source.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#") and not line.startswith("##"):
            continue
        if m := _STORE.match(line):
            stores.append(Conversation(number=len(stores) + 1, path=source, chat_file=source.name,
                                       topic=m.group(1), messages=[], questions=[]))
            types = []
        elif not stores:
            raise AgentDataError(f"line {number}: a store header (## store <name>) comes first")
        elif m := _MEMORY.match(line):
            _add_memory(stores[-1], m.group(2))
            types.append(m.group(1))
        elif m := _QUESTION.match(line):
            _add_question(stores[-1], types, m.group(1), m.group(2), number)
        else:
            raise AgentDataError(f"line {number}: neither a memory, a question nor a store: {raw!r}")
    return stores


def _add_memory(store: Conversation, text: str) -> None:
    i = len(store.messages)
    # Each memory is its own session: agent memories are written one by one, not as a chat.
    store.messages.append(Message(id=i, role="agent", content=text, session=i + 1, position=0,
                                  anchor=None, timestamp=START + timedelta(minutes=i)))


def _add_question(store: Conversation, types: list[str], text: str, answers: str,
                  line: int) -> None:
    evidence = [] if answers == "-" else [int(x) - 1 for x in answers.split(",")]
    if any(not 0 <= e < len(store.messages) for e in evidence):
        raise AgentDataError(f"line {line}: an answer names no memory above it in its store")
    ability = ABILITY[types[evidence[0]]] if evidence else "abstention"
    index = sum(1 for q in store.questions if q.ability == ability)
    store.questions.append(Question(ability=ability, index=index, question=text,
                                    evidence=evidence))


def memory_types(path: Path | None = None) -> list[list[str]]:
    """Each store's memory types (``fact``, ``pref``, ...), in the order of :func:`load_agent`."""
    source = path or DATA_FILE
    if not source.is_file():
        return []
    out: list[list[str]] = []
    for raw in source.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if _STORE.match(line):
            out.append([])
        elif out and (m := _MEMORY.match(line)):
            out[-1].append(m.group(1))
    return out
