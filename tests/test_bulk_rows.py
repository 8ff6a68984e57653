"""A large import's rows made in a second process: the database is the one reading
in-process makes, rejections and their line numbers included, even when that process
fails."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from derived_state import dump

from memplug.capture import bulk_rows
from memplug.memory import Memory

IN_PROCESS = 1 << 62


def _source(path: Path) -> Path:
    """Three sessions' events interleaved, with the lines an import must reject or skip
    at chunk edges (chunks of 7 lines below)."""
    lines: list[str] = []
    for i in range(90):
        session, seq = f"s{i % 3}", i // 3 + 1
        kind = ("user/message", "assistant/message", "tool/call", "tool/result")[seq % 4]
        event: dict[str, Any] = {
            "session_id": session,
            "seq": seq,
            "type": kind,
            "role": {"user/message": "user", "tool/result": "tool"}.get(kind, "assistant"),
            "time": f"2026-03-02T09:{seq:02d}:00Z",
            "text": f"We decided to keep the pool at {seq} for service{i} in src/app{i}.py",
            "cwd": "/home/ana/shop",
        }
        if kind.startswith("tool/"):
            event.update(tool_name="Bash", call_id=f"call-{session}-{seq // 4}")
        lines.append(json.dumps(event))
    lines[6] = "{not json"  # the last line of the first chunk
    lines[7] = ""  # the first of the second, blank
    lines[20] = json.dumps({"session_id": "s9", "seq": -1, "type": "user/message"})
    lines.append(lines[40])  # a duplicate, present once
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _imported(tmp_path: Path, name: str, source: Path) -> tuple[dict[str, Any], Any]:
    with Memory.open(tmp_path / f"{name}.sqlite") as memory:
        with source.open("rb") as stream:
            summary = memory.import_jsonl([(source.name, stream)])
        state = dump(memory)
        events = memory.db.conn.execute("SELECT * FROM events ORDER BY session_id, seq").fetchall()
    # The time a row was taken in is each batch's own.
    return summary.as_dict(), (state, [row[:-1] for row in events])


@pytest.fixture
def chunked(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Small chunks and no size floor; the second processes started, as (path, start)."""
    started: list[tuple[str, int]] = []
    command = bulk_rows.child_command

    def recorded(path: str, start: int) -> list[str]:
        started.append((path, start))
        return command(path, start)

    monkeypatch.setattr(bulk_rows, "CHUNK_LINES", 7)
    monkeypatch.setattr(bulk_rows, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(bulk_rows, "child_command", recorded)
    return started


def test_a_second_process_makes_the_rows_reading_in_process_makes(
    tmp_path: Path, chunked: list[tuple[str, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    source = _source(tmp_path / "big.jsonl")
    there = _imported(tmp_path, "there", source)
    assert chunked == [(str(source), 0)]
    monkeypatch.setattr(bulk_rows, "PARALLEL_MIN_BYTES", IN_PROCESS)
    here = _imported(tmp_path, "here", source)
    assert len(chunked) == 1
    assert there == here
    summary = here[0]
    assert [r["line"] for r in summary["rejected"]] == [7, 21]
    assert (summary["new"], summary["present"]) == (87, 1)


# Each stands in for the second process: it cannot start, ends at once, or is cut off
# in the middle of what it writes.
FAILURES = {
    "cannot start": ["/nonexistent/python3"],
    "exits at once": [sys.executable, "-c", "import sys; sys.exit(3)"],
    "cut off midway": [
        sys.executable,
        "-c",
        "import subprocess, sys\n"
        "out = subprocess.run([sys.executable, '-m', 'memplug.capture.bulk_rows', *sys.argv[1:]],"
        " stdin=sys.stdin, capture_output=True).stdout\n"
        "sys.stdout.buffer.write(out[: len(out) // 2])",
    ],
}


@pytest.mark.parametrize("failure", sorted(FAILURES))
def test_an_import_whose_second_process_fails_is_whole(
    tmp_path: Path, chunked: list[tuple[str, int]], monkeypatch: pytest.MonkeyPatch, failure: str
) -> None:
    source = _source(tmp_path / "big.jsonl")
    monkeypatch.setattr(bulk_rows, "PARALLEL_MIN_BYTES", IN_PROCESS)
    here = _imported(tmp_path, "here", source)
    monkeypatch.setattr(bulk_rows, "PARALLEL_MIN_BYTES", 0)
    stand_in = FAILURES[failure]
    monkeypatch.setattr(
        bulk_rows, "child_command", lambda path, start: [*stand_in, path, str(start)]
    )
    assert _imported(tmp_path, "there", source) == here


def test_a_pipe_or_a_small_file_is_read_in_process(
    tmp_path: Path, chunked: list[tuple[str, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    source = _source(tmp_path / "small.jsonl")
    monkeypatch.setattr(bulk_rows, "PARALLEL_MIN_BYTES", source.stat().st_size + 1)
    _imported(tmp_path, "small", source)
    assert chunked == []


def _checkpointers() -> list[Any]:
    import threading

    from memplug.store.db import CHECKPOINT_THREAD

    return [t for t in threading.enumerate() if t.name == CHECKPOINT_THREAD]


def test_the_wal_is_copied_back_beside_the_writer_and_the_thread_ends(tmp_path: Path) -> None:
    import apsw

    from memplug.store.db import WAL_AUTOCHECKPOINT, Database

    db = tmp_path / "m.sqlite"
    with Memory.open(db) as memory:
        with open(_source(tmp_path / "events.jsonl"), "rb") as stream:
            summary = memory.import_jsonl([("events.jsonl", stream)])
        assert summary.new > 0 and not _checkpointers()
    # Folded back at the end: nothing lingers in the WAL, and the file is whole.
    wal = db.with_name("m.sqlite-wal")
    assert not wal.exists() or wal.stat().st_size == 0
    conn = apsw.Connection(str(db))
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.close()
    # Closed without a checkpoint (an interrupted import), the thread ends too, and the
    # connection checkpoints on its own again until then.
    database = Database.open(db)
    database.for_bulk_writes()
    assert len(_checkpointers()) == 1
    assert database.conn.execute("PRAGMA wal_autocheckpoint").fetchall() == [(0,)]
    database.checkpoint()
    assert not _checkpointers()
    assert database.conn.execute("PRAGMA wal_autocheckpoint").fetchall() == [(WAL_AUTOCHECKPOINT,)]
    database.for_bulk_writes()
    database.close()
    assert not _checkpointers()
