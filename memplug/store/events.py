"""SQL for raw evidence: events, their FTS index, archive, sessions, checkpoints, errors."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from msgspec.structs import astuple

from memplug.base.clock import utc_now
from memplug.store.db import Database
from memplug.store.records import EventRow, InsertResult, NewEvent
from memplug.store.search import rows_by_refs

# The events table's written columns: what capture hands over, then the batch's stamp.
EVENT_COLUMNS: tuple[str, ...] = (*NewEvent.__struct_fields__, "ingested_at")
_INSERT_EVENT = (
    f"INSERT OR IGNORE INTO events ({', '.join(EVENT_COLUMNS)}) "
    f"VALUES ({', '.join('?' for _ in EVENT_COLUMNS)})"
)
# What a reader gets back for one event row (everything but the raw FTS plumbing).
_SELECT_EVENT = f"SELECT id, {', '.join(EVENT_COLUMNS)} FROM events"


class EventStore:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.conn = db.conn

    # -- writing ------------------------------------------------------------------

    def insert(
        self,
        events: Sequence[NewEvent],
        archive: Sequence[tuple[str, str, str]],
        *,
        origin: str,
        ingested_at: str,
        bulk: bool = False,
    ) -> InsertResult:
        """Insert ``events``, stamped ``ingested_at``, with ``INSERT OR IGNORE``.

        ``bulk`` (an import, a sync pull) defers the FTS trigger and indexes the new id
        range with one statement, since per-row trigger inserts are the slowest part of
        a large import; and it tunes the connection for the batches that follow.
        Must run inside a write transaction; sessions and checkpoints follow the rows.
        """
        if not events:
            return InsertResult(0, 0, ())
        rows = [(*astuple(event), ingested_at) for event in events]
        before = self._max_id()
        if bulk:
            self.db.for_bulk_writes()
            self.conn.execute("INSERT INTO meta (key, value) VALUES ('fts_deferred', '1')")
        self.conn.executemany(_INSERT_EVENT, rows)
        if bulk:
            self.conn.execute(
                "INSERT INTO events_fts (rowid, text) "
                "SELECT id, text FROM events WHERE id > ? AND searchable = 1",
                (before,),
            )
            self.conn.execute("DELETE FROM meta WHERE key = 'fts_deferred'")
        if archive:
            self.conn.executemany(
                "INSERT OR IGNORE INTO archive (session_id, ref, text, chars) "
                "VALUES (?, ?, ?, length(?3))",
                archive,
            )
        new = self._max_id() - before
        sessions = self._upkeep_sessions(before, origin) if new else ()
        return InsertResult(new=new, present=len(rows) - new, sessions=sessions)

    def _max_id(self) -> int:
        row = self.conn.execute("SELECT coalesce(max(id), 0) FROM events").fetchone()
        return int(row[0]) if row else 0

    def _upkeep_sessions(self, after_id: int, origin: str) -> tuple[str, ...]:
        # One scan of the new rows feeds both upserts (a scan each cost a bulk import
        # ~5% of its time). NOT INDEXED: the planner otherwise scans a whole index for
        # the GROUP BY instead of reading just the new rowid range.
        now = utc_now()
        touched = self.conn.execute(
            "SELECT session_id, max(cwd), max(coalesce(project, cwd)), min(event_time), "
            "max(event_time), max(seq) FROM events NOT INDEXED WHERE id > ? "
            "GROUP BY session_id ORDER BY session_id",
            (after_id,),
        ).fetchall()
        self.conn.executemany(
            """
            INSERT INTO sessions (session_id, cwd, project, origin, first_time, last_time,
                                  created_at, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (session_id) DO UPDATE SET
                cwd = coalesce(sessions.cwd, excluded.cwd),
                project = coalesce(sessions.project, excluded.project),
                first_time = min(coalesce(sessions.first_time, excluded.first_time),
                                 coalesce(excluded.first_time, sessions.first_time)),
                last_time = max(coalesce(sessions.last_time, excluded.last_time),
                                coalesce(excluded.last_time, sessions.last_time)),
                updated_at = excluded.updated_at
            """,
            [
                (s, cwd, proj, origin, first, last, now, now)
                for s, cwd, proj, first, last, _ in touched
            ],
        )
        self.conn.executemany(
            """
            INSERT INTO checkpoints (session_id, last_event_seq) VALUES (?, ?)
            ON CONFLICT (session_id) DO UPDATE SET
                last_event_seq = max(coalesce(checkpoints.last_event_seq, -1),
                                     excluded.last_event_seq)
            """,
            [(row[0], row[5]) for row in touched],
        )
        return tuple(str(row[0]) for row in touched)

    def record_error(
        self, stage: str, message: str, session_id: str | None = None, seq: int | None = None
    ) -> None:
        """Keep an error from a path that must not raise (capture, extraction, hooks)."""
        self.conn.execute(
            "INSERT INTO error_log (at, stage, session_id, seq, message) VALUES (?, ?, ?, ?, ?)",
            (utc_now(), stage, session_id, seq, message[:2000]),
        )

    def prune_errors(self, keep: int) -> None:
        self.conn.execute(
            "DELETE FROM error_log WHERE id <= (SELECT max(id) FROM error_log) - ?", (keep,)
        )

    # -- reading ------------------------------------------------------------------

    def get(self, session_id: str, seq: int) -> EventRow | None:
        row = self.conn.execute(
            f"{_SELECT_EVENT} WHERE session_id = ? AND seq = ?", (session_id, seq)
        ).fetchone()
        return EventRow(*row) if row else None

    def texts(self, refs: Sequence[tuple[str, int]]) -> dict[tuple[str, int], str]:
        """The text of each ``(session_id, seq)`` that exists, read alone (a step checks
        a few hundred sources against its context)."""
        rows = rows_by_refs(self.conn, "e.session_id, e.seq, e.text", refs)
        return {(session_id, seq): text for session_id, seq, text in rows}

    def archived_text(self, session_id: str, seq: int) -> str | None:
        row = self.conn.execute(
            "SELECT text FROM archive WHERE session_id = ? AND ref = ?",
            (session_id, f"seq:{seq}"),
        ).fetchone()
        return str(row[0]) if row else None

    def full_text(self, event: EventRow) -> str:
        """The event's whole normalised text, from the archive when it was capped."""
        if event.truncated:
            archived = self.archived_text(event.session_id, event.seq)
            if archived is not None:
                return archived
        return event.text

    def output_before(self, session_id: str, seq: int, events: int, max_chars: int) -> str:
        """Texts of the tool results among the ``events`` events before ``seq`` in the
        session, newest first, until ``max_chars`` are read, joined by spaces."""
        where = "FROM events WHERE session_id = ? AND type = 'tool/result' AND seq < ? AND seq >= ?"
        params = (session_id, seq, seq - events)
        # Joined in SQLite, one row back, when all of it fits (the usual case).
        joined, total = self.conn.execute(
            f"SELECT group_concat(text, ' ' ORDER BY seq DESC), sum(length(text)) {where}",
            params,
        ).fetchone() or (None, 0)
        if joined is None or total <= max_chars:
            return str(joined or "")
        out: list[str] = []
        read = 0
        for (text,) in self.conn.execute(f"SELECT text {where} ORDER BY seq DESC", params):
            if read >= max_chars:
                break
            out.append(str(text)[: max_chars - read])
            read += len(out[-1])
        return " ".join(out)

    def session_events(
        self, session_id: str, *, after_seq: int = -1, types: Sequence[str] | None = None
    ) -> list[EventRow]:
        sql = f"{_SELECT_EVENT} WHERE session_id = ? AND seq > ?"
        params: list[Any] = [session_id, after_seq]
        if types:
            sql += f" AND type IN ({', '.join('?' for _ in types)})"
            params.extend(types)
        sql += " ORDER BY seq"
        return [EventRow(*row) for row in self.conn.execute(sql, params)]

    def last_seq(
        self,
        session_id: str,
        before_seq: int,
        types: Sequence[str],
        typed: Sequence[str] | None = None,
    ) -> int | None:
        """The seq of the latest event of ``types`` before ``before_seq``; with ``typed``,
        only text a person typed (not generated, source kind absent or one of those)."""
        sql = (
            f"SELECT seq FROM events WHERE session_id = ? AND seq < ?"
            f" AND type IN ({', '.join('?' for _ in types)})"
        )
        params: list[Any] = [session_id, before_seq, *types]
        if typed is not None:
            sql += (
                " AND generated = 0 AND (source_kind IS NULL"
                f" OR source_kind IN ({', '.join('?' for _ in typed)}))"
            )
            params.extend(typed)
        row = self.conn.execute(sql + " ORDER BY seq DESC LIMIT 1", params).fetchone()
        return None if row is None else int(row[0])

    def last_in_turns(
        self, turns: Sequence[tuple[str, int]], event_type: str
    ) -> dict[tuple[str, int], int]:
        """Per ``(session_id, turn)``, the seq of its latest event of ``event_type`` (a
        turn without one is left out)."""
        out: dict[tuple[str, int], int] = {}
        for session_id, turn in sorted(set(turns)):
            row = self.conn.execute(
                "SELECT max(seq) FROM events WHERE session_id = ? AND turn = ? AND type = ?",
                (session_id, turn, event_type),
            ).fetchone()
            if row is not None and row[0] is not None:
                out[(session_id, turn)] = int(row[0])
        return out

    def iter_events(self, session_ids: Sequence[str] | None = None) -> Iterator[EventRow]:
        """Every event in ``(session_id, seq)`` order — the export order."""
        if session_ids:
            marks = ", ".join("?" for _ in session_ids)
            cursor = self.conn.execute(
                f"{_SELECT_EVENT} WHERE session_id IN ({marks}) ORDER BY session_id, seq",
                tuple(session_ids),
            )
        else:
            cursor = self.conn.execute(f"{_SELECT_EVENT} ORDER BY session_id, seq")
        for row in cursor:
            yield EventRow(*row)

    def session_ids(self) -> list[str]:
        return [str(r[0]) for r in self.conn.execute("SELECT session_id FROM sessions ORDER BY 1")]

    def session(self, session_id: str) -> dict[str, Any] | None:
        row = self.conn.execute(
            f"{_SELECT_SESSION} WHERE s.session_id = ?", (session_id,)
        ).fetchone()
        return _session_dict(row) if row else None

    def sessions(self) -> list[dict[str, Any]]:
        rows = self.conn.execute(f"{_SELECT_SESSION} ORDER BY s.session_id")
        return [_session_dict(row) for row in rows]

    def project_sessions(self, project: str) -> list[str]:
        return [
            str(r[0])
            for r in self.conn.execute(
                "SELECT session_id FROM sessions WHERE project = ? ORDER BY session_id", (project,)
            )
        ]

    def places(self, session_id: str) -> list[tuple[str | None, str | None]]:
        """Each ``(project, cwd)`` the session's events were stored with."""
        rows = self.conn.execute(
            "SELECT DISTINCT project, cwd FROM events WHERE session_id = ? ORDER BY 1, 2",
            (session_id,),
        )
        return [(r[0], r[1]) for r in rows]

    def rekey(
        self, session_id: str, place: tuple[str | None, str | None], project: str | None
    ) -> None:
        """Store the session's events of ``place`` under ``project``, and the session
        under its events' project (the caller's transaction; derived rows follow when the
        session is derived again). Each event keeps its ``cwd``."""
        self.conn.execute(
            "UPDATE events SET project = ? WHERE session_id = ? AND project IS ? AND cwd IS ?",
            (project, session_id, *place),
        )
        self.conn.execute(
            "UPDATE sessions SET project = (SELECT max(coalesce(project, cwd)) FROM events "
            "WHERE session_id = ?1) WHERE session_id = ?1",
            (session_id,),
        )

    def lagging_sessions(self) -> list[str]:
        """Sessions with events past their extraction checkpoint."""
        rows = self.conn.execute(
            "SELECT session_id FROM checkpoints "
            "WHERE coalesce(last_extract_seq, -1) < last_event_seq ORDER BY session_id"
        )
        return [str(r[0]) for r in rows]

    def compaction_counts(self) -> dict[str, int]:
        rows = self.conn.execute(
            "SELECT type, count(*) FROM events WHERE type LIKE 'compaction/%' "
            "GROUP BY type ORDER BY type"
        )
        return {str(t): int(n) for t, n in rows}

    def latest_errors(self, limit: int = 10) -> list[dict[str, Any]]:
        rows = self.conn.execute(
            "SELECT id, at, stage, session_id, seq, message FROM error_log "
            "ORDER BY id DESC LIMIT ?",
            (limit,),
        )
        keys = ("id", "at", "stage", "session_id", "seq", "message")
        return [dict(zip(keys, row, strict=True)) for row in rows]


# One session's row as _session_dict reads it; the last column is the extraction lag.
_SELECT_SESSION = (
    "SELECT s.session_id, s.cwd, s.project, s.origin, s.first_time, s.last_time, "
    "c.last_event_seq, c.last_extract_seq, c.last_assembly_seq, "
    "(SELECT count(*) FROM events e WHERE e.session_id = s.session_id), "
    "(SELECT count(*) FROM pending_extraction p WHERE p.session_id = s.session_id), "
    "(SELECT count(*) FROM events e WHERE e.session_id = s.session_id "
    " AND e.seq > coalesce(c.last_extract_seq, -1)) "
    "FROM sessions s LEFT JOIN checkpoints c USING (session_id)"
)


def _session_dict(row: Sequence[Any]) -> dict[str, Any]:
    keys = (
        "session_id",
        "cwd",
        "project",
        "origin",
        "first_time",
        "last_time",
        "last_event_seq",
        "last_extract_seq",
        "last_assembly_seq",
        "events",
        "pending_extractions",
        # Events past the extraction checkpoint: what extraction has still to read.
        "extraction_lag",
    )
    return dict(zip(keys, row, strict=True))
