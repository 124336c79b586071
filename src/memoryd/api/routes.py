"""REST routes, generated from the operation registry.

Each :class:`Binding` says which operation answers which method and path. Path
parameters (``{id}``) fill the input field of the same name; the rest comes from the
JSON body (POST/PATCH) or the query string (GET/DELETE). A route body is always the
same: read the caller, :func:`memoryd.operations.invoke`, serialise. Bridge routes (the
OpenClaw bridge of seed 000) wrap results in ``{success, data, error}``.

Bodies are parsed as strict JSON (:mod:`memoryd.api.json_body`), and every number that
reaches an operation, from the body or the query string, must be finite and fit in 64 bits
(``?after=9223372036854775808`` is a 422, not an overflow deep in the store). A query
parameter the route does not take, or a single-valued one given twice, is a 422 too: never a
filter silently ignored or a value picked by guess. Each route's
OpenAPI entry lists every status it can answer (:func:`documented_responses`); the error
envelope those statuses answer with is one response field shared by every route (FastAPI would
build a field of its own per route and status: about 800, half of building the app).
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from fastapi import Body, FastAPI, Path, Query, Request
from fastapi.responses import Response
from fastapi.routing import APIRoute
from fastapi.utils import create_model_field
from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from memoryd.api.arguments import NO_BODY, body_arguments, unvalidated, validated
from memoryd.api.errors import ErrorEnvelope
from memoryd.api.json_body import StrictJSONRoute
from memoryd.errors import Forbidden, InvalidInput
from memoryd.operations import CALLER_SCOPE_KEY, REGISTRY, Caller, Operation, Strict
from memoryd.operations.arguments import key_path


@dataclass(frozen=True)
class Binding:
    """One REST route of an operation."""

    method: Literal["GET", "POST", "PATCH", "DELETE"]
    path: str
    op: str
    tag: str
    envelope: bool = False
    status: int = 200


BINDINGS: tuple[Binding, ...] = (
    # The OpenClaw bridge (seed 000): POST, {success, data, error}; Vestige's argument names
    # are accepted beside memoryd's.
    Binding("POST", "/search", "vestige_search", "bridge", envelope=True),
    Binding("POST", "/ingest", "vestige_ingest", "bridge", envelope=True),
    Binding("POST", "/smart_ingest", "vestige_ingest", "bridge", envelope=True),
    Binding("POST", "/promote", "promote", "bridge", envelope=True),
    Binding("POST", "/demote", "demote", "bridge", envelope=True),
    Binding("POST", "/memory", "memory", "bridge", envelope=True),
    Binding("POST", "/codebase", "codebase", "bridge", envelope=True),
    Binding("POST", "/intention", "intention", "bridge", envelope=True),
    # Agent gateways (OpenClaw hooks).
    Binding("POST", "/recall", "recall", "gateway"),
    Binding("POST", "/capture", "capture", "gateway"),
    Binding("POST", "/flush", "flush", "gateway"),
    Binding("POST", "/session/warm", "session_warm", "gateway"),
    # Resources.
    Binding("POST", "/api/v1/memories", "memory_create", "memories", status=201),
    Binding("POST", "/api/v1/ingest", "smart_ingest", "memories"),
    Binding("GET", "/api/v1/memories", "memory_list", "memories"),
    Binding("GET", "/api/v1/memories/{id}", "memory_get", "memories"),
    Binding("PATCH", "/api/v1/memories/{id}", "memory_update", "memories"),
    Binding("DELETE", "/api/v1/memories/{id}", "memory_delete", "memories"),
    Binding("GET", "/api/v1/memories/{id}/history", "history", "memories"),
    Binding("GET", "/api/v1/memories/{id}/neighbours", "explore", "memories"),
    Binding("GET", "/api/v1/memories/{id}/retention", "memory_retention", "memories"),
    Binding("POST", "/api/v1/memories/{id}/links", "memory_link", "memories"),
    Binding("POST", "/api/v1/memories/{id}/promote", "promote", "memories"),
    Binding("POST", "/api/v1/memories/{id}/demote", "demote", "memories"),
    Binding("POST", "/api/v1/search", "search", "search"),
    Binding("POST", "/api/v1/recall", "recall", "search"),
    Binding("POST", "/api/v1/consolidate", "consolidate", "maintenance"),
    Binding("POST", "/api/v1/gc", "gc", "maintenance"),
    Binding("GET", "/api/v1/stats", "stats", "maintenance"),
    Binding("GET", "/api/v1/journal", "journal", "maintenance"),
    Binding("GET", "/api/v1/keys", "keys_list", "keys"),
    Binding("POST", "/api/v1/keys", "keys_create", "keys", status=201),
    Binding("DELETE", "/api/v1/keys/{id}", "keys_revoke", "keys"),
    # Domains: the fixed paths before /{id} (names like "proposals" are reserved).
    Binding("GET", "/api/v1/domains", "domains_list", "domains"),
    Binding("POST", "/api/v1/domains/discover", "domains_discover", "domains"),
    Binding("POST", "/api/v1/domains/merge", "domains_merge", "domains"),
    Binding("POST", "/api/v1/domains/threshold", "domains_threshold", "domains"),
    Binding("GET", "/api/v1/domains/proposals", "domain_proposals", "domains"),
    Binding("POST", "/api/v1/domains/proposals/{id}/accept", "domain_accept", "domains"),
    Binding("POST", "/api/v1/domains/proposals/{id}/reject", "domain_reject", "domains"),
    Binding("GET", "/api/v1/domains/{id}", "domain_show", "domains"),
    Binding("PATCH", "/api/v1/domains/{id}", "domain_rename", "domains"),
    Binding("POST", "/api/v1/domains/{id}/split", "domain_split", "domains"),
    Binding("GET", "/api/v1/ledger", "ledger", "maintenance"),
    Binding("GET", "/api/v1/ledger/verify", "ledger_verify", "maintenance"),
    # Task memory and smart waits.
    Binding("POST", "/api/v1/tasks", "task_register", "tasks", status=201),
    Binding("GET", "/api/v1/tasks", "task_list", "tasks"),
    Binding("GET", "/api/v1/tasks/{id}", "task_get", "tasks"),
    Binding("PATCH", "/api/v1/tasks/{id}", "task_update", "tasks"),
    Binding("POST", "/api/v1/tasks/{id}/complete", "task_complete", "tasks"),
    Binding("POST", "/api/v1/waits", "smart_wait", "waits", status=202),
    Binding("GET", "/api/v1/waits", "wait_list", "waits"),
    Binding("GET", "/api/v1/waits/{id}", "wait_status", "waits"),
    Binding("DELETE", "/api/v1/waits/{id}", "wait_cancel", "waits"),
    # Knowledge graphs.
    Binding("GET", "/api/v1/graph/core", "kg_read", "graph"),
    Binding("POST", "/api/v1/graph/write", "kg_write", "graph"),
    Binding("POST", "/api/v1/graph/link", "kg_link", "graph"),
    Binding("POST", "/api/v1/graph/search", "kg_search", "graph"),
    Binding("POST", "/api/v1/graph/nodes/{id}/recall", "kg_recall", "graph"),
    Binding("POST", "/api/v1/graph/nodes/{id}/archive", "kg_node_archive", "graph"),
    Binding("POST", "/api/v1/graph/archive", "kg_archive", "graph"),
    Binding("GET", "/api/v1/graph/changes", "kg_sync", "graph"),
    Binding("GET", "/api/v1/graph/ping", "kg_ping", "graph"),
    Binding("GET", "/api/v1/graph/export", "kg_export", "graph"),
    Binding("POST", "/api/v1/graph/import", "kg_import", "graph"),
    Binding("GET", "/api/v1/graph/view", "kg_graph", "graph"),
    Binding("GET", "/api/v1/graph/list", "kg_graphs", "graph"),
    Binding("GET", "/api/v1/graph/memories", "memory_graph", "graph"),
    # Views of the whole memory (the dashboard reads these).
    Binding("GET", "/api/v1/changes", "changes", "views"),
    Binding("GET", "/api/v1/timeline", "timeline", "views"),
    Binding("GET", "/api/v1/overview", "overview", "views"),
    Binding("GET", "/api/v1/whoami", "whoami", "views"),
)


def _envelope_model(output: type[BaseModel]) -> type[BaseModel]:
    return create_model(
        f"{output.__name__}Envelope",
        success=(Literal[True], True),
        data=(output, ...),
        error=(None, None),
    )


def _without(model: type[BaseModel], names: list[str], suffix: str) -> type[BaseModel] | None:
    """The model minus the path fields (None when nothing is left), with the same rules in
    its schema (``json_schema_extra``)."""
    if not names:
        return model if model.model_fields else None
    fields = {n: (f.annotation, f) for n, f in model.model_fields.items() if n not in names}
    if not fields:
        return None
    extra = model.model_config.get("json_schema_extra")
    base = Strict if extra is None else type(f"{model.__name__}Rules", (Strict,), {
        "model_config": ConfigDict(json_schema_extra=extra), "__module__": model.__module__})
    return create_model(f"{model.__name__}{suffix}", __base__=base, **fields)  # type: ignore[call-overload]


def _caller(request: Request) -> Caller:
    caller = request.scope.get(CALLER_SCOPE_KEY)
    if not isinstance(caller, Caller):
        raise Forbidden("unauthenticated request")
    return caller


def _json(result: BaseModel, envelope: bool, status: int) -> Response:
    body = result.model_dump_json()
    if envelope:
        body = '{"success":true,"data":' + body + ',"error":null}'
    return Response(body, status_code=status, media_type="application/json")


def _path_params(op: Operation, path_names: list[str]) -> list[inspect.Parameter]:
    """The path parameters, with the lengths of the input fields they fill."""
    params = []
    for name in path_names:
        info = op.input.model_fields[name]
        lengths = {
            key: getattr(m, key) for m in info.metadata for key in ("min_length", "max_length")
            if getattr(m, key, None) is not None
        }
        params.append(
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                annotation=Annotated[str, Path(description=info.description, **lengths)],
            )
        )
    return params


def _empty_body_refused(op: Operation, path_names: list[str]) -> bool:
    """Whether the operation refuses a call with nothing besides its path (so that the body
    is required: recall needs a prompt or a query, though neither field is required)."""
    try:
        op.input.model_validate({name: "x" for name in path_names})
    except ValidationError as exc:
        return any(not err["loc"] or err["loc"][0] not in path_names for err in exc.errors())
    return False


def _payload_param(binding: Binding, op: Operation, rest: type[BaseModel],
                   path_names: list[str]) -> inspect.Parameter:
    """The query model (validated by FastAPI: query values are strings) or the JSON body
    (published, but validated by the operation: see memoryd.api.arguments)."""
    if binding.method in ("GET", "DELETE"):
        marker: Any = Query()
        default: Any = inspect.Parameter.empty
    else:
        marker = Body()
        required = _empty_body_refused(op, path_names)
        default = inspect.Parameter.empty if required else None
        rest = unvalidated(rest)
    return inspect.Parameter("payload", inspect.Parameter.KEYWORD_ONLY,
                             annotation=Annotated[rest, marker], default=default)


def _endpoint(binding: Binding, op: Operation) -> Any:
    path_names = re.findall(r"{(\w+)}", binding.path)
    params = [inspect.Parameter("request", inspect.Parameter.KEYWORD_ONLY, annotation=Request)]
    params += _path_params(op, path_names)
    has_body = binding.method not in ("GET", "DELETE")
    rest = _without(op.input, path_names, "Body" if has_body else "Query")
    query = rest.model_fields if rest is not None and not has_body else {}
    many = frozenset(n for n, f in query.items() if _takes_many(f.annotation))
    if rest is not None:
        params.append(_payload_param(binding, op, rest, path_names))

    def endpoint(**kwargs: Any) -> Response:
        request: Request = kwargs.pop("request")
        check_query(request.query_params.multi_items(), frozenset(query), many)
        payload = kwargs.pop("payload", None)
        if has_body:
            arguments = body_arguments(payload, kwargs, getattr(request, "_json", NO_BODY))
        else:
            arguments = payload.model_dump(exclude_unset=True) if payload is not None else {}
            arguments.update(kwargs)
        data = validated(op, arguments, kwargs, "body" if has_body else "query")
        result = op.run(request.app.state.engine, data, _caller(request))
        return _json(result, binding.envelope, binding.status)

    endpoint.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    endpoint.__name__ = op.name
    return endpoint


def check_query(items: list[tuple[str, str]], names: frozenset[str],
                many: frozenset[str]) -> None:
    """InvalidInput for a query parameter the route does not take (a filter that would be
    ignored) or a single-valued one given twice (which value counts would be a guess)."""
    seen: set[str] = set()
    for name, _ in items:
        if name not in names:
            takes = ", ".join(sorted(names)) or "no query parameters"
            where = key_path("", name, 0).replace("[key 0]", "a query parameter")
            raise InvalidInput(f"{where}: unknown query parameter (this route takes {takes})")
        if name in seen and name not in many:
            raise InvalidInput(f"{name}: given more than once (it takes one value)")
        seen.add(name)


def _takes_many(annotation: Any) -> bool:
    """Whether a query field takes repeated values (a list, possibly optional)."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _takes_many(get_args(annotation)[0])
    if origin in (Union, UnionType):
        return any(_takes_many(a) for a in get_args(annotation))
    return origin is list or annotation is list


