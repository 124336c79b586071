"""How a REST request becomes an operation's arguments.

FastAPI validates a route's body on the event loop, before the endpoint runs in a worker
thread, and in Python's lax mode (``true`` for 1.0, ``0`` for a date). So the body model of
each route is published in OpenAPI but not validated there (:func:`unvalidated`): the endpoint
gets the parsed JSON as it came and the operation validates it once, strictly, in the worker
thread (:meth:`memoryd.operations.Operation.validate`), where no request can hold the event
loop. Its errors keep the shape FastAPI gives them (a 422 with ``detail``), located in the
body, the path or the query string.
"""

from __future__ import annotations

import functools
from typing import Any, Mapping

from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError, create_model, model_validator

from memoryd.operations import Operation


class RawBody:
    """A request body as parsed from JSON, not validated yet."""

    def __init__(self, data: Any) -> None:
        self.data = data


@functools.cache
def unvalidated(model: type[BaseModel]) -> type[BaseModel]:
    """``model`` for FastAPI: the same name, fields and JSON schema, but validating to a
    :class:`RawBody` of the input as given."""

    def keep(cls: type[BaseModel], data: Any, handler: Any) -> RawBody:
        return RawBody(data)

    return create_model(  # type: ignore[call-overload,no-any-return]
        model.__name__, __base__=model, __doc__=model.__doc__, __module__=model.__module__,
        __validators__={"_as_given": model_validator(mode="wrap")(keep)},
    )


NO_BODY = object()


def body_arguments(body: Any, path: Mapping[str, str], parsed: Any = NO_BODY) -> dict[str, Any]:
    """The arguments of a route with a JSON body: the body's fields plus the path's.
    ``parsed`` is the request's parsed JSON, if it had a body (a body of JSON ``null`` reaches
    the endpoint as no body at all, and is refused like any other body that is no object)."""
    data = body.data if isinstance(body, RawBody) else body
    if data is None and parsed is NO_BODY:
        data = {}
    if not isinstance(data, dict):
        raise RequestValidationError([{"type": "model_attributes_type", "loc": ("body",),
                                       "msg": "Input should be a JSON object"}])
    given_twice = sorted(set(data) & set(path))
    if given_twice:
        raise RequestValidationError([
            {"type": "extra_forbidden", "loc": ("body", name),
             "msg": "Extra inputs are not permitted (it is given in the path)"}
            for name in given_twice
        ])
    return {**data, **path}


def validated(op: Operation, arguments: dict[str, Any], path: Mapping[str, str],
              where: str) -> BaseModel:
    """The operation's input model of ``arguments``; RequestValidationError (a 422 naming the
    fields, each located in the path or in ``where``: ``body`` or ``query``) if invalid."""
    try:
        return op.validate(arguments)
    except ValidationError as exc:
        errors = []
        for err in exc.errors():
            loc = tuple(err.get("loc", ()))
            place = "path" if loc and loc[0] in path else where
            errors.append({**err, "loc": (place, *loc)})
        raise RequestValidationError(errors) from None
