"""This machine's side of team memory (docs/sync.md), in the SQLite file: the server's
address and this machine's origin id, shared projects and how far each was pushed, the
pull cursors, sessions that came from the server, tombstones and kept-apart conflicts.

The server side is :mod:`memplug.sync.postgres`; :mod:`memplug.sync.exchange` moves rows
between the two.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from memplug.base.clock import utc_now
from memplug.base.refs import session_key
from memplug.store.db import Database
from memplug.store.events import EVENT_COLUMNS
from memplug.store.records import EventRow, Remote, SharedProject, Tombstone

# Local events of a shared project that were never pushed: not pulled from the server.
_UNPUSHED = (
    "FROM events e JOIN sessions s ON s.session_id = e.session_id "
    "WHERE s.project = ? AND e.id > ? "
    "AND e.session_id NOT IN (SELECT session_id FROM sync_pulled)"
)


class SyncStore:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.conn = db.conn

    # -- the remote --------------------------------------------------------------------

    def remote(self) -> Remote | None:
        row = self.conn.execute(
            "SELECT url, origin, pull_cursor, tombstone_cursor, created_at, last_sync_at "
            "FROM sync_remote WHERE id = 1"
        ).fetchone()
        return Remote(*row) if row else None

    def set_remote(self, url: str, origin: str) -> None:
        """Point at a server, which is then read and written from its start: both pull
        cursors and every project's push mark begin again (capture and the server skip
        what they already hold)."""
        self.conn.execute("UPDATE sync_projects SET pushed_id = 0")
        self.conn.execute(
            "INSERT INTO sync_remote (id, url, origin, created_at) VALUES (1, ?, ?, ?) "
            "ON CONFLICT (id) DO UPDATE SET url = excluded.url, origin = excluded.origin, "
            "pull_cursor = '0:0', tombstone_cursor = '0:0', created_at = excluded.created_at",
            (url, origin, utc_now()),
        )

    def set_cursors(
        self, *, pull: str | None = None, tombstones: str | None = None, synced: bool = False
    ) -> None:
        if pull is not None:
            self.conn.execute("UPDATE sync_remote SET pull_cursor = ? WHERE id = 1", (pull,))
        if tombstones is not None:
            self.conn.execute(
                "UPDATE sync_remote SET tombstone_cursor = ? WHERE id = 1", (tombstones,)
            )
        if synced:
            self.conn.execute("UPDATE sync_remote SET last_sync_at = ? WHERE id = 1", (utc_now(),))

    # -- shared projects ---------------------------------------------------------------

    def share(self, project: str) -> bool:
        """Share ``project``; False when it already was."""
        self.conn.execute(
            "INSERT OR IGNORE INTO sync_projects (project, shared_at) VALUES (?, ?)",
            (project, utc_now()),
        )
        return int(self.conn.changes()) > 0

    def unshare(self, project: str) -> bool:
        self.conn.execute("DELETE FROM sync_projects WHERE project = ?", (project,))
        return int(self.conn.changes()) > 0

    def projects(self) -> list[SharedProject]:
        rows = self.conn.execute(
            "SELECT project, pushed_id, shared_at FROM sync_projects ORDER BY project"
        ).fetchall()
        found = []
        for project, pushed, shared_at in rows:
            pushed = cast(int, pushed)
            unpushed = self.unpushed(str(project), pushed)
            found.append(SharedProject(str(project), pushed, str(shared_at), unpushed))
        return found

    def unpushed(self, project: str, after_id: int) -> int:
        row = self.conn.execute(f"SELECT count(*) {_UNPUSHED}", (project, after_id)).fetchone()
        return int(row[0]) if row else 0

    def unpushed_events(
        self, project: str, after_id: int, limit: int
    ) -> list[tuple[EventRow, float | None]]:
        """The next ``limit`` unpushed events of ``project`` in ``events.id`` order, each
        with its time as a Unix time, computed as ``memory purge --before`` compares it."""
        columns = ", ".join(f"e.{name}" for name in ("id", *EVENT_COLUMNS))
        rows = self.conn.execute(
            f"SELECT {columns}, unixepoch(e.event_time, 'subsec') {_UNPUSHED} "
            "ORDER BY e.id LIMIT ?",
            (project, after_id, limit),
        )
        return [(EventRow(*row[:-1]), row[-1]) for row in rows]

    def set_pushed(self, project: str, event_id: int) -> None:
        self.conn.execute(
            "UPDATE sync_projects SET pushed_id = max(pushed_id, ?) WHERE project = ?",
            (event_id, project),
        )

    # -- sessions from the server ------------------------------------------------------

    def mark_pulled(self, sessions: Sequence[tuple[str, str]]) -> None:
        """``(session_id, origin)`` pairs that came from the server."""
        self.conn.executemany(
            "INSERT OR IGNORE INTO sync_pulled (session_id, origin) VALUES (?, ?)", sessions
        )

    def _pulled_sessions(self, session_ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for session_id in session_ids:
            if self.conn.execute(
                "SELECT 1 FROM sync_pulled WHERE session_id = ?", (session_id,)
            ).fetchone():
                found.add(session_id)
        return found

    def _shared_sessions(self, session_ids: Sequence[str] | None) -> list[str]:
        """Of ``session_ids`` (None: every session), those that are on the server's side:
        pulled from it, or of a shared project."""
        rows = self.conn.execute(
            "SELECT session_id FROM sync_pulled UNION "
            "SELECT s.session_id FROM sessions s JOIN sync_projects p ON p.project = s.project "
            "ORDER BY 1"
        )
        shared = [str(r[0]) for r in rows]
        if session_ids is None:
            return shared
        wanted = set(session_ids)
        return [s for s in shared if s in wanted]

    # -- tombstones --------------------------------------------------------------------

    def _add_tombstones(self, keys: Sequence[str], before_epoch: float | None) -> None:
        now = utc_now()
        self.conn.executemany(
            "INSERT INTO sync_tombstones (session_key, before_epoch, state, created_at) "
            "VALUES (?, ?, 'outbox', ?)",
            [(key, before_epoch, now) for key in keys],
        )

    def record_purge(self, session_ids: Sequence[str] | None, before_epoch: float | None) -> int:
        """Tombstones for the shared ones of the sessions a purge removes (None: all), in
        the purge's own transaction: the server hears of it on the next `memory sync`."""
        remote = self.remote()
        if remote is None:
            return 0
        shared = self._shared_sessions(session_ids)
        pulled = self._pulled_sessions(shared)
        keys = [session_key(s, remote.origin, s in pulled) for s in shared]
        self._add_tombstones(keys, before_epoch)
        return len(keys)

    def outbox(self) -> list[Tombstone]:
        rows = self.conn.execute(
            "SELECT id, session_key, before_epoch FROM sync_tombstones "
            "WHERE state = 'outbox' ORDER BY id"
        )
        return [Tombstone(int(i), str(k), None if b is None else float(b)) for i, k, b in rows]

    def mark_sent(self, ids: Sequence[int]) -> None:
        self.conn.executemany(
            "UPDATE sync_tombstones SET state = 'sent' WHERE id = ?", [(i,) for i in ids]
        )

    # -- conflicts ---------------------------------------------------------------------

    def add_conflict(
        self, session_id: str, seq: int, origin: str, content_hash: str, body: str
    ) -> bool:
        self.conn.execute(
            "INSERT OR IGNORE INTO sync_conflicts "
            "(session_id, seq, origin, content_hash, body, found_at) VALUES (?, ?, ?, ?, ?, ?)",
            (session_id, seq, origin, content_hash, body, utc_now()),
        )
        return int(self.conn.changes()) > 0

    def summary(self) -> dict[str, Any]:
        """Counts for `memory status`."""

        def count(sql: str) -> int:
            row = self.conn.execute(sql).fetchone()
            return int(row[0]) if row else 0

        return {
            "pulled_sessions": count("SELECT count(*) FROM sync_pulled"),
            "conflicts": count("SELECT count(*) FROM sync_conflicts"),
            "tombstones_to_send": count(
                "SELECT count(*) FROM sync_tombstones WHERE state = 'outbox'"
            ),
        }