def add_routes(app: FastAPI) -> None:
    """Attach every binding to the app (sync endpoints: FastAPI runs them in a thread pool)."""
    error_field = create_model_field(name="Response_error", type_=ErrorEnvelope,
                                     mode="serialization")
    for binding in BINDINGS:
        op = REGISTRY[binding.op]
        response_model = _envelope_model(op.output) if binding.envelope else op.output
        responses = documented_responses(binding, op)
        app.router.add_api_route(
            binding.path,
            _endpoint(binding, op),
            methods=[binding.method],
            status_code=binding.status,
            response_model=response_model,
            summary=op.title,
            description=op.description + f"\n\nNeeds a key with the `{_scope_doc(op)}` scope.",
            tags=[binding.tag],
            operation_id=operation_id(binding),
            responses={status: {"description": r["description"]}
                       for status, r in responses.items()},
            route_class_override=StrictJSONRoute,
        )
        route = app.router.routes[-1]
        assert isinstance(route, APIRoute) and route.operation_id == operation_id(binding)
        # What FastAPI would have set from ``responses`` (read only by the OpenAPI document).
        route.responses = responses
        route.response_fields = {status: error_field for status in responses}


_ALWAYS: dict[int, str] = {
    400: "Malformed request: Host, Content-Length or X-Agent-Id header, or body encoding",
    401: "Missing or invalid API key",
    403: "The key may not do this (scope, binding), or the Origin is not allowed",
    421: "The Host header names a host this server does not answer to",
    422: "Invalid input (the message names the field)",
    500: "Internal error (a bug; the response says no more)",
    503: "The store or the embedding model cannot be used right now",
}
_WITH_BODY: dict[int, str] = {
    408: "The request body did not arrive within the read timeout",
    413: "The request body is over MEMORYD_MAX_BODY_BYTES",
}
# Operations that can answer 404 though they take no id in the path, and 409.
_NOT_FOUND_OPS = frozenset({"promote", "demote", "memory", "keys_revoke", "explore", "history",
                            "intention", "smart_wait", "domains_merge"})
