"""Deriving models from the one model of a concept, instead of retyping its fields: input
models with :func:`pick`, output views with :func:`view`.

>>> IngestFields = pick(MemoryFields, ["node_type", "tags", "source"], name="IngestFields")
>>> class Brief(view(Memory, ["id", "content", "snippet"], name="BriefFields", own=("snippet",))):
...     snippet: str
>>> Brief.shown(memory, snippet=memory.content[:80])
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar, Mapping, Optional, Self

from pydantic import BaseModel, Field, create_model
from pydantic_core import PydanticUndefined

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


class View(BaseModel):
    """Base of an output view made by :func:`view`: it knows which source field each of its
    fields shows, so :meth:`shown` fills them from the source objects."""

    #: the models it shows fields of, and view field -> (index of its model, the model's field)
    __sources__: ClassVar[tuple[type[BaseModel], ...]] = ()
    __shown__: ClassVar[dict[str, tuple[int, str]]] = {}
    #: the view's own fields, declared in the class body that derives from the made base
    __own__: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        if "__own__" in cls.__dict__:  # the base made by view(): its own fields are to come
            return
        missing = [n for n in cls.__own__ if n not in _declared(cls)]
        if missing:
            raise TypeError(f"{cls.__name__} must declare its own fields {missing}")

    @classmethod
    def shown(cls, *sources: Any, **values: Any) -> Self:
        """The view of ``sources`` (in the order :func:`view` was given their models), with
        ``values`` for its own fields and for shown fields it renders differently."""
        shown = {name: getattr(sources[i], field) for name, (i, field) in cls.__shown__.items()
                 if name not in values}
        return cls(**shown, **values)


def _declared(cls: type) -> set[str]:
    """Fields declared in the class bodies below the base :func:`view` made."""
    names: set[str] = set()
    for klass in cls.__mro__:
        if "__own__" in klass.__dict__:
            break
        names |= set(klass.__dict__.get("__annotations__", {}))
    return names


def view(
    sources: type[BaseModel] | tuple[type[BaseModel], ...],
    fields: list[str],
    *,
    name: str,
    rename: Mapping[str, str] | None = None,
    required: tuple[str, ...] = (),
    defaults: Mapping[str, Any] | None = None,
    own: tuple[str, ...] = (),
) -> type[View]:
    """The base of an output model showing fields of ``sources`` (each from the first model
    that has it), in the order of ``fields``, with the same types and descriptions.

    ``rename`` shows a source field under another name (``{"type": "node_type"}``);
    ``required`` drops a source's default (the source always holds a value, so the view
    always shows one); ``defaults`` sets a default (``[]`` where the source has a factory).
    ``own`` are the view's own fields, declared in the body of the class that derives from
    this base; ``fields`` lists them too, for their place in the schema.
    """
    models = sources if isinstance(sources, tuple) else (sources,)
    renamed, defaults = dict(rename or {}), dict(defaults or {})
    specs: dict[str, Any] = {}
    shown: dict[str, tuple[int, str]] = {}
    for field_name in fields:
        if field_name in own:
            specs[field_name] = (Any, None)  # a placeholder keeping the place
            continue
        source_name = renamed.get(field_name, field_name)
        index = next((i for i, m in enumerate(models) if source_name in m.model_fields), None)
        if index is None:
            raise ValueError(f"{name}: no source has a field {source_name!r}")
        info = copy.copy(models[index].model_fields[source_name])
        if field_name in required:
            info.default, info.default_factory = PydanticUndefined, None
        if field_name in defaults:
            info.default, info.default_factory = defaults[field_name], None
        specs[field_name] = (info.annotation, info)
        shown[field_name] = (index, source_name)
    made = create_model(name, __base__=View, **specs)  # type: ignore[call-overload]
    made.__sources__, made.__shown__, made.__own__ = models, shown, own
    return made  # type: ignore[no-any-return]
