"""Which graphs a call is about: the user graph (scope ``user``) and a project graph
(``project:<name>``), named by the project's root directory or by its name.

A root directory places the graph file at ``<root>/.knowledge/graph.json`` and names the
project after the file's ``scope`` when the file exists (so two repositories that share a
directory name can keep apart: write another scope into a new file), else after the last
path component (as the transcript importers do). A bare name finds the file the store last
mirrored for that project, if its directory still exists.
A caller bound to one scope gets that scope when it names none, and Forbidden when it
names another; a caller limited to domains gets Forbidden. A caller bound to a scope or
agent names a root directory only under ``kg_allowed_roots`` (default: none): the file
mirrors every agent's nodes of the project, and the server writes it where the root says.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from memoryd.engine.context import EngineContext
from memoryd.errors import Forbidden, InvalidInput, PathNotFound
from memoryd.graph.importers import project_scope
from memoryd.graph.jsonfile import project_graph_path, user_graph_path
from memoryd.models import check_scope

USER = "user"
_SCOPE_LINE = re.compile(r'"scope"\s*:\s*"([^"]{1,200})"')


@dataclass(frozen=True)
class Target:
    """One graph: its scope, and the project root when the caller gave one."""

    scope: str
    root: Path | None = None


def parse_project(project: str, confined_to: tuple[Path, ...] | None = None) -> Target:
    """``/abs/root`` (an existing directory), ``name`` or ``project:name``; with
    ``confined_to``, a root directory only under one of those (else Forbidden)."""
    text = project.strip()
    if text.startswith(("/", "~")):
        if confined_to is not None:
            _check_root_allowed(text, confined_to)
        root = _existing_dir(text)
        scope = declared_scope(project_graph_path(root)) or project_scope(root)
        if scope == USER:
            raise PathNotFound("project: the directory has no name to key a graph by")
        return Target(scope, root)
    name = text.removeprefix("project:")
    try:
        return Target(check_scope(f"project:{name}"))
    except ValueError:
        raise InvalidInput(
            "project must be an absolute directory or a name of letters, digits, "
            "'.', '_', '-' and '/'"
        ) from None


def _existing_dir(text: str) -> Path:
    """The directory ``text`` names, resolved; PathNotFound when there is none (a ``~user``
    that is nobody, a name too long for the file system, a file)."""
    try:
        root = Path(text).expanduser()
        if root.is_dir():
            return root.resolve()
    except (OSError, RuntimeError):
        pass
    raise PathNotFound("project: no such directory")


def declared_scope(path: Path) -> str | None:
    """The project scope an existing graph file declares (its head names it), if any."""
    try:
        with path.open("rb") as handle:
            head = handle.read(4096).decode("utf-8", "replace")
    except OSError:
        return None
    found = _SCOPE_LINE.search(head)
    return found[1] if found and check_scope_or_none(found[1]) else None


def check_scope_or_none(scope: str) -> str | None:
    """``scope`` if it is a valid project scope, else None."""
    try:
        return check_scope(scope) if scope.startswith("project:") else None
    except ValueError:
        return None


def _project(ctx: EngineContext, project: str) -> Target:
    """The project ``project`` names, for this caller (see the module docstring)."""
    roots = (tuple(Path(r).expanduser() for r in ctx.settings.kg_allowed_roots)
             if ctx.access.restricted else None)
    return _checked(ctx, parse_project(project, roots))


def _check_root_allowed(text: str, roots: tuple[Path, ...]) -> None:
    """Forbidden unless the directory ``text`` lies under one of ``roots``: checked on the
    path as written before anything on disk is looked at (so that a refusal tells nothing of
    what exists), and again with symlinks resolved."""
    message = ("a key bound to a scope or agent names a project by its name, or by a root "
               "directory under MEMORYD_KG_ALLOWED_ROOTS")
    try:
        written = Path(os.path.normpath(Path(text).expanduser()))
    except RuntimeError:  # ~user of nobody: a name is all it could be, and it is not one
        raise Forbidden(message) from None
    if not any(written.is_relative_to(os.path.normpath(r)) for r in roots):
        raise Forbidden(message)
    resolved = written.resolve()
    if not any(resolved.is_relative_to(r.resolve()) for r in roots):
        raise Forbidden(message)


def _checked(ctx: EngineContext, target: Target) -> Target:
    ctx.filters(scope=target.scope)  # Forbidden for a caller bound to another scope
    return target


def _require_all_domains(ctx: EngineContext) -> None:
    # Graph nodes are not classified into domains, so a key limited to domains could only
    # ever write nodes outside them: the graphs are closed to it.
    if ctx.access.domains is not None:
        raise Forbidden("the knowledge graphs are not available to a key limited to domains")


def read_targets(ctx: EngineContext, project: str | None, include_user: bool = True) -> list[Target]:
    """The graphs a read covers: the user graph (unless the caller is bound to a project)
    and the project's graph (the caller's bound project when none is named)."""
    _require_all_domains(ctx)
    bound = ctx.access.scope
    out = []
    if include_user and bound in (None, USER):
        out.append(Target(USER))
    if project is not None:
        out.append(_project(ctx, project))
    elif bound is not None and bound != USER:
        out.append(Target(bound))
    return out


def write_target(ctx: EngineContext, project: str | None,
                 graph: Literal["user", "project"] | None) -> Target:
    """The one graph a write changes: ``graph`` names it (default: the project's when a
    project is given or bound, else the user graph)."""
    _require_all_domains(ctx)
    bound = ctx.access.scope
    if graph == USER:
        return _checked(ctx, Target(USER))
    if project is not None:
        return _project(ctx, project)
    if bound is not None and bound != USER:
        return Target(bound)
    if graph == "project":
        raise InvalidInput("name the project (its root directory or its name)")
    return _checked(ctx, Target(USER))


def writable_target(ctx: EngineContext, project: str | None,
                    graph: Literal["user", "project"] | None) -> Target:
    """:func:`write_target`, for a call that changes the graph: Forbidden when the caller may
    not write into its scope (see Access.check_writes_to)."""
    target = write_target(ctx, project, graph)
    ctx.check_writes_to(target.scope)
    return target


def graph_file(ctx: EngineContext, target: Target) -> Path | None:
    """The file that mirrors the graph, if any (``kg_files`` off: none)."""
    if not ctx.settings.kg_files:
        return None
    if target.scope == USER:
        return user_graph_path(ctx.settings.home)
    if target.root is not None:
        return project_graph_path(target.root)
    for state in ctx.store.graph_files.graph_files(target.scope):
        path = Path(state.path)
        if path.parent.parent.is_dir():
            return path
    return None


def require_unbound_agent(ctx: EngineContext, what: str) -> None:
    """Forbidden for a caller bound to an agent: ``what`` changes the whole graph."""
    if ctx.access.agent_id is not None:
        raise Forbidden(f"{what} changes the whole graph: not available to a key bound to an "
                        "agent")
