"""What a query says besides its words: a period it names, a speaker it asks about, a
request for advice.

Each cue lifts the hits that match it by a bounded number of log-odds: memories created in
the period (``time_window_margin``), memories said by that speaker (``speaker_margin``), and
for a request the user's preferences and standing instructions that are likely to answer it
(score at least ``recall_threshold``: a store's other preferences are about other things)
by ``preference_margin``. The near-tie reorder (:mod:`memoryd.cognition.ranking`) applies
the lift, so a cue can win a close call and never passes a clearly more relevant hit.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

from memoryd.cognition.extraction import states_preference
from memoryd.config import Settings
from memoryd.models import Memory, SearchHit
from memoryd.retrieval.requests import asks_for_advice
from memoryd.retrieval.speaker import (
    USER,
    memory_speaker,
    query_speaker,
    same_speaker,
    spoken_text,
)
from memoryd.retrieval.when import TimeWindow, time_window

__all__ = ["QueryCues", "read_cues"]

# A preference is read from the start of a memory only: the pattern costs about 0.1 ms per 1,000
# characters (a memory may hold 64 KiB), and a preference worth lifting is stated up front.
PREFERENCE_SCAN_CHARS = 400


@dataclass(frozen=True)
class QueryCues:
    """The cues of one query, each with the log-odds a matching hit gains (0: off)."""

    window: TimeWindow | None = None
    window_margin: float = 0.0
    speaker: str | None = None
    speaker_margin: float = 0.0
    advice: bool = False
    preference_margin: float = 0.0
    # A preference is lifted only when its score (P(answers)) reaches this.
    preference_floor: float = 0.0

    @property
    def room(self) -> float:
        """How far (log-odds) the cues can lift a hit past more relevant ones."""
        return ((self.window_margin if self.window is not None else 0.0)
                + (self.speaker_margin if self.speaker is not None else 0.0)
                + (self.preference_margin if self.advice else 0.0))

    def lift(self, hits: list[SearchHit]) -> list[float] | None:
        """The lift of each hit, or None when the query has no cue."""
        if self.room <= 0:
            return None
        return [self._lift(h.memory, h.score) for h in hits]

    def _lift(self, memory: Memory, score: float) -> float:
        lift = 0.0
        if self.window is not None and _inside(memory, self.window):
            lift += self.window_margin
        if self.speaker is not None or self.advice:
            said_by = memory_speaker(memory.content, memory.metadata)
            if self.speaker is not None and same_speaker(self.speaker, said_by):
                lift += self.speaker_margin
            if (self.advice and score >= self.preference_floor
                    and _standing_preference(memory, said_by)):
                lift += self.preference_margin
        return lift


def read_cues(query: str, now: datetime, settings: Settings) -> QueryCues:
    """The cues ``query`` carries that the settings turn on."""
    window = time_window(query, now) if settings.time_window_margin > 0 else None
    speaker = query_speaker(query) if settings.speaker_margin > 0 else None
    advice = settings.preference_margin > 0 and asks_for_advice(query)
    return QueryCues(window, settings.time_window_margin, speaker, settings.speaker_margin,
                     advice, settings.preference_margin, settings.recall_threshold)


def _standing_preference(memory: Memory, said_by: str | None) -> bool:
    """A preference memory, or the user's (or an unattributed) statement of a preference or
    standing instruction; the assistant's "I always recommend…" is not one."""
    if memory.node_type == "preference":
        return True
    return said_by in (USER, None) and _states_preference(memory.content[:PREFERENCE_SCAN_CHARS])


@lru_cache(maxsize=8192)  # the same memories come back search after search
def _states_preference(head: str) -> bool:
    return states_preference(spoken_text(head))


def _inside(memory: Memory, window: TimeWindow) -> bool:
    """Whether the memory happened (``created_at``) or became true (``valid_from``) in it."""
    return window.contains(memory.created_at) or (
        memory.valid_from is not None and window.contains(memory.valid_from))
