"""One spelling per word for the ingest gate: British and American spellings, common
abbreviations and inflections compare equal ("favourite" / "favorite", "DB" / "database",
"repo" / "repositories").

Only spellings of one word are folded here, never synonyms: "runs" and "listens" stay two
words, so the gate never takes a changed word for a restatement.
"""

from __future__ import annotations

import re
from functools import lru_cache

from memoryd.cognition.words import stem

__all__ = ["canonical"]

# Short forms people write for the same word (after lower-casing).
_ABBREVIATIONS = {
    "db": "database", "dbs": "database", "repo": "repository", "repos": "repository",
    "prod": "production", "dev": "development", "env": "environment", "envs": "environment",
    "config": "configuration", "configs": "configuration", "auth": "authentication",
    "docs": "documentation", "doc": "documentation", "deps": "dependency",
    "dep": "dependency", "infra": "infrastructure", "admin": "administrator",
    "admins": "administrator", "app": "application", "apps": "application",
    "info": "information", "spec": "specification", "specs": "specification",
    "k8s": "kubernetes", "stats": "statistics", "msg": "message", "msgs": "message",
    "pr": "pull-request", "prs": "pull-request", "mr": "merge-request", "ci": "ci",
    "vm": "virtual-machine", "vms": "virtual-machine", "perf": "performance",
    "req": "request", "reqs": "request", "temp": "temporary", "approx": "approximately",
    "mgr": "manager", "dept": "department", "org": "organization", "orgs": "organization",
    "eng": "engineering", "ops": "operations", "ui": "user-interface", "ux": "user-experience",
    "async": "asynchronous", "sync": "synchronous", "impl": "implementation",
    "ts": "typescript", "js": "javascript", "py": "python", "postgres": "postgresql",
    "pg": "postgresql", "mongo": "mongodb", "gh": "github", "tz": "timezone",
}
# British spellings and their American forms (applied to word endings and inside words).
_SPELLING = tuple((re.compile(pattern), replacement) for pattern, replacement in (
    (r"our(?=s?$|ite|ed|ing|able)", "or"), (r"isation", "ization"),
    (r"(?<=[a-z]{3})is(e|ed|es|ing)$", r"iz\1"), (r"yse(s|d)?$", r"yze\1"),
    (r"(?<=[a-z]{2})tre(s)?$", r"ter\1"), (r"ence$", "ense"), (r"ogue(s)?$", r"og\1"),
    (r"lled$", "led"), (r"lling$", "ling")))
_KEEP = frozenset({"hour", "four", "your", "our", "tour", "pour", "sour", "flour", "ours",
                   "hours", "fours", "tours", "sense", "license", "defense", "otherwise",
                   "rise", "wise", "raise", "noise", "poise", "arise", "praise", "cruise",
                   "promise", "premise", "expertise", "exercise", "advise", "surprise",
                   "compromise", "enterprise", "franchise", "merchandise", "precise",
                   "concise", "revise", "supervise", "televise", "devise", "comprise",
                   "disguise", "demise", "paradise", "treatise", "chemise", "fence",
                   "hence", "since", "once", "silence", "science", "sentence", "audience",
                   "evidence", "experience", "presence", "absence", "difference",
                   "reference", "conference", "preference", "sequence", "influence",
                   "confidence", "existence", "independence", "occurrence", "dependence"})


def _american(word: str) -> str:
    if word in _KEEP or len(word) < 5:
        return word
    for pattern, replacement in _SPELLING:
        word = pattern.sub(replacement, word)
    return word


@lru_cache(maxsize=65536)
def canonical(word: str) -> str:
    """The one form the gate compares ``word`` by (lower-case input).

    >>> words = ("db", "databases", "favourite", "favorite", "repo", "organisation")
    >>> [canonical(w) for w in words]
    ['databas', 'databas', 'favorit', 'favorit', 'repository', 'organization']
    """
    low = word.lower().replace("’", "'")
    low = _ABBREVIATIONS.get(low, low)
    if "-" in low.strip("-"):
        return "-".join(stem(_american(part)) for part in low.split("-") if part)
    return stem(_american(low))
