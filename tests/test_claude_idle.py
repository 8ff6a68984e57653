"""The idle probe a Claude Code hook runs first (memplug.hosts.claude_idle): it says
"nothing new" only where the full hook would do nothing, and it reads the same cursor
rule the hook does."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from memplug.hosts import claude_hook
from memplug.hosts.claude_idle import TOOL_BACKLOG_BYTES, due, nothing_new, unread
from memplug.store.peek import saved_positions

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "claude_code"
SID = "5e1f0c2a-7b3d-4e8f-9a10-c0ffee000001"


@pytest.fixture
def captured(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """A database whose Stop hook read the fixture session to its end."""
    project = tmp_path / "projects" / "-home-ana-shop"
    shutil.copytree(FIXTURES, project)
    db = tmp_path / "m.sqlite"
    payload = {"session_id": SID, "transcript_path": str(project / f"{SID}.jsonl")}
    report = claude_hook.handle({**payload, "hook_event_name": "Stop"}, db_path=str(db))
    assert report.opened and report.captured and not report.errors
    return db, payload


def probe(db: Path, payload: Any) -> bool:
    return nothing_new(json.dumps(payload).encode(), str(db), saved_positions)


def test_a_tool_hook_on_a_transcript_read_to_its_end_is_idle(
    captured: tuple[Path, dict[str, Any]],
) -> None:
    db, payload = captured
    for event in ("PostToolUse", "PostToolUseFailure"):
        assert probe(db, {**payload, "hook_event_name": event})
        # ... and the full hook agrees: it opens nothing and answers nothing.
        report = claude_hook.handle({**payload, "hook_event_name": event}, db_path=str(db))
        assert (report.opened, report.output, report.errors) == (False, None, [])


@pytest.mark.parametrize(
    "change",
    [
        {"hook_event_name": "PreToolUse"},  # a precondition may answer
        {"hook_event_name": "UserPromptSubmit", "prompt": "x"},  # always answers
        {"hook_event_name": "Stop"},  # flushes, and reads subagent files
        {"hook_event_name": "Nonsense"},  # the hook records it
        {"hook_event_name": "PostToolUse", "session_id": "other"},  # no cursor yet
        {"hook_event_name": "PostToolUse", "session_id": ""},
        {"hook_event_name": "PostToolUse", "session_id": 7},
        {"hook_event_name": "PostToolUse", "transcript_path": None},
        {"hook_event_name": "PostToolUse", "transcript_path": "/nowhere/t.jsonl"},
        {"hook_event_name": "PostToolUse", "transcript_path": "bad\0path"},
    ],
)
def test_anything_else_is_left_to_the_hook(
    captured: tuple[Path, dict[str, Any]], change: dict[str, Any]
) -> None:
    db, payload = captured
    assert not probe(db, {**payload, **change})


def test_a_backlog_past_the_bound_or_another_database_is_not_idle(
    captured: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    db, payload = captured
    idle = {**payload, "hook_event_name": "PostToolUse"}
    assert probe(db, idle)
    assert not probe(tmp_path / "missing.sqlite", idle)
    (tmp_path / "empty.sqlite").write_bytes(b"")
    assert not probe(tmp_path / "empty.sqlite", idle)  # no host_cursors table
    with open(payload["transcript_path"], "a", encoding="utf-8") as transcript:
        transcript.write("\n")
    assert probe(db, idle)  # a few new lines wait for the turn's end
    with open(payload["transcript_path"], "a", encoding="utf-8") as transcript:
        transcript.write("\n" * TOOL_BACKLOG_BYTES)
    assert not probe(db, idle)


def test_the_tool_hook_rule() -> None:
    saved = {"offset": 100, "seen": 100}
    assert not due(100, saved, False, "PostToolUse")
    assert not due(100 + TOOL_BACKLOG_BYTES, saved, False, "PostToolUse")
    assert due(101 + TOOL_BACKLOG_BYTES, saved, False, "PostToolUseFailure")
    assert due(101, saved, False, "Stop") and due(101, saved, True, "UserPromptSubmit")
    assert due(90, saved, False, "PostToolUse")  # rewritten or truncated: read it now
    assert due(10, None, False, "PostToolUse")  # a session's first hook reads it


@pytest.mark.parametrize("stdin", [b"", b"not json", b"\xff\xfe", b"[]", b'"x"', b"[" * 100_000])
def test_a_payload_that_is_not_a_json_object_is_left_to_the_hook(
    captured: tuple[Path, dict[str, Any]], stdin: bytes
) -> None:
    db, _ = captured
    assert not nothing_new(stdin, str(db), saved_positions)


def test_the_cursor_rule() -> None:
    saved = {"offset": 80, "seen": 100}
    assert not unread(100, saved, final=False)  # a held message waits for the turn's end
    assert unread(100, saved, final=True)  # ... and is flushed then
    assert unread(120, saved, final=False)
    assert unread(90, saved, final=False)  # rewritten or truncated: the reader decides
    assert not unread(100, {"offset": 100, "seen": 100}, final=True)
    assert unread(100, None, final=False)


def test_the_cli_stops_an_idle_hook_before_the_hook_module(
    captured: tuple[Path, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the console script's function: nothing printed, the full hook not called."""
    import io
    import sys

    from memplug import cli

    db, payload = captured
    called: list[bytes] = []
    monkeypatch.setattr(claude_hook, "main", lambda stdin, **_: called.append(stdin) or "")
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    for event, expected in (("PostToolUse", 0), ("PreToolUse", 1)):
        stdin = json.dumps({**payload, "hook_event_name": event}).encode()
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
        assert cli.main(["--db", str(db), "hook", "claude-code"]) is None
        assert len(called) == expected
    assert called == [json.dumps({**payload, "hook_event_name": "PreToolUse"}).encode()]
    assert out.getvalue() == ""
