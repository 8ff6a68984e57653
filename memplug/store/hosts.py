"""SQL for host transcripts: the read cursor of each one and its record links."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from memplug.base.clock import utc_now
from memplug.store.db import Database

# SQLite's default limit on bound parameters is far above this; batches keep IN lists short.
_BATCH = 500


class HostStore:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.conn = db.conn

    def cursor(self, session_id: str) -> dict[str, Any] | None:
        """The saved reader state of a transcript, or None when it was never read."""
        row = self.conn.execute(
            "SELECT state_json FROM host_cursors WHERE session_id = ?", (session_id,)
        ).fetchone()
        return json.loads(row[0]) if row else None

    def cursors(self) -> list[dict[str, Any]]:
        rows = self.conn.execute(
            "SELECT session_id, host, path, byte_offset, updated_at FROM host_cursors "
            "ORDER BY session_id"
        )
        keys = ("session_id", "host", "path", "byte_offset", "updated_at")
        return [dict(zip(keys, row, strict=True)) for row in rows]

    def save_cursor(
        self, session_id: str, host: str, path: str, offset: int, state: Mapping[str, Any]
    ) -> None:
        """Must run inside the write transaction that stored the events read."""
        self.conn.execute(
            "INSERT INTO host_cursors (session_id, host, path, byte_offset, state_json, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET"
            " host = excluded.host, path = excluded.path, byte_offset = excluded.byte_offset,"
            " state_json = excluded.state_json, updated_at = excluded.updated_at",
            (session_id, host, path, offset, json.dumps(state, sort_keys=True), utc_now()),
        )

    def save_links(self, session_id: str, links: Mapping[str, str | None]) -> None:
        """Keep links that name another entry; an event's own id is found in ``events``."""
        rows = [(session_id, uuid, entry) for uuid, entry in links.items() if entry != uuid]
        self.conn.executemany(
            "INSERT OR IGNORE INTO host_links (session_id, uuid, entry_id) VALUES (?, ?, ?)", rows
        )

    def resolve(self, session_id: str, uuids: Sequence[str]) -> dict[str, str | None]:
        """``uuid → entry_id`` for the uuids already read in this session."""
        found: dict[str, str | None] = {}
        for start in range(0, len(uuids), _BATCH):
            batch = list(uuids[start : start + _BATCH])
            marks = ", ".join("?" for _ in batch)
            for uuid, entry in self.conn.execute(
                f"SELECT uuid, entry_id FROM host_links WHERE session_id = ? AND uuid IN ({marks})",
                (session_id, *batch),
            ):
                found[str(uuid)] = None if entry is None else str(entry)
            rest = [u for u in batch if u not in found]
            if rest:
                marks = ", ".join("?" for _ in rest)
                for (entry,) in self.conn.execute(
                    f"SELECT DISTINCT entry_id FROM events WHERE session_id = ? "
                    f"AND entry_id IN ({marks})",
                    (session_id, *rest),
                ):
                    found[str(entry)] = str(entry)
        return found

    def context_events(self, session_id: str, max_chars: int) -> list[dict[str, Any]]:
        """The session's events since its latest compaction, newest first, up to
        ``max_chars`` of text: what the model can still see, at most."""
        row = self.conn.execute(
            "SELECT max(seq) FROM events WHERE session_id = ? AND type = 'compaction/start'",
            (session_id,),
        ).fetchone()
        start = row[0] if row and row[0] is not None else -1
        events: list[dict[str, Any]] = []
        total = 0
        cursor = self.conn.execute(
            "SELECT seq, type, role, text, source_kind, entry_id, parent_id, call_id, extra_json"
            " FROM events WHERE session_id = ? AND seq >= ? ORDER BY seq DESC",
            (session_id, start),
        )
        for seq, etype, role, text, source_kind, entry, parent, call_id, extra in cursor:
            total += len(text)
            if total > max_chars and events:
                break
            event: dict[str, Any] = {"seq": seq, "type": etype, "role": role, "text": text}
            event.update(source_kind=source_kind, entry_id=entry, parent_id=parent)
            event["call_id"] = call_id
            event["is_sidechain"] = bool(
                extra and "is_sidechain" in extra and json.loads(extra).get("is_sidechain")
            )
            events.append(event)
        events.reverse()
        return events
