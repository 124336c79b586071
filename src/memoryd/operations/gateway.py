"""Agent hooks (OpenClaw and the like): recall, capture, flush, warm-up.

* **recall** — before a model call: search with the user's prompt and return a ready
  ``<system_memory>`` block (see :mod:`memoryd.retrieval.context`) plus the items as JSON.
* **capture** — after a turn: extract what the conversation taught and store it; the
  gateway may send the whole transcript every time (see :mod:`memoryd.engine.memory.capture`).
* **flush** — before compaction: the same extraction over the messages about to be dropped.
* **session_warm** — at session start: load the embedding model so the first recall is fast.

How statements are extracted: :mod:`memoryd.cognition.extraction`.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memoryd.cognition.extraction import Message
from memoryd.models import IngestResult, Intention, Memory, NodeType, Scope, SearchHit, Timeframe
from memoryd.models.derive import view
from memoryd.models.rules import Rules
from memoryd.operations.registry import Caller, Strict, operation
from memoryd.retrieval.context import label_of, relative_time

if TYPE_CHECKING:
    from memoryd.engine import Engine
    from memoryd.engine.memory.capture import CaptureResult


# --- recall -------------------------------------------------------------------------
_TEXT = Rules(at_least_one=("query", "prompt"), mode="text", message="give prompt or query")


class RecallInput(Strict):
    """Arguments of recall: the prompt (or a query) and how much room the block may take."""

    model_config = ConfigDict(json_schema_extra=_TEXT.schema)

    prompt: str | None = Field(None, max_length=200_000, description="The user's message.")
    query: str | None = Field(
        None, max_length=4096, description="A search query (instead of prompt)."
    )
    agent_id: str | None = Field(None, max_length=256, description="Who asks (not a filter).")
    session_key: str | None = Field(
        None, max_length=256, description="The session: a memory is strengthened once per session."
    )
    token_budget: int | None = Field(
        None, ge=50, le=100_000, description="Max tokens of the block."
    )
    max_items: int | None = Field(None, ge=1, le=50)
    scope: Scope | None = None
    timeframe: Timeframe | None = None
    node_types: list[NodeType] | None = Field(None, max_length=64)
    min_score: float | None = Field(
        None, ge=0.0, le=1.0,
        description="Leave out memories less likely relevant than this (0-1); default: the "
                    "server's recall threshold.",
    )

    @model_validator(mode="after")
    def _text(self) -> RecallInput:
        _TEXT.check(self)
        return self

    def text(self) -> str:
        return (self.query or self.prompt or "").strip()


class RecallItem(view((Memory, SearchHit), [
        "id", "content", "when", "label", "node_type", "category", "severity", "tags", "score",
        "truncated", "created_at"], name="RecallItemFields",
        own=("content", "when", "label", "truncated"), required=("node_type",),
        defaults={"tags": []})):
    content: str = Field(description="As shown in the block (unescaped; maybe shortened).")
    when: str = Field(description="Relative time, e.g. '2 minutes ago'.")
    label: str
    truncated: bool


class RecallOutput(BaseModel):
    """The ``<system_memory>`` block (empty when nothing relevant) and its items."""

    block: str
    items: list[RecallItem]
    query: str
    token_budget: int
    token_estimate: int

    def as_text(self) -> str:
        return self.block or "No relevant memories."


@operation(
    "recall",
    title="Recall (prompt-ready block)",
    input=RecallInput,
    output=RecallOutput,
    scope="read",
    read_only=True,
    tools=("recall",),
    unscreened=("prompt", "query"),
)
def recall(engine: Engine, data: RecallInput, caller: Caller) -> RecallOutput:
    """The memories relevant to a prompt, formatted as a <system_memory> block ready to put in a
    model's context (relative times, categories, escaped content framed as untrusted data,
    within a token budget), plus the same items as JSON."""
    filters = {"scope": data.scope, "timeframe": data.timeframe, "node_types": data.node_types}
    recalled = engine.recall(
        data.text(),
        {k: v for k, v in filters.items() if v is not None},
        token_budget=data.token_budget,
        max_items=data.max_items,
        min_score=data.min_score,
        session_key=data.session_key,
    )
    now = engine.context.clock()
    items = [
        RecallItem.shown(i.memory, recalled.hits[i.memory.id], content=i.content,
                         when=relative_time(i.memory.created_at, now), label=label_of(i.memory),
                         score=round(recalled.hits[i.memory.id].score, 6), truncated=i.truncated)
        for i in recalled.block.items
    ]
    return RecallOutput(block=recalled.block.text, items=items, query=recalled.query,
                        token_budget=recalled.token_budget, token_estimate=recalled.block.tokens)


# --- capture and flush --------------------------------------------------------------
class CaptureInput(Strict):
    """A finished turn: the session's messages (the whole transcript may be re-sent)."""

    messages: list[Message] = Field(max_length=5000)
    session_key: str = Field(min_length=1, max_length=256)
    agent_id: str | None = Field(None, max_length=256)
    scope: Scope | None = None


