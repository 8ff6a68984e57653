"""The event record's own check (``memplug.base.events.parse_event``): what it accepts, what it
keeps verbatim, and the one-line reason it gives for what it refuses."""

from __future__ import annotations

from typing import Any

import pytest

from memplug.base.errors import ValidationError
from memplug.base.events import HostEvent, parse_event

BASE = {"session_id": "s", "seq": 1, "type": "user/message"}


def parsed(**fields: Any) -> HostEvent:
    return parse_event({**BASE, **fields})


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("2026-01-05T10:00:00Z", "2026-01-05T10:00:00Z"),
        ("2026-01-05 10:00:00+01:00", "2026-01-05T09:00:00Z"),
        ("2026-01-05", "2026-01-05T00:00:00Z"),
        ("2026-01-05T10:00:00.123456789Z", "2026-01-05T10:00:00.123456Z"),
        (1_767_607_200, "2026-01-05T10:00:00Z"),
    ],
)
def test_a_time_is_read_in_each_spelling_a_host_writes(given: object, stored: str) -> None:
    assert parsed(time=given).time_text() == stored


def test_fields_the_protocol_does_not_name_are_kept_verbatim_in_events_and_blocks() -> None:
    event = parsed(
        tool_input={"path": "a.py"},
        content=[{"type": "text", "text": "hi", "cache": {"ttl": 5}}, {"type": "image"}],
    )
    assert event.extra() == {"tool_input": {"path": "a.py"}}
    assert event.content is not None
    assert [block.as_dict() for block in event.content] == [
        {"type": "text", "text": "hi", "cache": {"ttl": 5}},
        {"type": "image"},
    ]
    assert event.raw_text() == "hi"


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"seq": "x"}, "field 'seq' expected int (got \"x\")"),
        ({"seq": -1}, "field 'seq' expected int >= 0 (got -1)"),
        ({"seq": True}, "field 'seq' expected int (got true)"),
        ({"session_id": "  "}, "field 'session_id' must not be blank (got \"  \")"),
        ({"is_error": 1}, "field 'is_error' expected bool or null (got 1)"),
        ({"content": "oops"}, "field 'content' expected array or null (got \"oops\")"),
        ({"content": [{"text": "no type"}]}, "missing required field 'content[0].type'"),
        ({"source": {"kind": "user", "who": "me"}},
         "field 'source' holds \"who\", which is not a source field"),
        ({"time": "yesterday"},
         "field 'time' invalid RFC3339 encoded datetime (got \"yesterday\")"),
    ],
)  # fmt: skip
def test_each_refusal_names_the_field_the_problem_and_the_value(
    fields: dict[str, Any], error: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        parsed(**fields)
    assert str(caught.value) == error


def test_the_vocabularies_are_listed_when_a_value_is_outside_them() -> None:
    with pytest.raises(ValidationError) as caught:
        parsed(type="user/shout")
    message = str(caught.value)
    assert message.startswith("field 'type' must be one of 'user/message', ")
    assert message.endswith(' (got "user/shout")')
