"""REST routes, generated from the operation registry.

Each :class:`Binding` says which operation answers which method and path. Path
parameters (``{id}``) fill the input field of the same name; the rest comes from the
JSON body (POST/PATCH) or the query string (GET/DELETE). A route body is always the
same: read the caller, :func:`memoryd.operations.invoke`, serialise. Bridge routes (the
OpenClaw bridge of seed 000) wrap results in ``{success, data, error}``.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from fastapi import Body, FastAPI, Path, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, create_model

from memoryd.errors import Forbidden
from memoryd.operations import CALLER_SCOPE_KEY, REGISTRY, Caller, Operation, Strict


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
)


def _envelope_model(output: type[BaseModel]) -> type[BaseModel]:
    return create_model(
        f"{output.__name__}Envelope",
        success=(Literal[True], True),
        data=(output, ...),
        error=(None, None),
    )


def _without(model: type[BaseModel], names: list[str], suffix: str) -> type[BaseModel] | None:
    """The model minus the path fields (None when nothing is left)."""
    if not names:
        return model if model.model_fields else None
    fields = {n: (f.annotation, f) for n, f in model.model_fields.items() if n not in names}
    if not fields:
        return None
    return create_model(f"{model.__name__}{suffix}", __base__=Strict, **fields)  # type: ignore[call-overload]


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


def _endpoint(binding: Binding, op: Operation) -> Any:
    path_names = re.findall(r"{(\w+)}", binding.path)
    params = [inspect.Parameter("request", inspect.Parameter.KEYWORD_ONLY, annotation=Request)]
    for name in path_names:
        info = op.input.model_fields[name]
        params.append(
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                annotation=Annotated[str, Path(description=info.description)],
            )
        )
    rest = _without(
        op.input, path_names, "Query" if binding.method in ("GET", "DELETE") else "Body"
    )
    if rest is not None:
        if binding.method in ("GET", "DELETE"):
            marker: Any = Query()
            default: Any = inspect.Parameter.empty
        else:
            marker = Body()
            required = any(f.is_required() for f in rest.model_fields.values())
            default = inspect.Parameter.empty if required else None
        params.append(
            inspect.Parameter(
                "payload",
                inspect.Parameter.KEYWORD_ONLY,
                annotation=Annotated[rest, marker],
                default=default,
            )
        )

    def endpoint(**kwargs: Any) -> Response:
        request: Request = kwargs.pop("request")
        payload = kwargs.pop("payload", None)
        if payload is not None and not kwargs and isinstance(payload, op.input):
            arguments: Any = payload  # already the operation's input model
        else:
            arguments = payload.model_dump(exclude_unset=True) if payload is not None else {}
            arguments.update(kwargs)
        result = op.run(request.app.state.engine, arguments, _caller(request))
        return _json(result, binding.envelope, binding.status)

    endpoint.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    endpoint.__name__ = op.name
    return endpoint


def add_routes(app: FastAPI) -> None:
    """Attach every binding to the app (sync endpoints: FastAPI runs them in a thread pool)."""
    for binding in BINDINGS:
        op = REGISTRY[binding.op]
        response_model = _envelope_model(op.output) if binding.envelope else op.output
        app.add_api_route(
            binding.path,
            _endpoint(binding, op),
            methods=[binding.method],
            status_code=binding.status,
            response_model=response_model,
            summary=op.title,
            description=op.description + f"\n\nNeeds a key with the `{_scope_doc(op)}` scope.",
            tags=[binding.tag],
            operation_id=f"{op.name}__{binding.method.lower()}_{_slug(binding.path)}",
            responses={
                401: {"description": "Missing or invalid API key"},
                403: {"description": "The key may not do this"},
                422: {"description": "Invalid input (the message names the field)"},
            },
        )


def _scope_doc(op: Operation) -> str:
    return op.scope if isinstance(op.scope, str) else "read/write (by action)"


def _slug(path: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", path.lower()).strip("_")
