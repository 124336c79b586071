"""Capture: what a conversation taught, stored once per session.

The user's plain statements of fact are kept (``extraction.read_heuristic``); every sentence
of the user that is not stored is reported in ``skipped`` with the reason (chit-chat, a
question, a request to the assistant, already stored, looks like a secret, ...), at most
:data:`MAX_SKIPPED` of them.

A gateway may send the whole transcript after every turn. A watermark per session (how many
messages were captured, and a fingerprint of the last one) means only new messages are read;
statements already stored for the session are skipped; statements that look like secrets are
screened by the store's secret policy (refused ones are reported without their text). The
watermark is read again and advanced inside the write transaction, so two processes capturing
the same session at once store its new messages once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memoryd.cognition import extraction, secrets
from memoryd.cognition.extraction import Candidate, Message
from memoryd.engine.context import EngineContext
from memoryd.engine.memory.ingest import ingest_many
from memoryd.errors import ChatError
from memoryd.llm import ChatClient
from memoryd.models import IngestResult

MAX_SKIPPED = 50


@dataclass
class Skipped:
    """A candidate that was not stored, and why (never the text of a refused secret)."""

    content: str
    reason: str


@dataclass
class CaptureResult:
    """What one capture or flush read, extracted and stored."""

    received: int
    new_messages: int
    extractor: str = "heuristic"
    warning: str | None = None
    stored: list[IngestResult] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    watermark: int | None = None


@dataclass
class Extracted:
    """Candidates from the messages, the user's sentences passed over (with why), which
    extractor ran and a warning when the chat model failed."""

    candidates: list[Candidate]
    passed: list[Skipped]
    extractor: str
    warning: str | None = None


def _passed(sentences: list[tuple[str, str]]) -> list[Skipped]:
    """Skipped entries for sentences that were not kept; a sentence that looks like a
    secret is reported without its text."""
    out = []
    for sentence, reason in sentences[:MAX_SKIPPED]:
        kinds = sorted({f.kind for f in secrets.scan(sentence)})
        out.append(Skipped(f"[withheld: looks like {', '.join(kinds)}]" if kinds else sentence,
                           reason))
    return out


def extract(ctx: EngineContext, messages: list[Message], client: ChatClient | None) -> Extracted:
    """Candidates from the messages: the chat model's if one is configured and answers,
    else the heuristics' (which also say why they passed over each other sentence)."""
    warning = None
    if client is not None:
        try:
            return Extracted(extraction.extract_llm(client, messages), [], "llm")
        except ChatError as exc:
            warning = f"LLM extraction failed ({exc})"
    candidates, passed = extraction.read_heuristic(messages)
    return Extracted(candidates, _passed(passed), "heuristic", warning)


def capture(ctx: EngineContext, messages: list[Message], session_key: str,
            scope: str | None, client: ChatClient | None) -> CaptureResult:
    """Store what the messages after the session's watermark taught (see the module)."""
    if scope is not None:
        ctx.check_writes_to(scope)  # refused whether or not the messages teach anything
    key = _watermark_key(ctx, session_key)
    start = _start(ctx, key, messages)
    new = messages[start:]
    result = CaptureResult(received=len(messages), new_messages=len(new),
                           watermark=len(messages))
    if not new:
        return result
    found = extract(ctx, new, client)
    result.extractor, result.warning = found.extractor, found.warning
    with ctx.store.transaction():
        if _start(ctx, key, messages) != start:  # another process captured these meanwhile
            result.new_messages = 0
            return result
        result.stored, result.skipped = store_candidates(ctx, found.candidates, session_key,
                                                         scope, "capture")
        result.skipped += found.passed
        ctx.store.bookkeeping.set_watermark(key, len(messages))
        ctx.store.bookkeeping.set_watermark(key + ":last", extraction.fingerprint(messages[-1]))
    return result


def flush(ctx: EngineContext, messages: list[Message], session_key: str | None,
          scope: str | None, client: ChatClient | None) -> CaptureResult:
    """Store what messages about to be compacted taught (no watermark: it is a window)."""
    if scope is not None:
        ctx.check_writes_to(scope)
    result = CaptureResult(received=len(messages), new_messages=len(messages))
    found = extract(ctx, messages, client)
    result.extractor, result.warning = found.extractor, found.warning
    with ctx.store.transaction():
        result.stored, result.skipped = store_candidates(ctx, found.candidates, session_key,
                                                         scope, "flush")
        result.skipped += found.passed
    return result


def store_candidates(ctx: EngineContext, candidates: list[Candidate], session_key: str | None,
                     scope: str | None, source: str) -> tuple[list[IngestResult], list[Skipped]]:
    """Smart-ingest the candidates not yet stored for the session and not refused as secrets."""
    known = _known(ctx, session_key)
    refuse = ctx.settings.secrets_mode == "refuse"
    skipped: list[Skipped] = []
    items = []
    for c in candidates:
        norm = extraction.normalise(c.content)
        if norm in known:
            skipped.append(Skipped(c.content, "already stored for this session"))
            continue
        kinds = sorted({f.kind for f in secrets.scan(c.content)}) if refuse else []
        if kinds:
            skipped.append(Skipped(f"[withheld: looks like {', '.join(kinds)}]",
                                   "looks like it contains a secret"))
            continue
        known.add(norm)
        items.append({"content": c.content, "node_type": c.node_type, "importance": c.importance,
                      "category": c.category, "session_id": session_key, "scope": scope,
                      "source": source, "tags": ["captured"], "metadata": {"rule": c.rule}})
    items = [{k: v for k, v in item.items() if v is not None} for item in items]
    return (ingest_many(ctx, items) if items else []), skipped


def _known(ctx: EngineContext, session_key: str | None) -> set[str]:
    if not session_key:
        return set()
    existing = ctx.store.list(ctx.filters(session_id=session_key, include_superseded=True),
                              now=ctx.clock(), limit=1000)
    return {extraction.normalise(m.content) for m in existing}


def _watermark_key(ctx: EngineContext, session_key: str) -> str:
    # Per binding: a session key chosen by a bound agent cannot move anyone else's mark.
    access = ctx.access
    domains = "" if access.domains is None else f"{','.join(sorted(access.domains))}:"
    return f"capture:{access.scope or '*'}:{access.agent_id or '*'}:{domains}{session_key}"


def _start(ctx: EngineContext, key: str, messages: list[Message]) -> int:
    count = ctx.store.bookkeeping.get_watermark(key)
    last = ctx.store.bookkeeping.get_watermark(key + ":last")
    return extraction.unseen_start(messages, count, last)
