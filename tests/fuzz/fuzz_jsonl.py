"""Fuzz target: one generic-JSONL line through the parser, capture and export.

Invariants: a line is an event or a one-line ValidationError; an event becomes an
``events`` row that SQLite accepts (in a rolled-back savepoint of a real file); its
export parses back to the same identity and text.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from memplug.base.clock import utc_now
from memplug.base.config import CaptureConfig
from memplug.base.errors import ValidationError
from memplug.capture.append import EventRows, event_to_json
from memplug.capture.jsonl import dump_line, parse_line
from memplug.store.db import Database
from memplug.store.sqlite import Store

SEEDS: tuple[bytes, ...] = (
    b'{"session_id": "s1", "seq": 7, "type": "user/message", "role": "user", '
    b'"time": "2026-01-05T10:00:00Z", "turn": 3, "text": "Decision: we ship on Friday."}',
    b'{"session_id": "s1", "seq": 8, "type": "tool/result", "role": "tool", "tool_name": "bash", '
    b'"call_id": "c4", "outcome": "failed", "is_error": true, '
    b'"content": [{"type": "text", "text": "exit 1: port 8080 in use"}]}',
    b'{"session_id": "s", "seq": 1, "type": "user/message", "text": "a <private>x</private> b", '
    b'"source": {"kind": "user", "form": "prompt"}, "extra": {"k": [1, 2, {"z": null}]}}',
    b'{"session_id": "\\u7aef", "seq": 0, "type": "compaction/summary", "text": "\\ud83d\\ude00"}',
    b"\xef\xbb\xbf{}",
    b"[[[[[[[[[[]]]]]]]]]]",
)

_DIR = tempfile.mkdtemp(prefix="memplug-fuzz-jsonl-")
_DB = Database.open(Path(_DIR) / "m.sqlite")
_STORE = Store(_DB)
_ROWS = EventRows(CaptureConfig())


def test_one_input(data: bytes) -> None:
    try:
        event = parse_line(data)
    except ValidationError as error:
        message = str(error)
        assert message and "\n" not in message, repr(message)
        return
    row, archived = _ROWS.row(event)
    conn = _DB.conn
    conn.execute("SAVEPOINT fuzz")
    try:
        _STORE.events.insert(
            [row], [archived] if archived else [], origin="fuzz", ingested_at=utc_now()
        )
        stored = _STORE.events.get(event.session_id, event.seq)
        assert stored is not None
        exported = dump_line(event_to_json(stored, _STORE.events.full_text(stored)))
    finally:
        conn.execute("ROLLBACK TO fuzz")
        conn.execute("RELEASE fuzz")
    again = parse_line(exported.encode("utf-8"))
    assert (again.session_id, again.seq, again.type) == (event.session_id, event.seq, event.type)
    assert _ROWS.row(again)[0].text == row.text, "text changed through export"
    json.loads(exported)
