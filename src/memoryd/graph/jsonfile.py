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
is not valid JSON, or not a memoryd graph, is refused with its line and column.

    >>> write_graph_file(project_graph_path(root), graph)
    >>> read_graph_file(project_graph_path(root)) == graph
    True
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout
from pydantic import ValidationError

from memoryd.errors import InvalidInput
from memoryd.graph.model import Graph, GraphEdge, GraphNode

FORMAT = "memoryd-knowledge-graph"
VERSION = 1
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


class GraphFileError(InvalidInput):
    """A graph file that cannot be read: not JSON, not a memoryd graph, or invalid data.

    ``line`` and ``column`` (1-based) point at the problem when it can be located.
    """

    def __init__(
        self, path: str, message: str, line: int | None = None, column: int | None = None
    ) -> None:
        where = (
            f":{line}:{column}"
            if line is not None and column is not None
            else (f":{line}" if line is not None else "")
        )
        super().__init__(f"{path}{where}: {message}")
        self.path, self.line, self.column = path, line, column


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
) -> str:
    """The file text of ``graph``: stable order, one indented block per node, one line per edge.

    ``node_text`` / ``edge_text`` replace :func:`node_block` / :func:`edge_line` (a caller
    writing one large graph again and again may remember the blocks of unchanged nodes).
    """
    head = json.dumps(
        {"format": FORMAT, "version": VERSION, "scope": graph.scope}, indent=2, ensure_ascii=False
    )[:-2]
    block = node_text or (lambda n: node_block(n, include_usage=include_usage))
    nodes = [block(node) for node in sorted(graph.nodes, key=lambda n: n.id)]
    edges = [(edge_text or edge_line)(e) for e in sorted(graph.edges, key=lambda e: e.key)]
    parts = [head + ",\n"]
    parts.append('  "nodes": [\n' + ",\n".join(nodes) + ("\n" if nodes else "") + "  ],\n")
    parts.append('  "edges": [\n' + ",\n".join(edges) + ("\n" if edges else "") + "  ]\n}\n")
    return "".join(parts)


def _line_of(text: str, needle: str) -> int | None:
    index = text.find(needle)
    return text.count("\n", 0, index) + 1 if index >= 0 else None


def _validation_message(
    exc: ValidationError, data: dict[str, Any], text: str
) -> tuple[str, int | None]:
    error = exc.errors()[0]
    loc = list(error["loc"])
    where, line = ".".join(str(p) for p in loc), None
    if len(loc) >= 2 and loc[0] in ("nodes", "edges") and isinstance(loc[1], int):
        items = data.get(loc[0]) or []
        item = items[loc[1]] if loc[1] < len(items) else None
        if isinstance(item, dict) and loc[0] == "nodes" and isinstance(item.get("id"), str):
            where = f"node {item['id']!r}" + (
                "." + ".".join(str(p) for p in loc[2:]) if loc[2:] else ""
            )
            line = _line_of(text, json.dumps(item["id"], ensure_ascii=False))
        elif isinstance(item, dict) and loc[0] == "edges":
            where = f"edge {loc[1] + 1} ({item.get('source')} -> {item.get('target')})"
            line = _line_of(text, json.dumps(item.get("source"), ensure_ascii=False))
    message = re.sub(r"^Value error, ", "", error["msg"])
    return f"{where}: {message}", line


def loads_graph(text: str, *, source: str = "<graph>", scope: str | None = None) -> Graph:
    """Parse file text into a :class:`Graph`; ``GraphFileError`` with line and column if not.

    ``scope``, when given, must match the file's scope (a project's file is never read
    as another project's graph).
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise GraphFileError(source, f"not valid JSON: {exc.msg}", exc.lineno, exc.colno) from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise GraphFileError(source, f'not a memoryd graph file (no "format": "{FORMAT}")', 1, 1)
    if data.get("version") != VERSION:
        raise GraphFileError(
            source,
            f"graph file version {data.get('version')!r} is not supported (expected {VERSION})",
            _line_of(text, '"version"'),
        )
    if scope is not None and data.get("scope") != scope:
        raise GraphFileError(
            source,
            f"the file holds graph {data.get('scope')!r}, not {scope!r}",
            _line_of(text, '"scope"'),
        )
    body = {k: v for k, v in data.items() if k not in ("format", "version")}
    try:
        return Graph.model_validate(body)
    except ValidationError as exc:
        message, line = _validation_message(exc, data, text)
        raise GraphFileError(source, message, line) from exc


def read_graph_file(path: Path | str, *, scope: str | None = None) -> Graph | None:
    """The graph in ``path``, or ``None`` if there is no such file (reads need no lock:
    writes replace the file atomically)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise GraphFileError(str(path), "not UTF-8 text", line, column) from exc
    return loads_graph(text, source=str(path), scope=scope)


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
