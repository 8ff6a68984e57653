"""One table of harness markers: user-role text that begins with one is generated, in
capture, in assembly's reading of the model's context and in the Claude Code reader."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from memplug.base.config import CaptureConfig
from memplug.base.models import Message, parse_event
from memplug.base.vocab import (
    GENERATED_SOURCE_KINDS,
    GENERATED_TEXT_MARKERS,
    GENERATED_TEXT_PREFIXES,
)
from memplug.capture.append import EventRows
from memplug.hosts import claude_code as cc
from memplug.recall.assemble import is_generated_message

MARKERS = [marker for marker, _ in GENERATED_TEXT_MARKERS]

# Each of the three lists this table replaced held markers the others lacked; the
# union is the rule. One marker that only each former list had:
FORMERLY_ONLY_IN = {
    "capture and assembly": "<command-message>",
    "the Claude Code reader": "[Request interrupted by user",
}


def test_the_table_is_the_union_of_the_former_lists() -> None:
    for marker in FORMERLY_ONLY_IN.values():
        assert marker in GENERATED_TEXT_PREFIXES
    assert tuple(MARKERS) == GENERATED_TEXT_PREFIXES
    assert len(set(MARKERS)) == len(MARKERS)


@pytest.mark.parametrize("marker", MARKERS)
def test_capture_marks_user_text_with_a_marker_generated(marker: str) -> None:
    capture = EventRows(CaptureConfig())
    text = f"{marker} and then some words"
    event = parse_event(
        {"session_id": "s", "seq": 1, "type": "user/message", "role": "user", "text": text}
    )
    assert capture.is_generated(event, text)
    plain = parse_event({**msgspec.to_builtins(event), "text": "typed by a person"})
    assert not capture.is_generated(plain, "typed by a person")


@pytest.mark.parametrize("marker", MARKERS)
def test_assembly_never_takes_marked_user_text_as_the_task(marker: str) -> None:
    assert is_generated_message(Message(role="user", text=f"  {marker} and more"), frozenset())
    assert not is_generated_message(Message(role="user", text="typed by a person"), frozenset())


@pytest.mark.parametrize("marker", MARKERS)
def test_the_claude_code_reader_records_marked_user_text_as_host_generated(
    marker: str, tmp_path: Path
) -> None:
    records = [
        {"type": "user", "uuid": f"u{n}", "parentUuid": f"u{n - 1}" if n else None,
         "sessionId": "s", "timestamp": "2026-03-02T09:00:00Z",
         "message": {"role": "user", "content": text}}
        for n, text in enumerate([f"{marker} and then some words", "typed by a person"])
    ]  # fmt: skip
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    marked, typed = cc.read_all(path).events
    assert marked["source"]["kind"] in GENERATED_SOURCE_KINDS
    assert typed["source"]["kind"] not in GENERATED_SOURCE_KINDS
