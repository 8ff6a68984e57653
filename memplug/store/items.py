"""SQL for derived memory: items, their lifecycle, actions, task state and the
extraction checkpoint and queue.

Nothing here decides anything: ``memplug.derive.extract`` owns the rules. Kinds, evidence
types and statuses are checked here too, at the storage boundary, so that no caller
can write a value the schema's vocabulary does not hold.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from memplug.base.errors import ValidationError
from memplug.base.refs import event_ref
from memplug.base.text import canonical_json
from memplug.base.vocab import EVIDENCE_TYPES, ITEM_STATUSES, LIFECYCLE_EVENTS, MEMORY_KINDS
from memplug.store.db import Database
from memplug.store.records import ActionRow, ItemRow, ScopeFilter
from memplug.store.timeline import scope_filter_where

ITEM_COLUMNS: tuple[str, ...] = (
    "rid",
    "id",
    "session_id",
    "project",
    "kind",
    "content",
    "conditions_json",
    "scope_json",
    "numbers_json",
    "source_refs_json",
    "evidence_type",
    "status",
    "supersedes_json",
    "superseded_by",
    "subject_key",
    "content_hash",
    "extractor",
    "derived_from_seq",
    "created_at",
    "updated_at",
    "scope",
    "agent",
)
_SELECT_ITEM = f"SELECT {', '.join(ITEM_COLUMNS)} FROM memory_items"
# Columns a lifecycle change may touch; identity and provenance never change.
_MUTABLE = frozenset(
    {"kind", "status", "evidence_type", "supersedes_json", "superseded_by", "source_refs_json",
     "updated_at"}
)  # fmt: skip
ACTIONS: tuple[str, ...] = ("retract", "promote")
# How far extraction read is stored per session with, in `meta`, the events' high-water
# row id (see `arrived_late`): capture reports sessions, not rows, and a late event can
# only be told apart from one already extracted by the row id it was stored under.
_MARK_PREFIX = "extract_mark:"
# `meta` keys of the derivation's own bookkeeping (docs/storage.md, "Upgrades"): no
# colon, so purge, which drops per-session `name:<session>` keys, keeps them.
DERIVATION_KEYS: tuple[str, ...] = ("derived_with", "rederiving")


def _check(value: str, allowed: Sequence[str], what: str) -> None:
    if value not in allowed:
        raise ValidationError(f"{what} must be one of {', '.join(allowed)} (got {value!r})")


class ItemStore:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.conn = db.conn

    # -- items: reading ---------------------------------------------------------------

    def get(self, memory_id: str) -> ItemRow | None:
        row = self.conn.execute(f"{_SELECT_ITEM} WHERE id = ?", (memory_id,)).fetchone()
        return ItemRow(*row) if row else None

    def active_by_hash(self, session_id: str, content_hash: str) -> ItemRow | None:
        row = self.conn.execute(
            f"{_SELECT_ITEM} WHERE session_id = ? AND content_hash = ? AND status = 'active'",
            (session_id, content_hash),
        ).fetchone()
        return ItemRow(*row) if row else None

    def session_items(
        self, session_id: str, statuses: Sequence[str] | None = None
    ) -> list[ItemRow]:
        """A session's items in the order they were created."""
        sql = f"{_SELECT_ITEM} WHERE session_id = ?"
        params: list[Any] = [session_id]
        if statuses:
            sql += f" AND status IN ({', '.join('?' for _ in statuses)})"
            params.extend(statuses)
        return [ItemRow(*r) for r in self.conn.execute(sql + " ORDER BY rid", params)]

    def by_subject(self, session_id: str, subject_key: str) -> list[ItemRow]:
        rows = self.conn.execute(
            f"{_SELECT_ITEM} WHERE session_id = ? AND subject_key = ? ORDER BY rid",
            (session_id, subject_key),
        )
        return [ItemRow(*r) for r in rows]

    def find(
        self,
        *,
        session_ids: Sequence[str] | None = None,
        status: str | None = None,
        kind: str | None = None,
        limit: int | None = None,
        where: ScopeFilter | None = None,
    ) -> list[ItemRow]:
        """Items in ``(session_id, rid)`` order, filtered (``where``: by scope)."""
        clause, params = (
            scope_filter_where(where, "memory_items") if where is not None else ("1", [])
        )
        where_sql = [clause]
        if session_ids:
            where_sql.append(f"session_id IN ({', '.join('?' for _ in session_ids)})")
            params.extend(session_ids)
        if status:
            where_sql.append("status = ?")
            params.append(status)
        if kind:
            where_sql.append("kind = ?")
            params.append(kind)
        sql = _SELECT_ITEM + f" WHERE {' AND '.join(where_sql)}"
        sql += " ORDER BY session_id, rid"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [ItemRow(*r) for r in self.conn.execute(sql, params)]

    def citing(self, session_id: str, seq: int) -> list[ItemRow]:
        """Items whose sources include the event ``session_id:seq``."""
        rows = self.conn.execute(
            f"{_SELECT_ITEM} WHERE EXISTS (SELECT 1 FROM json_each(source_refs_json) r "
            "WHERE r.value = ?) ORDER BY session_id, rid",
            (event_ref(session_id, seq),),
        )
        return [ItemRow(*r) for r in rows]

    # -- items: writing ---------------------------------------------------------------

    def insert(
        self,
        *,
        id: str,
        session_id: str,
        project: str | None,
        row_scope: str,
        agent: str | None,
        kind: str,
        content: str,
        conditions: Sequence[str],
        scope: dict[str, Any],
        numbers: Sequence[dict[str, Any]],
        source_refs: Sequence[str],
        evidence_type: str,
        status: str,
        subject_key: str | None,
        content_hash: str,
        extractor: str,
        derived_from_seq: int,
        at: str | None,
    ) -> ItemRow:
        _check(kind, MEMORY_KINDS, "kind")
        _check(evidence_type, EVIDENCE_TYPES, "evidence_type")
        _check(status, ITEM_STATUSES, "status")
        self.conn.execute(
            "INSERT INTO memory_items (id, session_id, project, kind, content, conditions_json,"
            " scope_json, numbers_json, source_refs_json, evidence_type, status,"
            " supersedes_json, superseded_by, subject_key, content_hash, extractor,"
            " derived_from_seq, created_at, updated_at, scope, agent)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '[]', NULL, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                id,
                session_id,
                project,
                kind,
                content,
                canonical_json(list(conditions)),
                canonical_json(scope),
                canonical_json(list(numbers)),
                canonical_json(list(source_refs)),
                evidence_type,
                status,
                subject_key,
                content_hash,
                extractor,
                derived_from_seq,
                at,
                at,
                row_scope,
                agent,
            ),
        )
        row = self.get(id)
        assert row is not None
        return row

    def update(self, memory_id: str, **fields: Any) -> ItemRow:
        """Change lifecycle columns; JSON-valued ones take Python values."""
        unknown = set(fields) - _MUTABLE
        if unknown:
            raise ValueError(f"not a lifecycle column: {sorted(unknown)}")
        if "kind" in fields:
            _check(fields["kind"], MEMORY_KINDS, "kind")
        if "status" in fields:
            _check(fields["status"], ITEM_STATUSES, "status")
        if "evidence_type" in fields:
            _check(fields["evidence_type"], EVIDENCE_TYPES, "evidence_type")
        values = {
            k: canonical_json(v) if k.endswith("_json") else v for k, v in sorted(fields.items())
        }
        assignments = ", ".join(f"{k} = ?" for k in values)
        self.conn.execute(
            f"UPDATE memory_items SET {assignments} WHERE id = ?", (*values.values(), memory_id)
        )
        row = self.get(memory_id)
        assert row is not None
        return row

    # -- lifecycle audit ----------------------------------------------------------------

    def add_event(
        self,
        memory_id: str,
        session_id: str,
        event: str,
        *,
        at: str | None,
        actor: str,
        source_seq: int | None,
        detail: dict[str, Any] | None = None,
    ) -> None:
        _check(event, LIFECYCLE_EVENTS, "lifecycle event")
        self.conn.execute(
            "INSERT INTO memory_events (memory_id, session_id, event, at, actor, source_seq,"
            " detail_json) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (memory_id, session_id, event, at, actor, source_seq, canonical_json(detail or {})),
        )

    def events_of(self, memory_id: str) -> list[dict[str, Any]]:
        rows = self.conn.execute(
            "SELECT id, event, at, actor, source_seq, detail_json FROM memory_events"
            " WHERE memory_id = ? ORDER BY id",
            (memory_id,),
        )
        return [
            {
                "id": r[0],
                "event": r[1],
                "at": r[2],
                "actor": r[3],
                "source_seq": r[4],
                "detail": json.loads(r[5] or "{}"),
            }
            for r in rows
        ]

    # -- actions (not derived) ----------------------------------------------------------

    def add_action(
        self, memory_id: str, action: str, *, actor: str, at: str, params: dict[str, Any]
    ) -> ActionRow:
        _check(action, ACTIONS, "action")
        cursor = self.conn.execute(
            "INSERT INTO memory_actions (memory_id, action, actor, at, note)"
            " VALUES (?, ?, ?, ?, ?) RETURNING id",
            (memory_id, action, actor, at, canonical_json(params)),
        )
        row = cursor.fetchone()
        assert row is not None
        return ActionRow(int(row[0]), memory_id, action, actor, at, canonical_json(params))

    def session_actions(self, session_id: str) -> list[ActionRow]:
        rows = self.conn.execute(
            "SELECT id, memory_id, action, actor, at, note FROM memory_actions"
            " WHERE json_valid(note) AND json_extract(note, '$.session_id') = ? ORDER BY id",
            (session_id,),
        )
        return [ActionRow(*r) for r in rows]

    def actions_of(self, memory_id: str) -> list[ActionRow]:
        rows = self.conn.execute(
            "SELECT id, memory_id, action, actor, at, note FROM memory_actions"
            " WHERE memory_id = ? ORDER BY id",
            (memory_id,),
        )
        return [ActionRow(*r) for r in rows]

    # -- task state -----------------------------------------------------------------------

    def task_state(self, session_id: str) -> dict[str, Any] | None:
        """The session's task state; each entry carries its ``ref`` (``SESSION:SEQ``)."""
        row = self.conn.execute(
            "SELECT goal, progress_json, blockers_json, open_items_json, superseded_json,"
            " updated_by_seq, updated_at FROM task_state WHERE session_id = ?",
            (session_id,),
        ).fetchone()
        if row is None:
            return None

        def refs(entries: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
            return [{**e, "ref": event_ref(session_id, e["seq"])} for e in entries]

        goal = json.loads(row[0]) if row[0] else None
        return {
            "session_id": session_id,
            "goal": refs([goal])[0] if goal else None,
            "progress": refs(json.loads(row[1])),
            "blockers": refs(json.loads(row[2])),
            "open_items": refs(json.loads(row[3])),
            "superseded_goals": refs(json.loads(row[4])),
            "updated_by_seq": row[5],
            "updated_at": row[6],
        }

    def save_task_state(
        self,
        session_id: str,
        *,
        goal: dict[str, Any] | None,
        progress: list[dict[str, Any]],
        blockers: list[dict[str, Any]],
        open_items: list[dict[str, Any]],
        superseded: list[dict[str, Any]],
        updated_by_seq: int,
        updated_at: str | None,
    ) -> None:
        self.conn.execute(
            "INSERT INTO task_state (session_id, goal, progress_json, blockers_json,"
            " open_items_json, superseded_json, updated_by_seq, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (session_id) DO UPDATE SET goal = excluded.goal,"
            " progress_json = excluded.progress_json, blockers_json = excluded.blockers_json,"
            " open_items_json = excluded.open_items_json,"
            " superseded_json = excluded.superseded_json,"
            " updated_by_seq = excluded.updated_by_seq, updated_at = excluded.updated_at",
            (
                session_id,
                canonical_json(goal) if goal else None,
                canonical_json(progress),
                canonical_json(blockers),
                canonical_json(open_items),
                canonical_json(superseded),
                updated_by_seq,
                updated_at,
            ),
        )

    # -- how far extraction has read, and the failure queue ------------------------------

    def extracted_through(self, session_id: str) -> int | None:
        """The seq extraction has read the session through (None: never extracted)."""
        row = self.conn.execute(
            "SELECT last_extract_seq FROM checkpoints WHERE session_id = ?", (session_id,)
        ).fetchone()
        return None if row is None or row[0] is None else int(row[0])

    def mark_extracted(self, session_id: str) -> None:
        """Record extraction through the session's newest event, and every event stored
        so far as seen (run in the write transaction that extracted them)."""
        top_seq, top_id = self._bounds(session_id)
        self.conn.execute(
            "INSERT INTO checkpoints (session_id, last_extract_seq) VALUES (?, ?)"
            " ON CONFLICT (session_id) DO UPDATE SET last_extract_seq = excluded.last_extract_seq",
            (session_id, top_seq),
        )
        self.conn.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (_MARK_PREFIX + session_id, str(top_id)),
        )

    def newest_seq(self, session_id: str) -> int | None:
        """The session's highest seq (None: it has no events)."""
        return self._bounds(session_id)[0]

    def _bounds(self, session_id: str) -> tuple[int | None, int]:
        row = self.conn.execute(
            "SELECT max(seq), coalesce(max(id), 0) FROM events WHERE session_id = ?",
            (session_id,),
        ).fetchone()
        assert row is not None  # an aggregate always returns one row
        return (None if row[0] is None else int(row[0])), int(row[1])

    def arrived_late(self, session_id: str, through: int) -> bool:
        """Whether an event at or below ``through``, the seq extraction read the session
        through, was stored after extraction last ran: it must be derived again."""
        row = self.conn.execute(
            "SELECT value FROM meta WHERE key = ?", (_MARK_PREFIX + session_id,)
        ).fetchone()
        mark = int(row[0]) if row and str(row[0]).isdigit() else 0
        row = self.conn.execute(
            "SELECT 1 FROM events WHERE session_id = ? AND seq <= ? AND id > ? LIMIT 1",
            (session_id, through, mark),
        ).fetchone()
        return row is not None

    def pending(self, session_id: str | None = None) -> list[dict[str, Any]]:
        sql = (
            "SELECT session_id, seq, attempts, last_error, first_failed_at, last_failed_at"
            " FROM pending_extraction"
        )
        params: tuple[Any, ...] = ()
        if session_id is not None:
            sql += " WHERE session_id = ?"
            params = (session_id,)
        keys = ("session_id", "seq", "attempts", "last_error", "first_failed_at",
                "last_failed_at")  # fmt: skip
        rows = self.conn.execute(sql + " ORDER BY session_id, seq", params)
        return [dict(zip(keys, r, strict=True)) for r in rows]

    def queue_failure(self, session_id: str, seq: int, error: str, now: str) -> None:
        self.conn.execute(
            "INSERT INTO pending_extraction (session_id, seq, attempts, last_error,"
            " first_failed_at, last_failed_at) VALUES (?, ?, 1, ?, ?, ?)"
            " ON CONFLICT (session_id, seq) DO UPDATE SET attempts = attempts + 1,"
            " last_error = excluded.last_error, last_failed_at = excluded.last_failed_at",
            (session_id, seq, error[:2000], now, now),
        )

    def clear_pending(self, session_id: str, seq: int) -> None:
        self.conn.execute(
            "DELETE FROM pending_extraction WHERE session_id = ? AND seq = ?", (session_id, seq)
        )

    # -- rebuild ----------------------------------------------------------------------------

    def clear_derived(self, session_id: str) -> None:
        """Drop a session's derived rows; its events, actions and failure queue stay."""
        self.conn.execute("DELETE FROM memory_events WHERE session_id = ?", (session_id,))
        self.conn.execute("DELETE FROM memory_items WHERE session_id = ?", (session_id,))
        self.conn.execute("DELETE FROM task_state WHERE session_id = ?", (session_id,))
        self.conn.execute(
            "UPDATE checkpoints SET last_extract_seq = NULL WHERE session_id = ?", (session_id,)
        )
        self.conn.execute("DELETE FROM meta WHERE key = ?", (_MARK_PREFIX + session_id,))

    def derived_sessions(self) -> list[str]:
        """Sessions with events or derived rows (what a full rebuild must visit)."""
        rows = self.conn.execute(
            "SELECT session_id FROM events UNION SELECT session_id FROM memory_items"
            " UNION SELECT session_id FROM task_state"
            " UNION SELECT session_id FROM work_records ORDER BY 1"
        )
        return [str(r[0]) for r in rows]

    # -- which code derived the state (upgrades) ---------------------------------------------

    def next_derived_session(self, after: str | None) -> str | None:
        """The first session after ``after`` (None: the first) in name order that has
        events or derived rows; one index probe per table, whatever the database's size."""
        row = self.conn.execute(
            "SELECT min(s) FROM ("
            " SELECT min(session_id) AS s FROM events WHERE session_id > ?1"
            " UNION ALL SELECT min(session_id) FROM memory_items WHERE session_id > ?1"
            " UNION ALL SELECT min(session_id) FROM task_state WHERE session_id > ?1"
            " UNION ALL SELECT min(session_id) FROM work_records WHERE session_id > ?1)",
            (after or "",),
        ).fetchone()
        return None if row is None or row[0] is None else str(row[0])

    def derived_anything(self) -> bool:
        """Whether extraction ever ran here (a session's checkpoint has moved)."""
        row = self.conn.execute(
            "SELECT 1 FROM checkpoints WHERE last_extract_seq IS NOT NULL LIMIT 1"
        ).fetchone()
        return row is not None

    def event_count(self, session_id: str | None = None, *, after: str | None = None) -> int:
        """Events of one session, or of every session named after ``after``."""
        if session_id is not None:
            sql, params = "SELECT count(*) FROM events WHERE session_id = ?", (session_id,)
        else:
            sql, params = "SELECT count(*) FROM events WHERE session_id > ?", (after or "",)
        row = self.conn.execute(sql, params).fetchone()
        return int(row[0]) if row else 0

    def derivation(self, key: str) -> dict[str, Any] | None:
        """A JSON record of the derivation's bookkeeping (one of DERIVATION_KEYS)."""
        if key not in DERIVATION_KEYS:
            raise ValueError(f"not a derivation key: {key}")
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            value = json.loads(str(row[0]))
        except ValueError:
            return None  # unreadable: treated as unknown, so everything is derived again
        return value if isinstance(value, dict) else None

    def set_derivation(self, key: str, value: dict[str, Any] | None) -> None:
        if key not in DERIVATION_KEYS:
            raise ValueError(f"not a derivation key: {key}")
        if value is None:
            self.conn.execute("DELETE FROM meta WHERE key = ?", (key,))
            return
        self.conn.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, canonical_json(value)),
        )
