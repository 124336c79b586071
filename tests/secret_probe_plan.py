"""What the secret probe sends (tests/test_secret_probe.py): a valid call of every operation
that takes text (``BASES``), and every place in an operation's input schema a string can go
(:func:`probes_of`), found from the schema itself.

Placeholders in a base: ``{memory}`` and ``{task}`` (made by the fixture), ``{waitfile}``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Iterator

from pydantic import BaseModel

from memoryd.operations import REGISTRY

KEY = object()  # a mapping's key (``metadata: {<secret>: ...}``)
_FREE = 100_000  # the room of a string without maxLength
_ROUTE_ROOM = 46  # a path parameter: no secret with '/' in it (a private key's base64 has)

MESSAGES = [{"role": "user", "content": "I like my tea without sugar."}]
FILTERS = {"agent_id": "bot", "session_id": "s1", "speaker": "user", "categories": ["c"],
           "tags": ["t"], "domains": ["home"], "scope": "user"}
MEMORY = {"content": "The glaze cracks above 1250 degrees", "summary": "glaze", "category": "c",
          "subcategory": "s", "tags": ["t"], "source": "notes", "session_id": "s1",
          "scope": "user", "metadata": {"k": "v"}}
INGEST = {**MEMORY, "items": [{"content": "Cones bend at 1240 degrees"}]}
GRAPH_FILE = ('{"format": "memoryd-knowledge-graph", "version": 1, "scope": "user", '
              '"nodes": [], "edges": []}')

BASES: dict[str, dict[str, Any]] = {
    "capture": {"session_key": "s1", "messages": MESSAGES, "agent_id": "bot", "scope": "user"},
    "flush": {"session_key": "s1", "messages": MESSAGES, "agent_id": "bot", "scope": "user"},
    "codebase": {"action": "remember_decision", "codebase": "kiln", "decision": "use cones",
                 "rationale": "r", "alternatives": ["x"], "files": ["a.py"], "name": "n",
                 "description": "d"},
    "tool_codebase": {"action": "remember_decision", "codebase": "kiln", "text": "use cones",
                      "name": "n", "rationale": "r", "alternatives": ["x"], "files": ["a.py"]},
    "promote": {"id": "{memory}", "reason": "it held"},
    "demote": {"id": "{memory}", "reason": "it did not hold"},
    "tool_feedback": {"id": "{memory}", "verdict": "helpful", "reason": "it held"},
    "domain_accept": {"id": "p1"},
    "domain_reject": {"id": "p1"},
    "domain_rename": {"id": "home", "name": "house"},
    "domain_show": {"id": "home"},
    "domain_split": {"id": "home"},
    "domains_merge": {"ids": ["home", "work"], "into": "life"},
    "tool_domains": {"action": "rename", "id": "home", "name": "house", "ids": ["a", "b"]},
    "explore": {"id": "{memory}"},
    "history": {"id": "{memory}"},
    "memory_get": {"id": "{memory}"},
    "tool_memory": {"id": "{memory}"},
    "memory_delete": {"id": "no-such-memory"},
    "tool_delete": {"id": "no-such-memory"},
    "memory_get_path": {"path": "memoryd/no-such-memory.md"},
    "memory_forget": {"memoryId": "no-such-memory", "query": "no such memory"},
    "intention": {"action": "set", "description": "rotate the keys",
                  "trigger": {"type": "context", "codebase": "kiln", "file_pattern": "*.py",
                              "topic": "keys", "event": "deploy"},
                  "context": {"codebase": "kiln", "files": ["a.py"], "topic": "t", "text": "x",
                              "event": "e"}},
    "tool_intention": {"action": "set", "description": "rotate the keys", "codebase": "kiln",
                       "file_pattern": "*.py", "files": ["a.py"], "topic": "keys",
                       "event": "deploy"},
    "journal": {"day": "2024-05-17", "tz": "UTC"},
    "keys_create": {"label": "probe", "scopes": ["read"], "memory_scope": "user",
                    "agent_id": "bot", "domains": ["home"]},
    "keys_revoke": {"id": "no-such-key"},
    "kg_archive": {"project": "kiln", "dry_run": True},
    "kg_export": {"project": "kiln"},
    "kg_import": {"graph": "user", "text": GRAPH_FILE},
    "kg_link": {"graph": "user", "source": "kiln", "target": "glaze"},
    "kg_ping": {"project": "kiln"},
    "kg_read": {"project": "kiln", "files": ["a.py"]},
    "kg_recall": {"id": "kiln", "graph": "user"},
    "kg_search": {"query": "kiln", "project": "kiln"},
    "kg_sync": {"project": "kiln"},
    "kg_write": {"graph": "user",
                 "nodes": [{"id": "kiln", "name": "Kiln", "type": "fact", "body": "hot",
                            "touches": ["src/kiln.py"], "tags": ["t"]},
                           {"id": "glaze", "name": "Glaze", "type": "fact", "body": "cracks"}],
                 "edges": [{"source": "kiln", "target": "glaze"}],
                 "remove_edges": [{"source": "glaze", "target": "kiln"}]},
    "memory": {"action": "edit", "id": "{memory}", "content": "The kiln fires at 1240 degrees",
               "summary": "s", "category": "c", "tags": ["t"], "metadata": {"k": "v"},
               "reason": "r"},
    "tool_edit": {"id": "{memory}", "content": "The kiln fires at 1240 degrees", "tags": ["t"]},
    "memory_create": MEMORY,
    "memory_update": {"id": "{memory}", **{k: v for k, v in MEMORY.items()
                                           if k not in ("session_id", "scope")}},
    "memory_list": FILTERS,
    "memory_recall": {"query": "kiln", "category": "c"},
    "memory_search": {"query": "kiln"},
    "memory_store": {"summary": "glaze", "detail": "The glaze cracks", "category": "c",
                     "tags": ["t"]},
    "recall": {"prompt": "kiln", "query": "kiln", "agent_id": "bot", "session_key": "s1",
               "scope": "user"},
    "search": {"query": "kiln", "session_key": "s1", **FILTERS},
    "vestige_search": {"query": "kiln", "session_key": "s1", "context_topics": ["t"],
                       **FILTERS},
    "tool_search": {"query": "kiln", "tags": ["t"], "scope": "user", "domains": ["home"]},
    "session_warm": {"session_key": "s1", "agent_id": "bot"},
    "smart_ingest": INGEST,
    "vestige_ingest": INGEST,
    "tool_ingest": {"content": "The glaze cracks", "tags": ["t"], "scope": "user",
                    "items": [{"content": "Cones bend at 1240 degrees"}]},
    "smart_wait": {"target": "file:{waitfile}", "criteria": "DONE", "timeout_s": 60,
                   "task_id": "{task}", "wake": {"to": "webhook"}},
    "task_register": {"name": "fire", "plan": ["load"], "scope": "user",
                      "metadata": {"k": "v"}},
    "task_update": {"id": "{task}", "message": "loaded", "add_steps": ["fire"]},
    "task_complete": {"id": "{task}", "outcome": "fired", "learned": ["cones help"]},
    "task_get": {"id": "{task}"},
    "wait_cancel": {"id": "w_none"},
    "wait_list": {"task_id": "{task}"},
    "wait_status": {"id": "w_none"},
    # The dashboard's views.
    "kg_graph": {"project": "kiln", "graph": "user"},
    "kg_node_archive": {"id": "kiln", "project": "kiln"},
    "memory_graph": FILTERS,
    "memory_link": {"id": "{memory}", "target": "no-such-memory"},
    "memory_retention": {"id": "{memory}"},
    "timeline": {"tz": "UTC", "day": "2024-05-17"},
}
# Fields that exclude each other: a base holds them all; a probe keeps the one it probes, or
# else the first one.
EXCLUSIVE = [("content", "items"), ("memoryId", "query"), ("prompt", "query"),
             ("detail", "text")]
# Fields whose text the response shows back to the caller who sent it (never stored).
ECHOED = ("query", "prompt", "context_topics")


@dataclass(frozen=True)
class Probe:
    """One place a secret goes: an operation, a path in its input, the room there, and
    whether the schema alone refuses it (``constrained``) or the field is left unscreened."""

    op: str
    path: tuple[Any, ...]
    room: int
    constrained: bool
    unscreened: bool

    @property
    def name(self) -> str:
        return self.op + ":" + ".".join("<key>" if p is KEY else str(p) for p in self.path)

    @property
    def echoes(self) -> bool:
        return self.unscreened and self.path[0] in ECHOED

    def apply(self, base: dict[str, Any], secret: str) -> dict[str, Any]:
        """``base`` with the secret at this probe's place."""
        data = copy.deepcopy(base)
        for group in EXCLUSIVE:
            present = [name for name in group if name in data]
            keep = self.path[0] if self.path[0] in group else (present or [None])[0]
            for name in present:
                if name != keep:
                    del data[name]
        return _put(data, self.path, secret)


