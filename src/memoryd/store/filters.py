"""Search and list filters as a SQL ``WHERE`` clause, written once for both backends.

A :class:`Dialect` says how one database spells a parameter, a time, a list membership,
the tag test and the domain test (any of the given domains); :func:`where` turns
:class:`~memoryd.models.SearchFilters` into the clause and its parameters. Memories are
always aliased ``m``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from itertools import permutations
from typing import Any, Callable

from memoryd.models import SearchFilters
from memoryd.retrieval.speaker import ASSISTANT, USER, normalise

#: How many words of an asked name are read for the shorter names it holds ("caroline smith"
#: finds "caroline" and "smith"): a name of four words has 40 shorter forms to compare.
NAME_WORDS = 4


@dataclass(frozen=True)
class Dialect:
    """How a backend writes the pieces of a filter."""

    mark: str  # one parameter placeholder: "?" or "%s"
    true: str  # an always-true clause
    time: Callable[[datetime], Any]  # a datetime as the database stores it
    in_list: Callable[[str, list[Any]], tuple[str, list[Any]]]
    tags: Callable[[list[str], str], tuple[str, list[Any]]]
    # True when the memory is a knowledge-graph node (it has ``metadata.kg``). Spelt exactly
    # as the partial index of graph nodes, so the database can use that index.
    graph_node: str
    domains: Callable[[list[str]], tuple[str, list[Any]]]


def where(filters: SearchFilters, now: datetime, dialect: Dialect) -> tuple[str, list[Any]]:
    """The ``WHERE`` clause (without the keyword) and its parameters."""
    mark = dialect.mark
    clauses: list[str] = []
    params: list[Any] = []
    since, until = filters.time_bounds(now)
    for bound, op in ((since, ">="), (until, "<=")):
        if bound is not None:
            clauses.append(f"m.created_at {op} {mark}")
            params.append(dialect.time(bound))
    for column, values in (("node_type", filters.node_types),
                           ("category", filters.categories), ("tier", filters.tiers)):
        if values:
            clause, args = dialect.in_list(f"m.{column}", list(values))
            clauses.append(clause)
            params.extend(args)
    for column, value in (("scope", filters.scope), ("agent_id", filters.agent_id),
                          ("session_id", filters.session_id)):
        if value is not None:
            clauses.append(f"m.{column} = {mark}")
            params.append(value)
    if filters.tags:
        clause, args = dialect.tags(list(filters.tags), filters.tags_mode)
        clauses.append(clause)
        params.extend(args)
    if filters.domains is not None:
        clause, args = dialect.domains(list(filters.domains))
        clauses.append(clause)
        params.extend(args)
    if filters.speaker is not None:
        clause, args = speaker_clause(filters.speaker, mark)
        clauses.append(clause)
        params.extend(args)
    if filters.graph is not None:
        clauses.append(dialect.graph_node if filters.graph else f"NOT ({dialect.graph_node})")
    if filters.as_of is not None:
        clauses.append(_AS_OF.format(mark=mark))
        params.extend([dialect.time(filters.as_of)] * 3)
    elif not filters.include_superseded:
        clauses.append(f"m.superseded_by IS NULL AND (m.valid_until IS NULL OR m.valid_until > {mark})")
        params.append(dialect.time(now))
    return (" AND ".join(clauses) or dialect.true), params


def speaker_clause(asked: str, mark: str) -> tuple[str, list[Any]]:
    """Memories said by ``asked`` (``memories.speaker``, case-folded when written): the user
    or the assistant by any of their aliases, or a name, matching every speaker whose name
    holds all its words ("caroline" finds "caroline smith") or whose name is made of some of
    them ("caroline smith" finds "caroline"; the first ``NAME_WORDS`` words are read for that)."""
    party = normalise(asked)
    if party in (USER, ASSISTANT):
        return f"m.speaker = {mark}", [party]
    words = party.split()
    fuller = " AND ".join([f"(' ' || m.speaker || ' ') LIKE {mark} ESCAPE '!'"] * len(words))
    shorter = sorted({" ".join(names) for size in range(1, min(len(words), NAME_WORDS + 1))
                      for names in permutations(words[:NAME_WORDS], size)})
    within = f" OR m.speaker IN ({', '.join([mark] * len(shorter))})" if shorter else ""
    return (f"(m.speaker NOT IN ('{USER}', '{ASSISTANT}') AND (({fuller}){within}))",
            [*(f"% {_like_literal(w)} %" for w in words), *shorter])


def _like_literal(text: str) -> str:
    """``text`` matched literally by LIKE with ``ESCAPE '!'``."""
    return text.replace("!", "!!").replace("%", "!%").replace("_", "!_")


# Time travel: recorded by then, valid then; a later supersession does not hide it.
_AS_OF = ("m.created_at <= {mark} AND (m.valid_from IS NULL OR m.valid_from <= {mark}) "
          "AND (m.valid_until IS NULL OR m.valid_until > {mark})")


LIST_ORDERS = {
    "created_desc": "m.created_at DESC, m.rowid DESC",
    "created_asc": "m.created_at ASC, m.rowid ASC",
    "updated_desc": "m.updated_at DESC, m.rowid DESC",
}
