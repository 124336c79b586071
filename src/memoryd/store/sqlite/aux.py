"""SQLite tables beside the memories: edges, graph files, intentions, API keys, session marks,
reports.

A mixin of SQLiteStore, split out so that each file keeps to one concept.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import AbstractContextManager
from datetime import datetime, timezone
from typing import Any

from memoryd import ledger
from memoryd.models import ApiKey, Edge, GraphFileState, Intention, SearchFilters
from memoryd.store.sqlite.codec import dt, ts

_INTENTION_COLS = ("id", "description", "trigger", "priority", "status", "deadline", "due_at",
                   "snoozed_until", "created_at", "updated_at", "agent_id", "scope", "metadata")
_KEY_COLS = ("id", "label", "prefix", "key_hash", "scopes", "memory_scope", "agent_id",
             "domains", "created_at", "last_used", "revoked_at")
_EDGE_COLS = ("source_id", "target_id", "edge_type", "weight", "created_at", "valid_from",
              "valid_until", "metadata")
_GRAPH_FILE_COLS = ("path", "scope", "base", "signature", "seq", "updated_at")


class SQLiteAuxTables:
    """Edges, intentions, keys, session access marks, watermarks and reports."""

    _conn: sqlite3.Connection

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:  # provided by SQLiteStore
        raise NotImplementedError

    def _where(self, filters: SearchFilters, now: datetime) -> tuple[str, list[Any]]:
        raise NotImplementedError  # provided by SQLiteStore

    @staticmethod
    def _ledger_append(conn: sqlite3.Connection, pending: list[ledger.PendingEntry]) -> None:
        raise NotImplementedError  # provided by SQLiteStore

    # --- knowledge-graph files -------------------------------------------
    @staticmethod
    def _graph_file(row: tuple) -> GraphFileState:
        return GraphFileState(path=row[0], scope=row[1], base=json.loads(row[2]),
                              signature=row[3], seq=row[4], updated_at=dt(row[5]))

    def graph_file(self, path: str) -> GraphFileState | None:
        row = self._conn.execute(
            f"SELECT {', '.join(_GRAPH_FILE_COLS)} FROM graph_files WHERE path = ?", (path,)
        ).fetchone()
        return self._graph_file(row) if row else None

    def graph_files(self, scope: str) -> list[GraphFileState]:
        rows = self._conn.execute(
            f"SELECT {', '.join(_GRAPH_FILE_COLS)} FROM graph_files WHERE scope = ? "
            "ORDER BY updated_at DESC, path", (scope,)
        ).fetchall()
        return [self._graph_file(r) for r in rows]

    def save_graph_file(self, state: GraphFileState) -> None:
        with self._write() as conn:
            conn.execute(
                f"INSERT INTO graph_files ({', '.join(_GRAPH_FILE_COLS)}) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(path) DO UPDATE SET "
                "scope = excluded.scope, base = excluded.base, signature = excluded.signature, "
                "seq = excluded.seq, updated_at = excluded.updated_at",
                (state.path, state.scope, json.dumps(state.base, sort_keys=True),
                 state.signature, state.seq, ts(state.updated_at)),
            )

    # --- intentions ------------------------------------------------------
    def save_intention(self, intention: Intention) -> None:
        i = intention
        with self._write() as conn:
            conn.execute(
                f"INSERT OR REPLACE INTO intentions ({', '.join(_INTENTION_COLS)}) "
                f"VALUES ({', '.join('?' * len(_INTENTION_COLS))})",
                (i.id, i.description, i.trigger.model_dump_json(), i.priority, i.status,
                 ts(i.deadline), ts(i.due_at), ts(i.snoozed_until), ts(i.created_at),
                 ts(i.updated_at), i.agent_id, i.scope, json.dumps(i.metadata)),
            )

    @staticmethod
    def _intention(row: tuple) -> Intention:
        data = dict(zip(_INTENTION_COLS, row))
        data["trigger"] = json.loads(data["trigger"])
        data["metadata"] = json.loads(data["metadata"])
        for f in ("deadline", "due_at", "snoozed_until", "created_at", "updated_at"):
            data[f] = dt(data[f])
        return Intention.model_validate(data)

    def get_intention(self, intention_id: str) -> Intention | None:
        row = self._conn.execute(
            f"SELECT {', '.join(_INTENTION_COLS)} FROM intentions WHERE id = ?", (intention_id,)
        ).fetchone()
        return self._intention(row) if row else None

    def list_intentions(self, statuses: list[str] | None = None) -> list[Intention]:
        sql = f"SELECT {', '.join(_INTENTION_COLS)} FROM intentions"
        params: list[Any] = []
        if statuses:
            sql += f" WHERE status IN ({', '.join('?' * len(statuses))})"
            params = list(statuses)
        sql += " ORDER BY COALESCE(due_at, deadline, created_at), created_at"
        return [self._intention(r) for r in self._conn.execute(sql, params)]

    # --- API keys --------------------------------------------------------
    def save_key(self, key: ApiKey) -> None:
        with self._write() as conn:
            before = conn.execute("SELECT revoked_at FROM api_keys WHERE id = ?", (key.id,)).fetchone()
            self._ledger_append(conn, [ledger.key_change(
                key, existed=before is not None, was_revoked=bool(before and before[0] is not None))])
            conn.execute(
                f"INSERT OR REPLACE INTO api_keys ({', '.join(_KEY_COLS)}) "
                f"VALUES ({', '.join('?' * len(_KEY_COLS))})",
                (key.id, key.label, key.prefix, key.key_hash, json.dumps(key.scopes),
                 key.memory_scope, key.agent_id,
                 None if key.domains is None else json.dumps(key.domains),
                 ts(key.created_at), ts(key.last_used), ts(key.revoked_at)),
            )

    @staticmethod
    def _key(row: tuple) -> ApiKey:
        data = dict(zip(_KEY_COLS, row))
        data["scopes"] = json.loads(data["scopes"])
        data["domains"] = None if data["domains"] is None else json.loads(data["domains"])
        for f in ("created_at", "last_used", "revoked_at"):
            data[f] = dt(data[f])
        return ApiKey.model_validate(data)

    def key_by_hash(self, key_hash: str) -> ApiKey | None:
        row = self._conn.execute(
            f"SELECT {', '.join(_KEY_COLS)} FROM api_keys WHERE key_hash = ?", (key_hash,)
        ).fetchone()
        return self._key(row) if row else None

    def list_keys(self) -> list[ApiKey]:
        rows = self._conn.execute(
            f"SELECT {', '.join(_KEY_COLS)} FROM api_keys ORDER BY created_at"
        ).fetchall()
        return [self._key(r) for r in rows]

    def touch_key(self, key_id: str, at: datetime) -> None:
        with self._write() as conn:
            conn.execute("UPDATE api_keys SET last_used = ? WHERE id = ?", (at.timestamp(), key_id))

    # --- sessions, watermarks, reports ----------------------------------
    def get_watermark(self, key: str) -> int:
        row = self._conn.execute("SELECT value FROM watermarks WHERE key = ?", (key,)).fetchone()
        return int(row[0]) if row else 0

    def set_watermark(self, key: str, value: int) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO watermarks (key, value, updated_at) VALUES (?, ?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value, "
                "updated_at = excluded.updated_at",
                (key, value, datetime.now(timezone.utc).timestamp()),
            )

    def save_report(self, kind: str, body: dict[str, Any], at: datetime) -> int:
        with self._write() as conn:
            cur = conn.execute(
                "INSERT INTO reports (kind, at, body) VALUES (?, ?, ?)",
                (kind, at.timestamp(), json.dumps(body, default=str)),
            )
            return int(cur.lastrowid)

    def list_reports(self, kind: str, limit: int = 20) -> list[dict[str, Any]]:
        rows = self._conn.execute(
            "SELECT id, at, body FROM reports WHERE kind = ? ORDER BY id DESC LIMIT ?",
            (kind, limit),
        ).fetchall()
        return [{"id": r[0], "at": dt(r[1]), **json.loads(r[2])} for r in rows]
