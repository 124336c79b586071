"""Smart-wait operations: start a wait that watches something for the agent, long-poll its
status, list waits, cancel one. Starting a wait needs a ``write`` key; it runs under the
caller's memory scope and agent, and a bound key sees only the waits of its scope/agent."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memoryd.models import WaitInfo, WaitState
from memoryd.models.rules import Rules
from memoryd.models.text import BLANK_CLASS, NOT_BLANK, Matches
from memoryd.models.tasks import TaskIdText
from memoryd.operations.registry import Caller, Strict, operation

if TYPE_CHECKING:
    from memoryd.engine import Engine

WaitId = Field(min_length=1, max_length=64, description="The wait's id (w_...).")
# A target's kind (memoryd.waits.targets checks the rest): a path, kind:..., or screen.
_TARGET_RULE = ("target must be an absolute path or KIND:..., KIND one of file (an absolute "
                "path), tmux, pty, pid, command, window, screen, http(s) (other URL schemes "
                "are refused)")
TARGET_PATTERN = (f"^[{BLANK_CLASS}]*(?:/|file:[/~]|(?:tmux|pty|pid|command|window|https?):"
                  f"|screen:?[{BLANK_CLASS}]*$)")


class WakeRoute(Strict):
    """Where to send the wake message when the wait ends (routes come from the settings)."""

    to: Literal["openclaw", "webhook"]
    session_key: str | None = Field(None, min_length=1, max_length=200,
                                    description="openclaw: the session to wake.")


_CRITERIA = Rules(at_least_one=("regex", "contains", "status", "exit_code", "condition", "exits"),
                  mode="filled", message="criteria says nothing to wait for")


def _criteria_schema(schema: dict[str, Any]) -> None:
    _CRITERIA.schema(schema)  # exits counts only when true:
    for option in schema["allOf"][-1]["anyOf"]:
        if option.get("required") == ["exits"]:
            option["properties"]["exits"] = {"const": True}


class CriteriaSpec(Strict):
    """What ends a wait, as an object (memoryd.waits.criteria checks the rest: a regex that
    compiles, a kind the target has)."""

    model_config = ConfigDict(json_schema_extra=_criteria_schema)

    regex: str | None = Field(None, min_length=1, description="A new line matches it.")
    contains: str | None = Field(None, min_length=1, description="A new line contains it.")
    status: int | None = Field(None, ge=100, le=599, description="http: this status.")
    exit_code: int | None = Field(None, description="The process exits with it.")
    exits: bool | None = Field(None, description="The process exits.")
    ignore_case: bool | None = None
    condition: str | None = Field(None, min_length=1, description="window/screen: what the "
                                  "vision model must see.")

    @model_validator(mode="after")
    def _something(self) -> CriteriaSpec:
        if not (self.regex or self.contains or self.status is not None
                or self.exit_code is not None or self.condition or self.exits):
            raise ValueError("criteria says nothing to wait for")
        return self


class SmartWaitInput(Strict):
    """Arguments of smart_wait."""

    target: Annotated[str, Matches(TARGET_PATTERN, _TARGET_RULE)] = Field(
        min_length=1, max_length=2000,
        description="file:/abs/path | tmux:SESSION:WINDOW.PANE | pid:N | http(s)://URL | "
                    "window:TITLE or window:0xID | screen | command:CMD / pty:CMD (if enabled).")
    criteria: Annotated[str, Matches(NOT_BLANK, "criteria is empty")] | CriteriaSpec = Field(
        description='Text to find ("BUILD OK"), a regex ("/ERROR|FAILED/"), "exit" / "exit:0", '
                    '"status:200", or an object {regex|contains|status|exit_code|condition}.')
    timeout_s: float = Field(ge=1.0, le=7 * 24 * 3600.0,
                             description="Give up after this many seconds (1 s to 7 days).")
    task_id: TaskIdText | None = Field(None, description="The task this wait belongs to.")
    wake: WakeRoute | None = Field(None, description="Wake the agent when it ends.")


class WaitOutput(WaitInfo):
    def as_text(self) -> str:
        return self.message


@operation(
    "smart_wait",
    title="Wait for something",
    input=SmartWaitInput,
    output=WaitOutput,
    scope="write",
    tools=("smart_wait",),
)
def smart_wait(engine: Engine, data: SmartWaitInput, caller: Caller) -> WaitOutput:
    """Watch a log file, a tmux pane, a process, a URL or a window until a condition holds,
    instead of polling it yourself; returns a wait id at once. Then call wait_status(id,
    block_s=...) to long-poll, or pass wake to be woken when it resolves or times out. Only
    new output counts (never text already there or an echoed command line)."""
    wake = data.wake.model_dump(exclude_none=True) if data.wake is not None else None
    criteria = (data.criteria if isinstance(data.criteria, str)
                else data.criteria.model_dump(exclude_none=True))
    job = engine.waits.watch(data.target, criteria, data.timeout_s, task_id=data.task_id,
                             wake=wake)
    return WaitOutput.model_validate(dict(job))


class WaitStatusInput(Strict):
    id: str = WaitId
    block_s: float = Field(0.0, ge=0, le=300,
                           description="Wait up to this long for the wait to end (long-poll).")


@operation(
    "wait_status",
    title="Status of a wait",
    input=WaitStatusInput,
    output=WaitOutput,
    scope="read",
    read_only=True,
    tools=("wait_status",),
)
def wait_status(engine: Engine, data: WaitStatusInput, caller: Caller) -> WaitOutput:
    """How a wait stands: watching, resolved (with what was seen), timeout, error or
    cancelled. With block_s, returns as soon as it ends or after block_s seconds."""
    return WaitOutput.model_validate(dict(engine.waits.status(data.id, data.block_s)))


class WaitListInput(Strict):
    status: WaitState | None = Field(None, description="Only waits with this status.")
    task_id: TaskIdText | None = None
    limit: int = Field(50, ge=1, le=1000)


class WaitListOutput(BaseModel):
    waits: list[WaitInfo]

    def as_text(self) -> str:
        return "\n".join(f"- {w.message}" for w in self.waits) or "No waits."


@operation(
    "wait_list",
    title="List waits",
    input=WaitListInput,
    output=WaitListOutput,
    scope="read",
    read_only=True,
    idempotent=True,
    tools=("wait_list",),
)
def wait_list(engine: Engine, data: WaitListInput, caller: Caller) -> WaitListOutput:
    """Your smart waits, newest first, optionally of one status or one task."""
    return WaitListOutput(waits=engine.waits.list(data.status, task_id=data.task_id,
                                                  limit=data.limit))


class WaitCancelInput(Strict):
    id: str = WaitId


@operation(
    "wait_cancel",
    title="Cancel a wait",
    input=WaitCancelInput,
    output=WaitOutput,
    scope="write",
    idempotent=True,
    tools=("wait_cancel",),
)
def wait_cancel(engine: Engine, data: WaitCancelInput, caller: Caller) -> WaitOutput:
    """Stop a smart wait (nobody is woken). A wait that already ended is returned as it is."""
    return WaitOutput.model_validate(dict(engine.waits.cancel(data.id)))