_BUSY = "Another process is running the same maintenance job"
_DOMAINS_BUSY = "Another process is changing this store's domains"
_CONFLICTS = {"consolidate": _BUSY, "gc": _BUSY, "task_update": "The task already ended",
              "task_complete": "The task already ended",
              **{op: _DOMAINS_BUSY for op in ("domains_discover", "domains_merge",
                                              "domains_threshold", "domain_accept",
                                              "domain_reject", "domain_split", "domain_rename")}}


def documented_responses(binding: Binding, op: Operation) -> dict[int | str, dict[str, Any]]:
    """Every status the route can answer besides its success status, for OpenAPI."""
    codes = dict(_ALWAYS)
    if binding.method in ("POST", "PATCH"):
        codes.update(_WITH_BODY)
    if "{" in binding.path or op.name in _NOT_FOUND_OPS or "project" in op.input.model_fields:
        codes[404] = ("No such memory, key, task, wait, node, domain or project directory (or "
                      "not visible to this key)")
    if "{" in binding.path:  # an empty id leaves a path that names another route
        codes[405] = "The path (with an empty id) names a route that takes other methods"
    if op.name in _CONFLICTS:
        codes[409] = _CONFLICTS[op.name]
    return {
        status: {"description": text, "model": ErrorEnvelope}
        for status, text in sorted(codes.items())
    }


def operation_id(binding: Binding) -> str:
    """The OpenAPI operationId of a binding."""
    return f"{binding.op}__{binding.method.lower()}_{_slug(binding.path)}"


# OpenAPI links (for clients and stateful fuzzing): where a created resource's id goes next.
LINK_SOURCES = {
    ("POST", "/api/v1/memories"): ("/api/v1/memories/{id}", "$response.body#/id"),
    ("POST", "/api/v1/keys"): ("/api/v1/keys/{id}", "$response.body#/key/id"),
}


def response_links() -> dict[str, dict[str, dict[str, Any]]]:
    """operationId of a creating route -> its links to the routes that take the new id."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for source in BINDINGS:
        target = LINK_SOURCES.get((source.method, source.path))
        if target is None:
            continue
        prefix, expression = target
        out[operation_id(source)] = {
            f"{b.op}_{b.method.lower()}_{_slug(b.path)}": {
                "operationId": operation_id(b),
                "parameters": {"id": expression},
            }
            for b in BINDINGS
            if b.path.startswith(prefix)
        }
    return out


def _scope_doc(op: Operation) -> str:
    return op.scope if isinstance(op.scope, str) else "read/write (by action)"


def _slug(path: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", path.lower()).strip("_")
