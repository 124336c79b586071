"""Rules on which fields a call gives, each stated once: checked on the model and published in
its JSON schema, so the schema cannot say less than the server enforces.

A field counts as given when it is present and not null (and, where the rule says so, a
string with something besides blanks in it, or a list with an item). Usage::

    class IngestInput(Strict):
        model_config = ConfigDict(json_schema_extra=EITHER.schema)
        ...
        @model_validator(mode="after")
        def _rules(self):
            EITHER.check(self)
            return self

    EITHER = Rules(exactly_one=("content", "items"))
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic_core import core_schema

from memoryd.models.text import NOT_BLANK


Given = Literal["set", "filled", "text"]


def given(value: Any, mode: Given = "set") -> bool:
    """Whether a field's value counts as given: ``set`` (not None), ``filled`` (and not an
    empty string, list or object), ``text`` (and a string not all blank)."""
    if value is None:
        return False
    if mode != "set" and isinstance(value, (str, list, tuple, dict)) and not value:
        return False
    if mode == "text" and isinstance(value, str):
        return bool(value.strip())
    return True


def _refuse_null(value: Any) -> Any:
    if value is None:  # only an explicit null gets here: defaults are not validated
        raise ValueError("cannot be null (leave it out to keep it as it is)")
    return value


class NotNull:
    """``Annotated[X | None, NotNull()]``: a field that may be left out (None) but takes no
    explicit null; its schema offers no null either."""

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(_refuse_null, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> dict[str, Any]:
        out = handler(schema)
        options = out.get("anyOf")
        if isinstance(options, list) and {"type": "null"} in options:
            rest = [o for o in options if o != {"type": "null"}]
            del out["anyOf"]
            if len(rest) == 1:
                out.update({k: v for k, v in rest[0].items() if k not in out})
            else:
                out["anyOf"] = rest
        return out


def _given_schema(name: str, mode: Given) -> dict[str, Any]:
    """JSON schema: ``name`` is present and given (see :func:`given`), said positively (a
    generator then draws given values instead of filtering them out)."""
    if mode == "set":
        return {"required": [name], "properties": {name: {"not": {"type": "null"}}}}
    text: dict[str, Any] = ({"type": "string", "pattern": NOT_BLANK} if mode == "text"
                            else {"type": "string", "minLength": 1})
    return {"required": [name], "properties": {name: {"anyOf": [
        text, {"type": ["number", "boolean"]}, {"type": "array", "minItems": 1},
        {"type": "object", "minProperties": 1}]}}}


@dataclass(frozen=True)
class When:
    """When ``field`` is one of ``values``: each of ``needs`` must be given, at least one of
    ``any_of``, and each field named in ``choices`` must hold one of its values."""

    field: str
    values: tuple[str, ...]
    message: str
    needs: tuple[str, ...] = ()
    any_of: tuple[str, ...] = ()
    choices: tuple[tuple[str, tuple[str | None, ...]], ...] = ()
    mode: Given | None = None  # None: the mode of the Rules it is part of

    def holds(self, model: Any) -> bool:
        """Whether ``model`` satisfies the rule."""
        if getattr(model, self.field) not in self.values:
            return True
        mode = self.mode or "set"
        had = [given(getattr(model, n), mode) for n in self.any_of]
        return (all(given(getattr(model, n), mode) for n in self.needs)
                and (not had or any(had))
                and all(getattr(model, n) in allowed for n, allowed in self.choices))

    def schema(self) -> dict[str, Any]:
        """JSON schema: the field holds another value, or the rule is met."""
        mode = self.mode or "set"
        met: list[dict[str, Any]] = [_given_schema(n, mode) for n in self.needs]
        if self.any_of:
            met.append({"anyOf": [_given_schema(n, mode) for n in self.any_of]})
        for name, allowed in self.choices:  # None among them: the field may be left out
            one_of = {"properties": {name: {"enum": list(allowed)}}}
            met.append(one_of if None in allowed else {"required": [name], **one_of})
        return {"anyOf": [{"properties": {self.field: {"not": {"enum": list(self.values)}}}},
                          {"allOf": met}]}


@dataclass(frozen=True)
class Rules:
    """Which fields a model's input must give: ``exactly_one`` of a group, ``at_least_one`` of
    a group, and conditions on an action (``when``)."""

    exactly_one: tuple[str, ...] = ()
    at_least_one: tuple[str, ...] = ()
    when: tuple[When, ...] = field(default_factory=tuple)
    mode: Given = "set"
    message: str = ""  # what a failed exactly_one / at_least_one says (a default otherwise)

    def __post_init__(self) -> None:
        object.__setattr__(self, "when", tuple(
            rule if rule.mode is not None else replace(rule, mode=self.mode)
            for rule in self.when))

    def check(self, model: Any) -> None:
        """ValueError saying what is missing, or too much."""
        if self.exactly_one:
            count = sum(given(getattr(model, n), self.mode) for n in self.exactly_one)
            if count != 1:
                raise ValueError(self.message or f"give either {' or '.join(self.exactly_one)}, "
                                 "not both or neither")
        if self.at_least_one and not any(given(getattr(model, n), self.mode)
                                         for n in self.at_least_one):
            raise ValueError(self.message
                             or f"give at least one of {', '.join(self.at_least_one)}")
        for rule in self.when:
            if not rule.holds(model):
                raise ValueError(rule.message)

    def schema(self, schema: dict[str, Any]) -> None:
        """Add the rules to a model's JSON schema (``json_schema_extra``)."""
        parts: list[dict[str, Any]] = []
        if self.exactly_one:
            parts.append({"oneOf": [
                {"allOf": [_given_schema(n, self.mode)]
                 + [{"not": _given_schema(o, self.mode)} for o in self.exactly_one if o != n]}
                for n in self.exactly_one]})
        if self.at_least_one:
            parts.append({"anyOf": [_given_schema(n, self.mode) for n in self.at_least_one]})
        parts += [rule.schema() for rule in self.when]
        if parts:
            schema.setdefault("allOf", []).extend(parts)
