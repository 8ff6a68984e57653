"""Vectors of the semantic provider: plain BLOBs beside the events they describe.

Which events get a vector is one rule (:data:`EMBEDDABLE`): searchable prose a person
or the assistant wrote — tool output and host-generated text stay lexical only.
Vectors are bytes here; the arithmetic over them lives above the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memplug.store.db import Database
from memplug.store.records import EventScope, Snapshot, VectorCounts, VectorScan
from memplug.store.search import event_scope_where

EMBEDDABLE = (
    "e.searchable = 1 AND e.generated = 0 AND e.type IN ('user/message', 'assistant/message')"
)


class VectorStore:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.conn = db.conn

    def model_id(self, provider: str, version: str, dimensions: int, *, create: bool) -> int | None:
        """The id of a provider model; ``create`` registers it (inside a write)."""
        if create:
            self.conn.execute(
                "INSERT OR IGNORE INTO vector_models (provider, version, dimensions) "
                "VALUES (?, ?, ?)",
                (provider, version, dimensions),
            )
        row = self.conn.execute(
            "SELECT id FROM vector_models WHERE provider = ? AND version = ?", (provider, version)
        ).fetchone()
        return int(row[0]) if row else None

    def models(self) -> list[dict[str, Any]]:
        """Every model that wrote vectors, with how many of its vectors remain."""
        rows = self.conn.execute(
            "SELECT m.provider, m.version, m.dimensions, count(v.event_id) FROM vector_models m "
            "LEFT JOIN event_vectors v ON v.model_id = m.id GROUP BY m.id ORDER BY m.id"
        ).fetchall()
        return [
            {"provider": r[0], "version": r[1], "dimensions": r[2], "vectors": r[3]} for r in rows
        ]

    def counts(self, model_id: int | None) -> VectorCounts:
        row = self.conn.execute(
            "SELECT count(*), count(v.event_id) FILTER (WHERE v.model_id = ?1), "
            "count(v.event_id) FILTER (WHERE v.model_id IS NOT ?1) "
            f"FROM events e LEFT JOIN event_vectors v ON v.event_id = e.id WHERE {EMBEDDABLE}",
            (model_id,),
        ).fetchone()
        assert row is not None  # an aggregate always returns its one row
        return VectorCounts(*row)

    def pending(
        self, model_id: int | None, limit: int, after_id: int, top_id: int
    ) -> list[tuple[int, str, int, str]]:
        """``(event id, session id, seq, text)`` of embeddable events in ``(after_id,
        top_id]`` with no vector of this model, oldest first — missing or stale alike."""
        return [
            (int(r[0]), str(r[1]), int(r[2]), str(r[3]))
            for r in self.conn.execute(
                "SELECT e.id, e.session_id, e.seq, e.text FROM events e "
                "LEFT JOIN event_vectors v ON v.event_id = e.id "
                f"WHERE e.id > ? AND e.id <= ? AND {EMBEDDABLE} AND v.model_id IS NOT ? "
                "ORDER BY e.id LIMIT ?",
                (after_id, top_id, model_id, limit),
            )
        ]

    def max_event_id(self) -> int:
        row = self.conn.execute("SELECT coalesce(max(id), 0) FROM events").fetchone()
        return int(row[0]) if row else 0

    def put(
        self, model_id: int, rows: Sequence[tuple[int, str, int, bytes, float, int | None]]
    ) -> None:
        """Store ``(event id, session id, seq, int8 vector, scale, cell)`` rows (inside the
        caller's write), replacing a stale vector of the event."""
        self.conn.executemany(
            "INSERT OR REPLACE INTO event_vectors "
            "(event_id, model_id, session_id, seq, vector, scale, cell) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(event_id, model_id, *rest) for event_id, *rest in rows],
        )

    # Every embeddable event up to this id has a vector of the model: a scan then only
    # checks newer events for missing ones. Keyed with a colon, so purge --all drops it
    # (ids restart after an emptied table).
    def watermark(self, model_id: int) -> int:
        row = self.conn.execute(
            "SELECT value FROM meta WHERE key = ?", (f"vectors_through:{model_id}",)
        ).fetchone()
        return int(row[0]) if row else 0

    def set_watermark(self, model_id: int, event_id: int) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
            (f"vectors_through:{model_id}", str(event_id)),
        )

    def scan(
        self,
        model_id: int,
        scope: EventScope,
        snap: Snapshot,
        *,
        cells: Sequence[int] | None = None,
        limit: int = -1,
    ) -> VectorScan:
        """Current vectors of in-scope events under the snapshot with their events'
        (session, seq) keys; with ``cells``, only those cells', at most ``limit`` of them
        in (cell, session, seq) order."""
        found = VectorScan()
        by_cell = "" if cells is None else f" AND v.cell IN ({', '.join('?' for _ in cells)})"
        if _by_session_only(scope):
            sql = (
                "SELECT v.event_id, v.session_id, v.seq, v.vector, v.scale FROM event_vectors v "
                f"WHERE v.model_id = ?{by_cell} AND v.event_id <= ?"
            )
            params: list[Any] = [model_id, *(cells or ()), snap.max_event_id]
            if scope.session_ids is not None:
                sql += f" AND v.session_id IN ({', '.join('?' for _ in scope.session_ids)})"
                params.extend(scope.session_ids)
        else:
            where, extra = event_scope_where(scope)
            sql = (
                "SELECT v.event_id, v.session_id, v.seq, v.vector, v.scale FROM event_vectors v "
                f"JOIN events e ON e.id = v.event_id WHERE v.model_id = ?{by_cell} "
                f"AND e.id <= ? AND {where}"
            )
            params = [model_id, *(cells or ()), snap.max_event_id, *extra]
        if cells is not None:
            # The cell index's own order: cells cut short give the same rows everywhere.
            sql += " ORDER BY v.cell, v.session_id, v.seq LIMIT ?"
            params.append(limit)
        # Otherwise in row order (no sort of the vectors): ties are broken by ``keys``.
        rows: list[tuple[Any, ...]] = self.conn.execute(sql, params).fetchall()
        found.ids = [int(row[0]) for row in rows]
        found.keys = [(str(row[1]), int(row[2])) for row in rows]
        found.blobs = [bytes(row[3]) for row in rows]
        found.scales = [float(row[4] or 0.0) for row in rows]
        return found

    def lacking(self, model_id: int, scope: EventScope, snap: Snapshot) -> int:
        """How many in-scope embeddable events under the snapshot lack a current vector."""
        through = self.watermark(model_id)
        if snap.max_event_id <= through:
            return 0
        where, params = event_scope_where(scope)
        row = self.conn.execute(
            "SELECT count(*) FROM events e LEFT JOIN event_vectors v "
            "ON v.event_id = e.id AND v.model_id = ? "
            f"WHERE e.id > ? AND e.id <= ? AND {EMBEDDABLE} AND {where} AND v.event_id IS NULL",
            [model_id, through, snap.max_event_id, *params],
        ).fetchone()
        return int(row[0]) if row else 0


def _by_session_only(scope: EventScope) -> bool:
    """Whether the scope narrows only by session: then vectors are read without events
    (embeddable events are never generated, so that filter holds already)."""
    return not (
        scope.roles or scope.types or scope.tools or scope.outcomes or scope.since or scope.until
    )
