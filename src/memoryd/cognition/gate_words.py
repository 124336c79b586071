"""Word lists of the ingest gate's reading (:mod:`memoryd.cognition.novelty`).

* :data:`LABELS`: labels that open a note rather than name a speaker ("Note: ...").
* :data:`FILLERS`: words that carry no fact of their own ("noted", "again", "the user said",
  "we decided to", "hey", "thanks"): no unit.
* :data:`MARKERS`: words that say a value changed ("now", "moved", "increased", "pushed"):
  no unit, but the text is *marked* as telling a change.
* :data:`REVERSALS`: words that end or undo something ("stopped", "cancelled", "retired"):
  a unit, and the text is marked.
* :data:`ENDINGS`: the markers and reversals that say an earlier state ended.
* :data:`NEUTRAL`: words of time that are neither ("since", "after", "these").
* :data:`QUALIFIER`: a clause that gives a reason or a time ("after the redesign", "since
  the audit", "to support more testing"): its words qualify a change, they do not narrow
  the subject.
"""

from __future__ import annotations

import re

LABELS = frozenset({"note", "notes", "decision", "update", "updated", "correction", "fyi",
                    "important", "reminder", "todo", "context", "summary", "fact", "info"})
FILLERS = frozenset({
    "note", "noted", "again", "confirmed", "confirm", "fyi", "reminder", "remember",
    "said", "says", "say", "told", "mentioned", "mention", "stated", "apparently",
    "basically", "indeed", "definitely", "actually", "please", "currently", "correction",
    "decision", "update", "important", "decided", "decide", "agreed", "agree", "chose",
    "chosen", "settled", "picked", "happen", "happens", "happened", "recently", "lately",
    # interjections of chat
    "hey", "hi", "hello", "thanks", "thank", "thx", "ok", "okay", "yes", "yeah", "yep",
    "yup", "lol", "haha", "hahaha", "hehe", "wow", "oh", "omg", "hmm", "um", "uh", "ah",
    "aww", "yay", "ooh", "btw", "bye"})
MARKERS = frozenset({
    "now", "nowadays", "anymore", "longer", "instead", "switched", "switch", "switching",
    "moved", "moving", "changed", "changing", "updated", "upgraded", "downgraded", "bumped",
    "raised", "lowered", "increased", "decreased", "rose", "risen", "fell", "fallen", "grew",
    "grown", "dropped", "cut", "extended", "pushed", "postponed", "delayed", "reduced",
    "rescheduled", "replaced", "became", "become", "becomes", "scaled", "improved",
    "worsened", "climbed", "jumped", "doubled", "tripled", "halved", "expanded", "shrank",
    "shrunk", "adjusted", "revised", "migrated", "renamed", "reassigned", "transferred"})
REVERSALS = frozenset({
    "stopped", "stop", "stops", "quit", "cancelled", "canceled", "cancel", "removed",
    "retired", "deprecated", "abandoned", "ditched", "ended", "left", "disabled", "revoked",
    "reverted", "sold", "discontinued", "paused", "suspended", "dissolved", "undone"})
ENDINGS = REVERSALS | frozenset({"instead", "anymore", "longer", "replaced", "switched",
                                 "dropped", "formerly", "previously"})
"""Words that say an earlier state ended ("... now that Marcus left", "Bazel was dropped"),
unlike markers of progress ("grew", "moving")."""
NEUTRAL = frozenset({"from", "since", "after", "these", "those", "ago", "ever", "already"})
QUALIFIER = re.compile(
    r"\b(?:after|since|because|due to|following|thanks to|once|when|while|as of|starting|"
    r"until|so that|to support|to allow|in order to)\b[^,.;:!?]*", re.I)
