"""Authentication, as ASGI middleware (it also guards /mcp).

Every request to an existing route except the public paths (health, the API's documents,
and the dashboard's page and files under ``/dashboard``, which hold no data) must carry
``Authorization: Bearer <key>`` or ``X-API-Key: <key>``. The verified caller (scopes, bound
scope/agent, ``X-Agent-Id``) is put in the request scope under ``memoryd.caller`` for the
routes and MCP tools to read. Without a key, requests are refused unless the server was
started with ``MEMORYD_ALLOW_ANONYMOUS=true``. A key that is presented is always checked,
even then. On a public path a valid key is recorded too (``/health`` then shows details)
and an invalid one is ignored (a probe still sees the status).

Paths no route serves answer 404 and methods a path does not take answer 405 with
``Allow``, before any key is asked for: OAuth discovery probes such as
``/.well-known/oauth-authorization-server`` must read "not here", not "log in".
"""

from __future__ import annotations


import anyio.to_thread
from starlette.routing import Match, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from memoryd.api.errors import send_error, status_of
from memoryd.errors import InvalidInput, MemorydError
from memoryd.keys import AGENT_ID, touch_due
from memoryd.operations import CALLER_SCOPE_KEY, Caller
from memoryd.operations.screening import looks_like_secret

PUBLIC_PATHS = frozenset(
    {"/health", "/readyz", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"}
)
# The dashboard's page and files hold no data (the page sends a key with every API call).
PUBLIC_PREFIX = "/dashboard"
# Routes that take any method and answer the wrong ones themselves (the MCP transport).
OPEN_ROUTE_METHODS = {"/mcp": frozenset({"GET", "POST", "DELETE"})}
# An MCP client that meets a 401 looks for an OAuth server, then registers at /register: the
# 404 it gets there says what to do instead (clients show it to the user).
_OAUTH_PATHS = ("/.well-known/oauth-", "/.well-known/openid-configuration", "/register",
                "/authorize", "/token")
NO_OAUTH = ("memoryd does not use OAuth: connect with an API key, sent as "
            "'Authorization: Bearer <key>' (make one with `memoryd keys create`)")
def _presented_key(headers: dict[bytes, bytes]) -> str | None:
    auth = headers.get(b"authorization", b"").decode("latin-1").strip()
    if auth:
        scheme, _, value = auth.partition(" ")
        return value.strip() if scheme.lower() == "bearer" else auth
    key = headers.get(b"x-api-key", b"").decode("latin-1").strip()
    return key or None


def is_public(path: str) -> bool:
    """Whether a path is served without a key (health, the API's documents, the dashboard)."""
    return path in PUBLIC_PATHS or path == PUBLIC_PREFIX or path.startswith(PUBLIC_PREFIX + "/")


def _is_oauth_path(path: str) -> bool:
    return any(path == p or path.startswith(p if p.endswith("-") else p + "/")
               for p in _OAUTH_PATHS)


def allowed_methods(scope: Scope) -> frozenset[str] | None:
    """The methods the request's path takes (None: no route serves the path).

    The path names one resource: the first route template that matches it, in routing order
    (``/api/v1/domains/merge`` is the merge route's, not ``/api/v1/domains/{id}``'s, since
    reserved names are no domain's id), and the methods are those of its routes."""
    methods: set[str] = set()
    found: str | None = None
    for route in scope["app"].router.routes:
        match, _ = route.matches(scope)
        path = getattr(route, "path", None)
        if match == Match.NONE or (found is not None and path != found):
            continue
        found = path or ""
        route_methods = getattr(route, "methods", None)
        if route_methods is None and isinstance(route, Route) and path in OPEN_ROUTE_METHODS:
            route_methods = OPEN_ROUTE_METHODS[path]
        if route_methods is None:  # takes every method
            return frozenset({scope["method"]})
        methods |= set(route_methods)
    return frozenset(methods) if found is not None else None


class AuthMiddleware:
    """Resolve the caller of every non-public HTTP request, or answer 401/403."""

    def __init__(self, app: ASGIApp, *, allow_anonymous: bool) -> None:
        self.app = app
        self.allow_anonymous = allow_anonymous

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        methods = allowed_methods(scope)
        if methods is None:  # 404, whoever asks
            if _is_oauth_path(scope["path"]):
                await send_error(send, 404, NO_OAUTH, "not_found")
            else:
                await self.app(scope, receive, send)
            return
        if scope["method"] not in methods:
            allow = ", ".join(sorted(methods))
            message = f"{scope['method']} is not allowed here; allowed: {allow}"
            await send_error(send, 405, message, "method_not_allowed", headers=[("Allow", allow)])
            return
        headers = dict(scope["headers"])
        if is_public(scope["path"]):
            await self._public(scope, receive, send, headers)
            return
        agent = headers.get(b"x-agent-id", b"").decode("latin-1").strip() or None
        if agent is not None and not AGENT_ID.fullmatch(agent):
            message = "X-Agent-Id must be 1-256 printable ASCII characters"
            await send_error(send, 400, message, "bad_agent_id")
            return
        if agent is not None and looks_like_secret(agent):  # it would label stored memories
            message = "X-Agent-Id looks like a secret; name the agent instead"
            await send_error(send, 400, message, "bad_agent_id")
            return
        presented = _presented_key(headers)
        domain = headers.get(b"x-memoryd-domain", b"").decode("latin-1").strip() or None
        try:
            if presented is not None:
                caller = await self._verified(scope, presented, agent, domain)
            elif self.allow_anonymous:
                caller = Caller.anonymous(agent, domain)
            else:
                message = (
                    "missing API key: send 'Authorization: Bearer <key>' or 'X-API-Key: <key>'"
                )
                await send_error(send, 401, message, "unauthorized")
                return
            if caller.bound_agent is None and agent is not None:
                # Forbidden when that agent has a key of its own (off the loop: a store read).
                await anyio.to_thread.run_sync(scope["app"].state.engine.labelled, agent)
        except InvalidInput as exc:  # a malformed X-Memoryd-Domain
            await send_error(send, 400, str(exc), "bad_domain")
            return
        except MemorydError as exc:  # InvalidKey 401, Forbidden 403, StoreError 503
            status, code = status_of(exc)
            await send_error(send, status, str(exc), code)
            return
        scope[CALLER_SCOPE_KEY] = caller
        await self.app(scope, receive, send)

    async def _verified(self, scope: Scope, presented: str, agent: str | None,
                        domain: str | None = None) -> Caller:
        engine = scope["app"].state.engine
        key = await anyio.to_thread.run_sync(engine.admin.verify_key, presented)
        caller = Caller.from_key(key, agent, domain)
        if touch_due(key):  # a write: off the event loop, at most once a minute
            await anyio.to_thread.run_sync(engine.admin.touch_key, key)
        return caller

    async def _public(
        self, scope: Scope, receive: Receive, send: Send, headers: dict[bytes, bytes]
    ) -> None:
        presented = _presented_key(headers)
        if presented is not None and getattr(scope["app"].state, "engine", None) is not None:
            try:
                scope[CALLER_SCOPE_KEY] = await self._verified(scope, presented, None)
            except MemorydError:
                pass  # a public path answers anyway, without the details a key unlocks
        await self.app(scope, receive, send)