class FlushInput(Strict):
    """Messages about to be compacted away."""

    messages: list[Message] = Field(max_length=5000)
    session_key: str | None = Field(None, min_length=1, max_length=256)
    agent_id: str | None = Field(None, max_length=256)
    scope: Scope | None = None


class Skipped(BaseModel):
    content: str  # a refused secret is never echoed back
    reason: str


class CaptureOutput(BaseModel):
    """What capture/flush read and stored."""

    session_key: str | None
    received: int = Field(description="Messages in the request.")
    new_messages: int = Field(description="Messages not seen before (capture) or all (flush).")
    extractor: Literal["heuristic", "llm"]
    warning: str | None = None
    stored: list[IngestResult]
    skipped: list[Skipped]
    watermark: int | None = None

    @classmethod
    def of(cls, session_key: str | None, result: CaptureResult) -> CaptureOutput:
        return cls(
            session_key=session_key,
            received=result.received,
            new_messages=result.new_messages,
            extractor=result.extractor,  # type: ignore[arg-type]
            warning=result.warning,
            stored=result.stored,
            skipped=[Skipped(content=s.content, reason=s.reason) for s in result.skipped],
            watermark=result.watermark,
        )

    def as_text(self) -> str:
        return (
            f"read {self.new_messages} new messages, stored {len(self.stored)}, "
            f"skipped {len(self.skipped)}"
        )


@operation(
    "capture",
    title="Capture a finished turn",
    input=CaptureInput,
    output=CaptureOutput,
    scope="write",
    idempotent=True,
    unscreened=("messages",),
)
def capture(engine: Engine, data: CaptureInput, caller: Caller) -> CaptureOutput:
    """Store what a finished turn taught. Re-sending the whole transcript is safe: only messages
    after the session's watermark are read, and nothing is stored twice for a session."""
    result = engine.labelled(data.agent_id).capture(
        data.messages, data.session_key, scope=data.scope
    )
    return CaptureOutput.of(data.session_key, result)


@operation(
    "flush",
    title="Flush before compaction",
    input=FlushInput,
    output=CaptureOutput,
    scope="write",
    idempotent=True,
    unscreened=("messages",),
)
def flush(engine: Engine, data: FlushInput, caller: Caller) -> CaptureOutput:
    """Store what the messages about to be compacted taught (skipping what the session already
    stored)."""
    result = engine.labelled(data.agent_id).flush(data.messages, data.session_key,
                                                  scope=data.scope)
    return CaptureOutput.of(data.session_key, result)


# --- warm-up ------------------------------------------------------------------------
class WarmInput(Strict):
    session_key: str = Field(min_length=1, max_length=256)
    agent_id: str | None = Field(None, max_length=256)


class WarmOutput(BaseModel):
    session_key: str
    model_loaded: bool
    load_ms: float
    memories: int | None
    due_intentions: list[Intention]


@operation(
    "session_warm",
    title="Warm up for a session",
    input=WarmInput,
    output=WarmOutput,
    scope="read",
    read_only=True,
    idempotent=True,
)
def session_warm(engine: Engine, data: WarmInput, caller: Caller) -> WarmOutput:
    """Load the embedding model (so the session's first recall is fast) and report the
    intentions due now."""
    t0 = time.perf_counter()
    engine.warm()
    load_ms = (time.perf_counter() - t0) * 1000
    return WarmOutput(
        session_key=data.session_key,
        model_loaded=engine.embedder.loaded,
        load_ms=round(load_ms, 1),
        memories=engine.count(),
        due_intentions=engine.tasks.check_intentions({}),
    )
