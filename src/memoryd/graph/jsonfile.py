"""The reviewable face of a graph: ``<project>/.knowledge/graph.json`` and the user graph
``$MEMORYD_HOME/knowledge/user.json``.

Layout, chosen so that ``git diff`` shows one changed node as one changed block::

    {
      "format": "memoryd-knowledge-graph",
      "version": 1,
      "scope": "project:demo",
      "nodes": [
        {
          "id": "wal-busy",
          "name": "SQLite busy timeout",
          ...
        }
      ],
      "edges": [
        {"source": "wal-busy", "type": "caused_by", "target": "lock-storm", "weight": 0.5}
      ]
    }

Nodes are sorted by id, edges by (source, type, target); keys keep one fixed order;
empty and unset fields are left out. Use counts and last-used times are runtime state,
not knowledge: they stay in the store unless ``include_usage=True`` (otherwise every
session would become a diff and a merge conflict).

Writes take a lock (``graph.json.lock`` beside the file, via ``filelock``), write a
temporary file in the same directory, fsync it and rename it over the old one, so a
reader sees the old file or the new one, never half of one. :func:`update_graph_file`
does read-change-write under one lock, so concurrent writers lose nothing. A file that
is not valid JSON, or not a memoryd graph, is refused with its line and column;
:mod:`memoryd.graph.fileread` reads a file around a bad node (the merge with the store uses
it), this module's :func:`loads_graph` refuses the file at its first problem.

    >>> write_graph_file(project_graph_path(root), graph)
    >>> read_graph_file(project_graph_path(root)) == graph
    True
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from datetime import datetime
from typing import Any

from filelock import FileLock, Timeout

from memoryd.graph.fileread import FORMAT, VERSION, GraphFileError, ReadGraph, read_graph_text
from memoryd.models.kg import Graph, GraphEdge, GraphNode

__all__ = ["FORMAT", "VERSION", "GraphFileBusy", "GraphFileError", "ReadGraph", "dumps_graph",
           "edge_line", "graph_file_lock", "loads_graph", "node_block", "project_graph_path",
           "read_file_text", "read_graph_file", "read_graph_text", "update_graph_file",
           "user_graph_path", "write_graph_file", "write_graph_text"]

NODE_FIELDS = (
    "id",
    "name",
    "type",
    "body",
    "touches",
    "tags",
    "created",
    "updated",
    "valid_from",
    "valid_until",
    "archived",
    "use_count",
    "last_used",
)
USAGE_FIELDS = ("use_count", "last_used")
EDGE_FIELDS = ("source", "type", "target", "weight", "created", "valid_until")
_GITIGNORE = "# written by memoryd: lock and temporary files of graph.json\n*.lock\n*.tmp\n"


class GraphFileBusy(GraphFileError):
    """Another process held the graph file's lock for longer than the timeout."""


def project_graph_path(project_root: Path | str) -> Path:
    """Where a project's graph lives: ``<root>/.knowledge/graph.json``."""
    return Path(project_root) / ".knowledge" / "graph.json"


def user_graph_path(home: Path | str) -> Path:
    """Where the user graph lives under memoryd's home: ``<home>/knowledge/user.json``."""
    return Path(home) / "knowledge" / "user.json"


def _node_dict(node: GraphNode, include_usage: bool) -> dict[str, Any]:
    data = node.model_dump(mode="json")
    out: dict[str, Any] = {}
    for name in NODE_FIELDS:
        value = data[name]
        if value in (None, [], "", False) or (name == "use_count" and value == 0):
            continue
        if name in USAGE_FIELDS and not include_usage:
            continue
        out[name] = value
    return out


def _edge_dict(edge: GraphEdge) -> dict[str, Any]:
    data = edge.model_dump(mode="json")
    return {name: data[name] for name in EDGE_FIELDS if data[name] is not None}


def node_block(node: GraphNode, *, include_usage: bool = False) -> str:
    """A node's indented block in the file (without the separating comma)."""
    block = json.dumps(_node_dict(node, include_usage), indent=2, ensure_ascii=False)
    return "\n".join("    " + line for line in block.splitlines())


def edge_line(edge: GraphEdge) -> str:
    """An edge's line in the file (without the separating comma)."""
    return "    " + json.dumps(_edge_dict(edge), ensure_ascii=False)


def dumps_graph(
    graph: Graph,
    *,
    include_usage: bool = False,
    node_text: Callable[[GraphNode], str] | None = None,
    edge_text: Callable[[GraphEdge], str] | None = None,
    held: ReadGraph | None = None,
) -> str:
    """The file text of ``graph``: stable order, one indented block per node, one line per edge.

    ``node_text`` / ``edge_text`` replace :func:`node_block` / :func:`edge_line` (a caller
    writing one large graph again and again may remember the blocks of unchanged nodes).
    ``held``: the items of the file that could not be read are written back after the others,
    as they were (a held node's id is not written from ``graph`` as well).
    """
    head = json.dumps(
        {"format": FORMAT, "version": VERSION, "scope": graph.scope}, indent=2, ensure_ascii=False
    )[:-2]
    block = node_text or (lambda n: node_block(n, include_usage=include_usage))
    skip = held.held_ids if held is not None else set()
    nodes = [block(node) for node in sorted(graph.nodes, key=lambda n: n.id)
             if node.id not in skip]
    edges = [(edge_text or edge_line)(e) for e in sorted(graph.edges, key=lambda e: e.key)]
    if held is not None:
        nodes += ["\n".join("    " + line for line in json.dumps(
            item, indent=2, ensure_ascii=False).splitlines()) for item in held.held_nodes]
        written = {e.key for e in graph.edges}
        edges += ["    " + json.dumps(item, ensure_ascii=False) for item in held.held_edges
                  if _edge_key(item) not in written]
    parts = [head + ",\n"]
    parts.append('  "nodes": [\n' + ",\n".join(nodes) + ("\n" if nodes else "") + "  ],\n")
    parts.append('  "edges": [\n' + ",\n".join(edges) + ("\n" if edges else "") + "  ]\n}\n")
    return "".join(parts)


