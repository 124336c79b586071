"""PostgreSQL tables beside the memories: edges, graph files, intentions, API keys, session
marks, watermarks and reports, plus cross-server maintenance locks.

A mixin of PostgresStore, split out so that each file keeps to one concept.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import datetime, timezone
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from memoryd import ledger
from memoryd.errors import StoreError
from memoryd.models import ApiKey, Edge, GraphFileState, Intention, SearchFilters
from memoryd.store.postgres.codec import dumps, utc
from memoryd.store.rows import TABLES

_EDGE_COLS = TABLES["edges"]
_INTENTION_COLS = TABLES["intentions"]
_KEY_COLS = TABLES["api_keys"]
_GRAPH_FILE_COLS = TABLES["graph_files"]



class PostgresAuxTables:
    """Edges, intentions, keys, session access marks, watermarks, reports, maintenance locks."""

    def _conn(self) -> AbstractContextManager[psycopg.Connection[Any]]:  # provided by PostgresStore
        raise NotImplementedError

    def _write(self, *, lock: bool = True) -> AbstractContextManager[psycopg.Cursor[Any]]:
        raise NotImplementedError

    def _where(self, filters: SearchFilters, now: datetime) -> tuple[str, list[Any]]:
        raise NotImplementedError  # provided by PostgresStore

    def _ledger_append(self, cur: psycopg.Cursor[Any], pending: list[ledger.PendingEntry]) -> None:
        raise NotImplementedError  # provided by PostgresStore

    # --- knowledge-graph files -------------------------------------------
    @staticmethod
    def _graph_file(row: tuple[Any, ...]) -> GraphFileState:
        return GraphFileState(path=row[0], scope=row[1], base=row[2], signature=row[3],
                              seq=row[4], updated_at=utc(row[5]))

    def graph_file(self, path: str) -> GraphFileState | None:
        with self._conn() as conn:
            row = conn.execute(
                f"SELECT {', '.join(_GRAPH_FILE_COLS)} FROM graph_files WHERE path = %s", (path,)
            ).fetchone()
        return self._graph_file(row) if row else None

    def graph_files(self, scope: str) -> list[GraphFileState]:
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT {', '.join(_GRAPH_FILE_COLS)} FROM graph_files WHERE scope = %s "
                "ORDER BY updated_at DESC, path", (scope,)
            ).fetchall()
        return [self._graph_file(r) for r in rows]

    def save_graph_file(self, state: GraphFileState) -> None:
        with self._write(lock=False) as cur:
            cur.execute(
                f"INSERT INTO graph_files ({', '.join(_GRAPH_FILE_COLS)}) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (path) DO UPDATE SET "
                "scope = excluded.scope, base = excluded.base, signature = excluded.signature, "
                "seq = excluded.seq, updated_at = excluded.updated_at",
                (state.path, state.scope, Jsonb(state.base, dumps=dumps), state.signature,
                 state.seq, state.updated_at),
            )

    # --- intentions ------------------------------------------------------
    def save_intention(self, intention: Intention) -> None:
        i = intention
        cols = ", ".join(_INTENTION_COLS)
        updates = ", ".join(f"{c} = excluded.{c}" for c in _INTENTION_COLS[1:])
        with self._write(lock=False) as cur:
            cur.execute(
                f"INSERT INTO intentions ({cols}) VALUES ({', '.join(['%s'] * len(_INTENTION_COLS))}) "
                f"ON CONFLICT (id) DO UPDATE SET {updates}",
                (i.id, i.description, Jsonb(i.trigger.model_dump(mode="json")), i.priority,
                 i.status, i.deadline, i.due_at, i.snoozed_until, i.created_at, i.updated_at,
                 i.agent_id, i.scope, Jsonb(i.metadata, dumps=dumps)),
            )

    @staticmethod
    def _intention(row: tuple[Any, ...]) -> Intention:
        data = dict(zip(_INTENTION_COLS, row))
        for f in ("deadline", "due_at", "snoozed_until", "created_at", "updated_at"):
            data[f] = utc(data[f])
        return Intention.model_validate(data)

    def get_intention(self, intention_id: str) -> Intention | None:
        with self._conn() as conn:
            row = conn.execute(
                f"SELECT {', '.join(_INTENTION_COLS)} FROM intentions WHERE id = %s", (intention_id,)
            ).fetchone()
        return self._intention(row) if row else None

    def list_intentions(self, statuses: list[str] | None = None) -> list[Intention]:
        statement = f"SELECT {', '.join(_INTENTION_COLS)} FROM intentions"
        params: list[Any] = []
        if statuses:
            statement += " WHERE status = ANY(%s::text[])"
            params = [list(statuses)]
        statement += " ORDER BY COALESCE(due_at, deadline, created_at), created_at, pos"
        with self._conn() as conn:
            rows = conn.execute(statement, params).fetchall()
        return [self._intention(r) for r in rows]

    # --- API keys --------------------------------------------------------
    def save_key(self, key: ApiKey) -> None:
        cols = ", ".join(_KEY_COLS)
        updates = ", ".join(f"{c} = excluded.{c}" for c in _KEY_COLS[1:])
        with self._write() as cur:
            before = cur.execute("SELECT revoked_at FROM api_keys WHERE id = %s", (key.id,)).fetchone()
            self._ledger_append(cur, [ledger.key_change(
                key, existed=before is not None, was_revoked=bool(before and before[0] is not None))])
            cur.execute(
                f"INSERT INTO api_keys ({cols}) VALUES ({', '.join(['%s'] * len(_KEY_COLS))}) "
                f"ON CONFLICT (id) DO UPDATE SET {updates}",
                (key.id, key.label, key.prefix, key.key_hash, Jsonb(list(key.scopes)),
                 key.memory_scope, key.agent_id,
                 None if key.domains is None else Jsonb(list(key.domains)),
                 key.created_at, key.last_used, key.revoked_at),
            )

    @staticmethod
    def _key(row: tuple[Any, ...]) -> ApiKey:
        data = dict(zip(_KEY_COLS, row))
        for f in ("created_at", "last_used", "revoked_at"):
            data[f] = utc(data[f])
        return ApiKey.model_validate(data)

    def key_by_hash(self, key_hash: str) -> ApiKey | None:
        with self._conn() as conn:
            row = conn.execute(
                f"SELECT {', '.join(_KEY_COLS)} FROM api_keys WHERE key_hash = %s", (key_hash,)
            ).fetchone()
        return self._key(row) if row else None

    def list_keys(self) -> list[ApiKey]:
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT {', '.join(_KEY_COLS)} FROM api_keys ORDER BY created_at, pos"
            ).fetchall()
        return [self._key(r) for r in rows]

    def touch_key(self, key_id: str, at: datetime) -> None:
        with self._write(lock=False) as cur:
            cur.execute("UPDATE api_keys SET last_used = %s WHERE id = %s", (at, key_id))

    # --- sessions, watermarks, reports ----------------------------------
    def get_watermark(self, key: str) -> int:
        with self._conn() as conn:
            row = conn.execute("SELECT value FROM watermarks WHERE key = %s", (key,)).fetchone()
        return int(row[0]) if row else 0

    def set_watermark(self, key: str, value: int) -> None:
        with self._write(lock=False) as cur:
            cur.execute(
                "INSERT INTO watermarks (key, value, updated_at) VALUES (%s, %s, %s) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value, "
                "updated_at = excluded.updated_at",
                (key, value, datetime.now(timezone.utc)),
            )

    def save_report(self, kind: str, body: dict[str, Any], at: datetime) -> int:
        with self._write(lock=False) as cur:
            row = cur.execute(
                "INSERT INTO reports (kind, at, body) VALUES (%s, %s, %s) RETURNING id",
                (kind, at, Jsonb(body, dumps=dumps)),
            ).fetchone()
        assert row is not None
        return int(row[0])

    def list_reports(self, kind: str, limit: int = 20) -> list[dict[str, Any]]:
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT id, at, body FROM reports WHERE kind = %s ORDER BY id DESC LIMIT %s",
                (kind, limit),
            ).fetchall()
        return [{"id": r[0], "at": utc(r[1]), **r[2]} for r in rows]