def _put(node: Any, path: tuple[Any, ...], secret: str) -> Any:
    if not path:
        return secret
    head, rest = path[0], path[1:]
    if head is KEY:
        return {secret: "v"}
    if head == 0:
        items = list(node) if isinstance(node, list) else []
        return [_put(items[0] if items else None, rest, secret)] + items[1:]
    data = dict(node) if isinstance(node, dict) else {}
    data[head] = _put(data.get(head), rest, secret)
    return data


def _strings(schema: dict[str, Any], defs: dict[str, Any], path: tuple[Any, ...],
             depth: int = 0) -> Iterator[tuple[tuple[Any, ...], dict[str, Any]]]:
    """Every (path, string schema) under ``schema``."""
    if not isinstance(schema, dict):  # ``true``: any JSON value
        schema = {}
    if "$ref" in schema:
        schema = defs[schema["$ref"].rsplit("/", 1)[-1]]
    if depth > 6 or "enum" in schema or "const" in schema:
        return
    for branch in schema.get("anyOf", []) + schema.get("oneOf", []):
        yield from _strings(branch, defs, path, depth + 1)
    kind = schema.get("type")
    if kind == "string" and schema.get("format") != "date-time":
        yield path, schema
    elif kind == "array":
        yield from _strings(schema.get("items", {}), defs, path + (0,), depth + 1)
    elif kind == "object" or "properties" in schema:
        for name, sub in schema.get("properties", {}).items():
            yield from _strings(sub, defs, path + (name,), depth + 1)
        extra = schema.get("additionalProperties")
        if extra is not None and extra is not False:
            yield path + (KEY,), {"type": "string"}
            yield from _strings(extra if isinstance(extra, dict) and extra else
                                {"type": "string"}, defs, path + ("k",), depth + 1)
    elif kind is None and not any(k in schema for k in ("anyOf", "oneOf", "$ref")):
        yield path, {"type": "string"}  # any JSON value


def probes_of(model: type[BaseModel], op: str = "") -> list[Probe]:
    """The probes of an operation's input (deduplicated by path)."""
    schema = model.model_json_schema(by_alias=True)
    unscreened = REGISTRY[op].unscreened if op in REGISTRY else ()
    route_params = {"id"}
    found: dict[tuple[Any, ...], Probe] = {}
    for path, spec in _strings(schema, schema.get("$defs", {}), ()):
        room = spec.get("maxLength", _FREE)
        if path and path[0] in route_params and len(path) == 1:
            room = min(room, _ROUTE_ROOM)
        constrained = any(k in spec for k in ("pattern", "format")) or room < 20
        found.setdefault(path, Probe(op, path, room, constrained, path[0] in unscreened))
    return list(found.values())