def _edge_key(item: Any) -> tuple[str, str, str] | None:
    """The key of a held edge item that is a valid edge (it may stand in the graph now)."""
    try:
        return GraphEdge.model_validate(item).key
    except ValueError:
        return None


def loads_graph(text: str, *, source: str = "<graph>", scope: str | None = None,
                now: datetime | None = None) -> Graph:
    """Parse file text into a :class:`Graph`; ``GraphFileError`` with line and column for the
    first problem (see :func:`memoryd.graph.fileread.read_graph_text`, which reads around
    a bad node). ``scope``, when given, must match the file's scope (a project's file is
    never read as another project's graph); ``now`` fills in a missing ``created``."""
    read = read_graph_text(text, source=source, scope=scope, now=now)
    if read.problems:
        raise read.problems[0]
    return read.graph


def read_file_text(path: Path | str) -> str | None:
    """The text of a graph file, or ``None`` if there is no such file (reads need no lock:
    writes replace the file atomically); GraphFileError at the first byte that is not UTF-8."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise GraphFileError(str(path), "not UTF-8 text", line, column) from exc


def read_graph_file(path: Path | str, *, scope: str | None = None) -> Graph | None:
    """The graph in ``path`` (strictly: the first problem is raised), or ``None`` if there is
    no such file."""
    text = read_file_text(path)
    return None if text is None else loads_graph(text, source=str(path), scope=scope)


def _lock(path: Path, timeout: float) -> FileLock:
    return FileLock(str(path) + ".lock", timeout=timeout)


def _ensure_dir(path: Path) -> None:
    if not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
    ignore = path.parent / ".gitignore"
    if path.parent.name == ".knowledge" and not ignore.exists():
        ignore.write_text(_GITIGNORE)


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o777)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def write_graph_file(
    path: Path | str,
    graph: Graph,
    *,
    include_usage: bool = False,
    timeout: float = 10.0,
    locked: bool = False,
) -> None:
    """Write ``graph`` to ``path`` atomically, under the file's lock (``locked=True``: the
    caller already holds it, see :func:`graph_file_lock`)."""
    write_graph_text(path, dumps_graph(graph, include_usage=include_usage), timeout=timeout,
                     locked=locked)


def write_graph_text(path: Path | str, text: str, *, timeout: float = 10.0,
                     locked: bool = False) -> None:
    """Write file text made by :func:`dumps_graph` atomically, under the file's lock
    (``locked=True``: the caller already holds it)."""
    path = Path(path)
    _ensure_dir(path)
    if locked:
        _atomic_write(path, text)
        return
    with graph_file_lock(path, timeout=timeout):
        _atomic_write(path, text)


@contextmanager
def graph_file_lock(path: Path | str, *, timeout: float = 10.0) -> Iterator[None]:
    """Hold the lock of the graph file at ``path`` (``graph.json.lock`` beside it) for a
    read-change-write that spans more than the file, e.g. a merge with a store.

    ``GraphFileBusy`` when another process holds it for longer than ``timeout`` seconds.
    The lock is not re-entrant: inside, write with ``write_graph_file(..., locked=True)``.
    """
    path = Path(path)
    _ensure_dir(path)
    lock = _lock(path, timeout)
    try:
        lock.acquire()
    except Timeout as exc:
        raise GraphFileBusy(str(path), f"lock held by another process for {timeout} s") from exc
    try:
        yield
    finally:
        lock.release()


def update_graph_file(
    path: Path | str,
    change: Callable[[Graph], Graph],
    *,
    scope: str,
    include_usage: bool = False,
    timeout: float = 10.0,
) -> Graph:
    """Read the graph at ``path`` (empty if missing), apply ``change``, write the result,
    all under one lock, and return it. An unreadable file raises before anything is
    written, so it stays as it was."""
    path = Path(path)
    _ensure_dir(path)
    try:
        with _lock(path, timeout):
            current = read_graph_file(path, scope=scope) or Graph(scope=scope)
            updated = change(current)
            if updated.scope != scope:
                raise ValueError(f"the change turned graph {scope!r} into {updated.scope!r}")
            _atomic_write(path, dumps_graph(updated, include_usage=include_usage))
            return updated
    except Timeout as exc:
        raise GraphFileBusy(str(path), f"lock held by another process for {timeout} s") from exc
