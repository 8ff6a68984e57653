"""SQL for ``assembly_logs``: one row per assembly attempt, successful or not.

A row is written once and never edited, except ``message_seq``, which is filled in when
the host commits the injected message back as an event. Retention is a row cap
(``diagnostics.assemblyLogRetention``): the oldest rows go first.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memplug.base.text import canonical_json
from memplug.store.db import Database
from memplug.store.records import LogRecord

_COLUMNS: tuple[str, ...] = (
    "id",
    "session_id",
    "turn",
    "step",
    "trigger",
    "created_at",
    "query_text",
    "query_json",
    "budget",
    "used_tokens",
    "token_source",
    "content_hash",
    "injected",
    "message_seq",
    "text",
    "sections_json",
    "included_json",
    "omitted_json",
    "coverage_json",
    "errors_json",
    "duration_ms",
)
_SELECT = f"SELECT {', '.join(_COLUMNS)} FROM assembly_logs"
_SUMMARY = (
    "SELECT id, session_id, turn, step, trigger, created_at, injected, budget, used_tokens, "
    "token_source, json_array_length(included_json), json_array_length(omitted_json), "
    "json_array_length(errors_json), message_seq FROM assembly_logs"
)
_SUMMARY_KEYS: tuple[str, ...] = (
    "id",
    "session_id",
    "turn",
    "step",
    "trigger",
    "created_at",
    "injected",
    "budget",
    "used_tokens",
    "token_source",
    "included",
    "omitted",
    "errors",
    "message_seq",
)


def _row_to_record(row: Sequence[Any]) -> LogRecord:
    data = dict(zip(_COLUMNS, row, strict=True))
    return LogRecord(
        id=int(data["id"]),
        session_id=str(data["session_id"]),
        turn=data["turn"],
        step=data["step"],
        trigger=str(data["trigger"]),
        created_at=str(data["created_at"]),
        query_text=data["query_text"],
        query=json.loads(data["query_json"]),
        budget=int(data["budget"]),
        used_tokens=int(data["used_tokens"]),
        token_source=str(data["token_source"]),
        content_hash=data["content_hash"],
        injected=bool(data["injected"]),
        message_seq=data["message_seq"],
        text=data["text"],
        sections=json.loads(data["sections_json"]),
        included=json.loads(data["included_json"]),
        omitted=json.loads(data["omitted_json"]),
        coverage=json.loads(data["coverage_json"]),
        errors=json.loads(data["errors_json"]),
        duration_ms=data["duration_ms"],
    )


class LogStore:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.conn = db.conn

    # -- writing ------------------------------------------------------------------

    def insert(self, record: LogRecord, *, retention: int, wait_ms: int | None = None) -> int:
        """Write one attempt and trim the oldest rows beyond ``retention``; return its id.

        Also moves the session's ``last_assembly_seq`` checkpoint to the newest event the
        attempt could have seen, so `memory status` shows how far assembly has looked.
        ``wait_ms`` bounds the wait for the write lock (a host step must not stall
        behind another writer for the whole busy timeout just to keep a log row).
        """
        with self.db.lock_wait(wait_ms):
            return self._insert(record, retention)

    def _insert(self, record: LogRecord, retention: int) -> int:
        with self.db.write_transaction():
            self.conn.execute(
                "INSERT INTO assembly_logs (session_id, turn, step, trigger, created_at, "
                "query_text, query_json, budget, used_tokens, token_source, content_hash, "
                "injected, message_seq, text, sections_json, included_json, omitted_json, "
                "coverage_json, errors_json, duration_ms) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    record.session_id,
                    record.turn,
                    record.step,
                    record.trigger,
                    record.created_at,
                    record.query_text,
                    canonical_json(dict(record.query)),
                    record.budget,
                    record.used_tokens,
                    record.token_source,
                    record.content_hash,
                    int(record.injected),
                    record.message_seq,
                    record.text,
                    canonical_json([dict(s) for s in record.sections]),
                    canonical_json([dict(i) for i in record.included]),
                    canonical_json([dict(o) for o in record.omitted]),
                    canonical_json(dict(record.coverage)),
                    canonical_json(list(record.errors)),
                    record.duration_ms,
                ),
            )
            new_id = int(self.conn.last_insert_rowid())
            self.conn.execute(
                "UPDATE checkpoints SET last_assembly_seq = last_event_seq WHERE session_id = ?",
                (record.session_id,),
            )
            self._prune(retention)
        return new_id

    def _prune(self, keep: int) -> int:
        """Delete all but the newest ``keep`` rows; return how many went."""
        self.conn.execute(
            "DELETE FROM assembly_logs WHERE id <= (SELECT max(id) FROM assembly_logs) - ?",
            (max(1, keep),),
        )
        return int(self.conn.changes())

    def link_message(self, session_id: str, content_hash: str, seq: int) -> int | None:
        """Record that the host committed an injected text as event ``seq``.

        The newest unlinked attempt of the session that injected exactly this text is
        the one the host committed; returns its id, or None when none matches.
        """
        with self.db.write_transaction():
            row = self.conn.execute(
                "SELECT id FROM assembly_logs WHERE session_id = ? AND content_hash = ? "
                "AND injected = 1 AND message_seq IS NULL ORDER BY id DESC LIMIT 1",
                (session_id, content_hash),
            ).fetchone()
            if row is None:
                return None
            self.conn.execute(
                "UPDATE assembly_logs SET message_seq = ? WHERE id = ?", (seq, int(row[0]))
            )
            return int(row[0])

    # -- reading ------------------------------------------------------------------

    def get(self, assembly_id: int) -> LogRecord | None:
        row = self.conn.execute(f"{_SELECT} WHERE id = ?", (assembly_id,)).fetchone()
        return _row_to_record(row) if row else None

    def latest(self, session_id: str | None = None, turn: int | None = None) -> LogRecord | None:
        """The newest attempt, optionally of one session and one turn of it."""
        sql = _SELECT
        params: list[Any] = []
        where: list[str] = []
        if session_id is not None:
            where.append("session_id = ?")
            params.append(session_id)
        if turn is not None:
            where.append("turn = ?")
            params.append(turn)
        if where:
            sql += " WHERE " + " AND ".join(where)
        row = self.conn.execute(sql + " ORDER BY id DESC LIMIT 1", params).fetchone()
        return _row_to_record(row) if row else None

    def latest_summary(self, session_id: str | None = None) -> dict[str, Any] | None:
        """A small dict for `memory status`: the newest attempt without its payload."""
        sql = _SUMMARY
        params: tuple[str, ...] = ()
        if session_id is not None:
            sql += " WHERE session_id = ?"
            params = (session_id,)
        row = self.conn.execute(sql + " ORDER BY id DESC LIMIT 1", params).fetchone()
        if row is None:
            return None
        summary = dict(zip(_SUMMARY_KEYS, row, strict=True))
        summary["injected"] = bool(summary["injected"])
        return summary

    def summaries(self, session_id: str | None = None, limit: int = 20) -> list[dict[str, Any]]:
        """The newest attempts (newest first), without their payloads."""
        sql: str = _SUMMARY
        params: list[Any] = []
        if session_id is not None:
            sql += " WHERE session_id = ?"
            params.append(session_id)
        rows = self.conn.execute(sql + " ORDER BY id DESC LIMIT ?", [*params, limit])
        out = []
        for row in rows:
            summary = dict(zip(_SUMMARY_KEYS, row, strict=True))
            summary["injected"] = bool(summary["injected"])
            out.append(summary)
        return out

    def mentioning(self, ref: str, limit: int = 20) -> list[dict[str, Any]]:
        """Attempts that included or omitted ``ref`` (a ``mem_…`` id or ``SESSION:SEQ``).

        For `memory inspect`: each row is ``{id, session_id, turn, created_at, included,
        reason}`` where ``reason`` is the omission reason when it was left out.
        """
        rows = self.conn.execute(
            """
            SELECT l.id, l.session_id, l.turn, l.created_at,
                   (SELECT 1 FROM json_each(l.included_json) i
                     WHERE json_extract(i.value, '$.ref') = ?1),
                   (SELECT json_extract(o.value, '$.reason') FROM json_each(l.omitted_json) o
                     WHERE json_extract(o.value, '$.ref') = ?1 LIMIT 1)
            FROM assembly_logs l
            WHERE EXISTS (SELECT 1 FROM json_each(l.included_json) i
                           WHERE json_extract(i.value, '$.ref') = ?1)
               OR EXISTS (SELECT 1 FROM json_each(l.omitted_json) o
                           WHERE json_extract(o.value, '$.ref') = ?1)
            ORDER BY l.id DESC LIMIT ?2
            """,
            (ref, limit),
        )
        return [
            {
                "id": int(r[0]),
                "session_id": r[1],
                "turn": r[2],
                "created_at": r[3],
                "included": bool(r[4]),
                "reason": None if r[4] else r[5],
            }
            for r in rows
        ]

    def count(self) -> int:
        row = self.conn.execute("SELECT count(*) FROM assembly_logs").fetchone()
        return int(row[0]) if row else 0
