"""Helpers for extraction tests: host events in a line, and a full dump of derived state.

The dump is what "identical" means for a rebuild: every derived row and column, in a
fixed order. Only the row numbers SQLite hands out (``memory_items.rid``,
``memory_events.id``) are left out unless asked for, because they count insertions
across sessions: two databases that captured the same sessions interleaved differently
number their rows differently while holding the same state.
"""

from __future__ import annotations

from typing import Any

from memplug.base.models import HostEvent, parse_event
from memplug.memory import Memory
from memplug.store.items import ITEM_COLUMNS

BASE_TIME = "2026-03-02T09:{minute:02d}:{second:02d}Z"


def ev(
    session: str,
    seq: int,
    text: str,
    *,
    type: str = "user/message",
    role: str | None = None,
    **extra: Any,
) -> HostEvent:
    """A host event whose time follows from its seq (so order and time agree)."""
    if role is None:
        role = {"user/message": "user", "assistant/message": "assistant"}.get(type, "tool")
    data: dict[str, Any] = {
        "session_id": session,
        "seq": seq,
        "type": type,
        "role": role,
        "time": BASE_TIME.format(minute=seq // 60 % 60, second=seq % 60),
        "text": text,
        "cwd": "/home/ana/shop",
    }
    data.update(extra)
    return parse_event(data)


def conversation(session: str, *texts: str) -> list[HostEvent]:
    """User messages at seq 1, 2, …; a text starting ``A:`` is the assistant's."""
    out = []
    for seq, text in enumerate(texts, start=1):
        if text.startswith("A:"):
            out.append(ev(session, seq, text[2:].strip(), type="assistant/message"))
        else:
            out.append(ev(session, seq, text))
    return out


def dump(memory: Memory, *, row_numbers: bool = False) -> dict[str, list[tuple[Any, ...]]]:
    """Every derived row, in natural-key order."""
    conn = memory.db.conn
    columns = [c for c in ITEM_COLUMNS if row_numbers or c != "rid"]
    items = conn.execute(
        f"SELECT {', '.join(columns)} FROM memory_items ORDER BY session_id, id"
    ).fetchall()
    event_columns = "id, " if row_numbers else ""
    events = conn.execute(
        f"SELECT {event_columns}memory_id, session_id, event, at, actor, source_seq, detail_json "
        "FROM memory_events ORDER BY session_id, memory_id, id"
    ).fetchall()
    return {
        "memory_items": [tuple(r) for r in items],
        "memory_events": [tuple(r) for r in events],
        "task_state": [
            tuple(r) for r in conn.execute("SELECT * FROM task_state ORDER BY session_id")
        ],
        "checkpoints": [
            tuple(r)
            for r in conn.execute(
                "SELECT session_id, last_extract_seq FROM checkpoints ORDER BY session_id"
            )
        ],
        "timeline_entries": [
            tuple(r) for r in conn.execute("SELECT * FROM timeline_entries ORDER BY id")
        ],
        "graph_entities": [
            tuple(r)
            for r in conn.execute("SELECT * FROM graph_entities ORDER BY session_id, entity")
        ],
        "graph_edges": [
            tuple(r)
            for r in conn.execute(
                "SELECT * FROM graph_edges ORDER BY session_id, src, relation, dst"
            )
        ],
        "work_records": [
            tuple(r)
            for r in conn.execute(
                "SELECT session_id, seq, call_id, tool, action, target, result_seq, outcome, "
                "exit_code, turn, event_time, project, words FROM work_records "
                "ORDER BY session_id, seq"
            )
        ],
        "work_fts": [
            tuple(r)
            for r in conn.execute(
                "SELECT w.session_id, w.seq, f.target, f.words FROM work_fts f "
                "JOIN work_records w ON w.rid = f.rowid ORDER BY w.session_id, w.seq"
            )
        ],
        "memory_fts": [
            tuple(r)
            for r in conn.execute(
                "SELECT m.id, f.content FROM memory_fts f JOIN memory_items m ON m.rid = f.rowid "
                "ORDER BY m.id"
            )
        ],
    }


def without_row_numbers(full: dict[str, list[tuple[Any, ...]]]) -> dict[str, list[tuple[Any, ...]]]:
    """A ``dump(row_numbers=True)`` as ``dump()`` would have given it."""
    out = dict(full)
    out["memory_items"] = [row[1:] for row in full["memory_items"]]
    out["memory_events"] = [row[1:] for row in full["memory_events"]]
    return out


def statuses(memory: Memory, session: str | None = None) -> dict[str, str]:
    """``content → status`` for a session's items (content is unique in these tests)."""
    rows = memory.store.items.find(session_ids=[session] if session else None)
    return {row.content: row.status for row in rows}
