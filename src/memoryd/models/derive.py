"""Deriving input models from the one model of a concept, instead of retyping its fields.

>>> IngestFields = pick(MemoryFields, ["node_type", "tags", "source"], name="IngestFields")
"""

from __future__ import annotations

import copy
from typing import Any, Optional

from pydantic import BaseModel, Field, create_model

from memoryd.models.fields import Strict


def pick(
    model: type[BaseModel],
    names: list[str],
    *,
    name: str,
    base: type[BaseModel] = Strict,
    optional: bool = False,
    nullable: tuple[str, ...] = (),
    doc: str | None = None,
    **defaults: Any,
) -> type[BaseModel]:
    """A model with the named fields of ``model``: same types, limits, validators and
    descriptions. ``optional`` makes every field ``T | None`` with default ``None`` (absent
    and null both mean "not given"), ``nullable`` only those named; ``defaults`` override
    single defaults."""
    fields: dict[str, Any] = {}
    for field_name in names:
        source = model.model_fields[field_name]
        if optional or field_name in nullable:
            info = Field(None, description=source.description, examples=source.examples)
            annotation: Any = Optional[source.rebuild_annotation()]
        else:
            info, annotation = copy.copy(source), source.annotation
        if field_name in defaults:
            info.default, info.default_factory = defaults[field_name], None
        fields[field_name] = (annotation, info)
    return create_model(name, __base__=base, __doc__=doc or model.__doc__,  # type: ignore[call-overload]
                        **fields)
