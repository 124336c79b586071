"""JSON's integers, as JSON Schema counts them: ``5.0`` is the integer 5.

A JSON number with a zero fraction is an integer to every JSON Schema validator (and so to the
clients that generate requests from memoryd's OpenAPI document), while strict validation would
refuse ``5.0`` for an ``int`` field. :func:`whole_numbers` turns such numbers into ``int``
where the input model takes an integer (at any depth: a wait's ``criteria.exit_code``), and
nowhere else, so a free-form ``metadata`` value keeps its form.
"""

from __future__ import annotations

import functools
import types
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel

Plan = dict[str, Any]  # field -> "int" | a nested Plan (a model) | ("list", "int" or Plan)


def whole_numbers(model: type[BaseModel], data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (a model's raw arguments) with integral floats as ints where ints go."""
    return _apply(_plan(model), data)


def _apply(plan: Plan, data: Any) -> Any:
    if not isinstance(data, dict) or not plan:
        return data
    out = dict(data)
    for name, kind in plan.items():
        if name in out:
            out[name] = _convert(kind, out[name])
    return out


def _convert(kind: Any, value: Any) -> Any:
    if kind == "int":
        return int(value) if isinstance(value, float) and value.is_integer() else value
    if isinstance(kind, tuple):  # a list of ints or of models
        return [_convert(kind[1], v) for v in value] if isinstance(value, list) else value
    return _apply(kind, value)


@functools.cache
def _plan(model: type[BaseModel]) -> Plan:
    plan: Plan = {}
    for name, info in model.model_fields.items():
        kind = _kind(info.annotation)
        if kind is not None:
            plan[info.alias or name] = kind
    return plan


def _kind(annotation: Any) -> Any:
    """"int", a Plan, ("list", kind), or None for a type that holds no integer."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _kind(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        kinds = [k for k in (_kind(a) for a in get_args(annotation)) if k is not None]
        return kinds[0] if len(kinds) == 1 else None
    if origin is list:
        item = _kind(get_args(annotation)[0]) if get_args(annotation) else None
        return ("list", item) if item is not None else None
    if annotation is int:
        return "int"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _plan(annotation) or None
    return None
