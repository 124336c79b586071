"""Deriving models from the one model of a concept, instead of retyping its fields: write
inputs with :func:`settable` and :func:`changes` (from the fields marked :class:`Settable`),
narrower inputs with :func:`pick`, output views with :func:`view`.

>>> class Note(BaseModel):
...     text: Annotated[str, Settable(Content)]
...     mood: Annotated[str | None, Settable(Label, description="How it felt.")] = None
>>> NewNote = settable(Note, ["text", "mood"], name="NewNote")   # text: Content; mood: Label | None
>>> NoteChange = changes(Note, name="NoteChange")   # both optional; null clears mood only
>>> IngestFields = pick(MemoryFields, ["node_type", "tags", "source"], name="IngestFields")
>>> class Brief(view(Memory, ["id", "content", "snippet"], name="BriefFields", own=("snippet",))):
...     snippet: str
>>> Brief.shown(memory, snippet=memory.content[:80])
"""

from __future__ import annotations

import copy
import types
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Mapping, Optional, Self, Union, get_args, get_origin

from pydantic import BaseModel, Field, create_model
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from memoryd.models.fields import Strict
from memoryd.models.rules import NotNull


@dataclass(frozen=True)
class Settable:
    """Marks a field of a stored model that callers set: ``Annotated[str | None,
    Settable(Summary)]``. The stored field keeps its own (output) type; the inputs take
    ``input``, the type with its limits, plus null where the stored field may be empty.

    description: what the inputs that create one say of it (default: ``input``'s own);
    new: whether a new one may carry it (the default field list of :func:`settable`);
    changed: whether a change may set it (:func:`changes`);
    changed_description: what a change says of it (default: ``input``'s own).
    """

    input: Any
    description: str | None = None
    new: bool = True
    changed: bool = True
    changed_description: str | None = None


def settable_fields(model: type[BaseModel], *, new: bool | None = None,
                    changed: bool | None = None) -> dict[str, Settable]:
    """The fields of ``model`` marked :class:`Settable` (in its order), those a new one may
    carry (``new=True``) or a change may set (``changed=True``)."""
    out = {}
    for field_name, info in model.model_fields.items():
        mark = next((m for m in info.metadata if isinstance(m, Settable)), None)
        if mark is not None and new in (None, mark.new) and changed in (None, mark.changed):
            out[field_name] = mark
    return out


def may_be_empty(model: type[BaseModel], field_name: str) -> bool:
    """Whether the stored field admits null (so a change may clear it)."""
    annotation = model.model_fields[field_name].annotation
    return get_origin(annotation) in (Union, types.UnionType) and type(None) in get_args(annotation)


def settable(
    model: type[BaseModel],
    names: list[str] | None = None,
    *,
    name: str,
    base: type[BaseModel] = Strict,
    optional: tuple[str, ...] = (),
    nullable: tuple[str, ...] = (),
    rename: Mapping[str, str] | None = None,
    descriptions: Mapping[str, str] | None = None,
    doc: str | None = None,
) -> type[BaseModel]:
    """An input model taking the named settable fields of ``model`` (default: every field a
    new one may carry), in that order, each of its :class:`Settable` input type with the
    stored field's default; null too where the stored field may be empty. ``optional`` and
    ``nullable`` fields take null and default to it (an ``optional`` one as ``T | None =
    None`` declares it: the type's description stays on the type; a ``nullable`` one as
    :func:`pick` makes it: the description is the field's); ``rename`` takes a field under
    another name (``{"type": "node_type"}``); ``descriptions`` overrides what a field says."""
    marks = settable_fields(model)
    renamed, described = dict(rename or {}), dict(descriptions or {})
    fields: dict[str, Any] = {}
    for field_name in names if names is not None else list(settable_fields(model, new=True)):
        source_name = renamed.get(field_name, field_name)
        if source_name not in marks:
            raise ValueError(f"{name}: {source_name!r} is not a settable field")
        mark, stored = marks[source_name], model.model_fields[source_name]
        description = described.get(field_name, mark.description)
        annotation = mark.input
        if field_name in nullable:  # the type's description said by the field, as pick does
            lifted = FieldInfo.from_annotation(mark.input)
            annotation, description = lifted.rebuild_annotation(), description or lifted.description
        given: dict[str, Any] = {} if description is None else {"description": description}
        if field_name in optional or field_name in nullable:
            annotation, given["default"] = Optional[annotation], None
        else:
            if may_be_empty(model, source_name):
                annotation = Optional[annotation]
            if stored.default_factory is not None:
                given["default_factory"] = stored.default_factory
            elif stored.default is not PydanticUndefined:
                given["default"] = stored.default
        fields[field_name] = (annotation, Field(**given))
    return create_model(name, __base__=base, __doc__=doc or model.__doc__,  # type: ignore[call-overload]
                        **fields)


def changes(model: type[BaseModel], *, name: str, base: type[BaseModel] = Strict,
            doc: str | None = None) -> type[BaseModel]:
    """An input model of a change to ``model``: every field a change may set, optional; null
    clears a field the stored model lets be empty and is refused (``NotNull``: the schema
    offers none) for the others."""
    fields: dict[str, Any] = {}
    for field_name, mark in settable_fields(model, changed=True).items():
        said = mark.changed_description
        given = {} if said is None else {"description": said}
        annotation: Any = Optional[mark.input]
        if not may_be_empty(model, field_name):
            annotation = Annotated[annotation, NotNull()]
        fields[field_name] = (annotation, Field(None, **given))
    return create_model(name, __base__=base, __doc__=doc or model.__doc__,  # type: ignore[call-overload]
                        **fields)


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
