"""Saved transcript cursors, read with json and apsw alone.

A hook with nothing new to capture is most hooks: it reads one cursor row and stops.
This module is that read, kept apart from ``memplug.store.db`` and the stores (the package's
``__init__`` imports nothing) so the process pays for no other import (typing,
records, pathlib and re cost a hook more than its work; docs/claude-code.md), so it
cannot call ``memplug.store.db._configure`` and applies the part of it that bears on one
read-only SELECT: double-quoted strings are identifiers only, and a short lock wait of
its own. The rest concerns writers (WAL, synchronous, secure_delete, foreign keys,
triggers) or many page reads (mmap), and a one-row read has neither.
``tests/test_architecture.py`` keeps these two the only places that open a connection.
"""

from __future__ import annotations

import json

import apsw

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

# A writer holding the lock briefly is waited for; a long one means "look again later".
PEEK_WAIT_MS = 200


def saved_positions(path: str, session_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``session_id → cursor state`` of saved cursors, read without migrating.

    A database that is missing, older than this table or unreadable answers with
    nothing, which a hook reads as "something may be new".
    """
    marks = ", ".join("?" for _ in session_ids)
    rows = _select(
        path,
        f"SELECT session_id, state_json FROM host_cursors WHERE session_id IN ({marks})",
        tuple(session_ids),
    )
    try:
        return {str(session_id): json.loads(state) for session_id, state in rows or ()}
    except ValueError:
        return {}


def lagging_derivation(path: str, session_ids: Sequence[str]) -> bool:
    """Whether any of ``session_ids`` has events past its extraction checkpoint: a tool
    hook captured them and left their derivation to the next prompt or Stop. An
    unreadable database answers True ("look"), like a missing cursor."""
    marks = ", ".join("?" for _ in session_ids)
    rows = _select(
        path,
        "SELECT 1 FROM checkpoints WHERE coalesce(last_extract_seq, -1) < last_event_seq "
        f"AND session_id IN ({marks}) LIMIT 1",
        tuple(session_ids),
    )
    return rows is None or bool(rows)


def _select(path: str, sql: str, args: tuple[str, ...]) -> list[tuple[Any, ...]] | None:
    """The rows of one read-only query; None when the file cannot answer it."""
    try:
        conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
    except apsw.Error:
        return None
    try:
        conn.set_busy_timeout(PEEK_WAIT_MS)
        conn.config(apsw.SQLITE_DBCONFIG_DQS_DML, 0)
        conn.config(apsw.SQLITE_DBCONFIG_DQS_DDL, 0)
        return list(conn.execute(sql, args))
    except apsw.Error:
        return None
    finally:
        conn.close()
