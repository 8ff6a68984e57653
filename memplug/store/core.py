"""SQL for the resident project core: the items and task state it is made from, the
version of those inputs, and the cache of what was made from them (``meta`` rows keyed
``core_cache:<scope>``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memplug.store.db import Database
from memplug.store.items import ITEM_COLUMNS
from memplug.store.records import ItemRow

CACHE_PREFIX = "core_cache:"
# Only these statuses are standing memory; superseded and retracted ones are history.
CORE_STATUSES: tuple[str, ...] = ("active", "disputed")


def _in(column: str, values: Sequence[str]) -> str:
    return f"{column} IN ({', '.join('?' for _ in values)})"


class CoreStore:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.conn = db.conn

    def items(
        self,
        session_ids: Sequence[str] | None,
        kinds: Sequence[str],
        evidence: Sequence[str],
        per_kind: int,
    ) -> list[tuple[ItemRow, str | None]]:
        """Standing items of ``kinds`` and ``evidence`` types in scope (``None``: every
        session), each with the host time of the event it was derived from: the newest
        ``per_kind`` of each kind, in the core's order — by that time, then session id,
        seq and item id, all descending (the id is unique, so the order is total).

        Ranked in SQLite, so that only the rows kept are read whole: a project holds
        thousands of items, the core at most ``per_kind`` of a kind."""
        if session_ids is not None and not session_ids:
            return []
        where = [
            _in("m.status", CORE_STATUSES),
            _in("m.kind", kinds),
            _in("m.evidence_type", evidence),
        ]
        params: list[Any] = [*CORE_STATUSES, *kinds, *evidence]
        if session_ids is not None:
            where.append(_in("m.session_id", session_ids))
            params.extend(session_ids)
        sql = (
            "WITH ranked AS (SELECT m.rid AS rid, e.event_time AS at, row_number() OVER ("
            "PARTITION BY m.kind ORDER BY coalesce(e.event_time, '') DESC, m.session_id DESC, "
            "m.derived_from_seq DESC, m.id DESC) AS n "
            "FROM memory_items m LEFT JOIN events e "
            "ON e.session_id = m.session_id AND e.seq = m.derived_from_seq "
            f"WHERE {' AND '.join(where)}) "
            f"SELECT {', '.join(f'm.{c}' for c in ITEM_COLUMNS)}, r.at "
            "FROM ranked r JOIN memory_items m ON m.rid = r.rid WHERE r.n <= ? "
            "ORDER BY coalesce(r.at, '') DESC, m.session_id DESC, m.derived_from_seq DESC, "
            "m.id DESC"
        )
        rows = self.conn.execute(sql, [*params, per_kind])
        return [(ItemRow(*row[:-1]), row[-1]) for row in rows]

    def latest_task_session(self, session_ids: Sequence[str] | None) -> str | None:
        """The session in scope whose task state was set last, by the host time of the
        event that set it (then by session id, so the choice is total)."""
        sql = (
            "SELECT t.session_id FROM task_state t LEFT JOIN events e "
            "ON e.session_id = t.session_id AND e.seq = t.updated_by_seq"
        )
        params: list[Any] = []
        if session_ids is not None:
            if not session_ids:
                return None
            sql += f" WHERE {_in('t.session_id', session_ids)}"
            params.extend(session_ids)
        sql += " ORDER BY coalesce(e.event_time, '') DESC, t.session_id DESC LIMIT 1"
        row = self.conn.execute(sql, params).fetchone()
        return str(row[0]) if row else None

    def version(self, session_ids: Sequence[str] | None) -> str:
        """Changes whenever an input of the core may have: any item lifecycle event, any
        item row, any task state in scope. Cheap: maxima and one scoped aggregate."""
        items = self.conn.execute(
            "SELECT (SELECT coalesce(max(id), 0) FROM memory_events), "
            "coalesce(max(rid), 0), count(*) FROM memory_items"
        ).fetchone() or (0, 0, 0)
        sql = "SELECT group_concat(session_id || ':' || coalesce(updated_by_seq, ''), ',') FROM "
        sql += "(SELECT session_id, updated_by_seq FROM task_state"
        params: list[Any] = []
        if session_ids is not None:
            sql += f" WHERE {_in('session_id', session_ids)}" if session_ids else " WHERE 0"
            params.extend(session_ids)
        row = self.conn.execute(sql + " ORDER BY session_id)", params).fetchone()
        return f"{items[0]}.{items[1]}.{items[2]}|{row[0] if row and row[0] else ''}"

    # -- the cache ----------------------------------------------------------------------

    def cached(self, key: str) -> dict[str, Any] | None:
        row = self.conn.execute(
            "SELECT value FROM meta WHERE key = ?", (CACHE_PREFIX + key,)
        ).fetchone()
        if row is None:
            return None
        try:
            value = json.loads(row[0])
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    def save(self, key: str, value: dict[str, Any], *, wait_ms: int) -> None:
        """Store a core; waits at most ``wait_ms`` for the write lock (a step must not
        stall behind another writer for a cache it can rebuild next time)."""
        with self.db.lock_wait(wait_ms), self.db.write_transaction():
            self.conn.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (CACHE_PREFIX + key, json.dumps(value, ensure_ascii=False, sort_keys=True)),
            )

    def clear(self) -> int:
        """Drop every cached core (purge and rebuild: the cache quotes item text)."""
        self.conn.execute("DELETE FROM meta WHERE key LIKE ? ESCAPE '\\'", ("core\\_cache:%",))
        return int(self.conn.changes())
