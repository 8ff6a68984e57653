"""Capture: idempotency, normalisation, the text cap, generated sources, privacy."""

from __future__ import annotations

import json
import random
import re

import pytest
from conftest import new_db
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memplug.base import events, vocab
from memplug.base.errors import ValidationError
from memplug.base.models import HostEvent, parse_event
from memplug.base.text import normalize_text, sha256_hex
from memplug.capture.transfer import export_lines
from memplug.memory import Memory

texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=200)


def event(session: str, seq: int, text: str, **fields: object) -> HostEvent:
    data = {"session_id": session, "seq": seq, "type": "user/message", "role": "user"}
    data.update(fields)
    data["text"] = text
    return parse_event(data)


def dump(memory: Memory) -> list[tuple[object, ...]]:
    rows = memory.db.conn.execute(
        "SELECT session_id, seq, type, text, content_hash, truncated FROM events ORDER BY 1, 2"
    )
    return [tuple(r) for r in rows]


@given(
    st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 30), texts), max_size=40),
    st.randoms(use_true_random=False),
)
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_replays_and_shuffled_duplicates_store_each_event_once(
    tmp_path_factory, specs, rnd
) -> None:
    unique = {}
    for session, seq, text in specs:
        unique.setdefault((session, seq), text)
    events = [event(s, q, t) for (s, q), t in sorted(unique.items())]
    path_once = tmp_path_factory.mktemp("once") / "m.sqlite"
    path_many = tmp_path_factory.mktemp("many") / "m.sqlite"
    with Memory.open(new_db(path_once)) as once:
        once.ingest(events)
        expected = dump(once)
    deliveries = events * 3
    rnd.shuffle(deliveries)
    with Memory.open(new_db(path_many)) as many:
        for start in range(0, len(deliveries), 7):
            many.ingest(deliveries[start : start + 7], bulk=start % 2 == 0)
        assert dump(many) == expected
        assert many.store.counts()["events"] == len(unique)
        fts = many.db.conn.execute("INSERT INTO events_fts(events_fts) VALUES ('integrity-check')")
        assert fts.fetchall() == []


@given(texts)
def test_normalisation_is_idempotent(text: str) -> None:
    once = normalize_text(text)
    assert normalize_text(once) == once
    assert "\r" not in once and "\x00" not in once
    # No line keeps trailing spaces or tabs, whichever path normalize_text took.
    assert not re.search(r"[ \t]$", once, re.MULTILINE)


@given(st.text(alphabet=" \t\r\nab\x7f"))
def test_normalisation_cuts_trailing_space_on_every_line(text: str) -> None:
    lines = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x7f", "").split("\n")
    assert normalize_text(text) == "\n".join(line.rstrip(" \t") for line in lines).strip()


def test_text_over_the_cap_is_truncated_and_archived(memory: Memory) -> None:
    long = "x" * 20_000 + "TAIL-MARKER" + "y" * 5_000
    result = memory.ingest([event("s", 1, long)])
    assert result.new == 1
    row = memory.store.events.get("s", 1)
    assert row is not None
    assert row.truncated == 1 and row.store == "archive"
    assert len(row.text) == 20_000 and "TAIL-MARKER" not in row.text
    assert row.text_chars == len(long)
    assert memory.store.events.full_text(row) == long
    assert row.content_hash == sha256_hex(long)
    exported = json.loads(next(export_lines(memory.store)))
    assert exported["text"] == long


def test_first_delivery_wins_and_later_differing_copies_are_ignored(memory: Memory) -> None:
    memory.ingest([event("s", 1, "the original")])
    result = memory.ingest([event("s", 1, "a different text for the same seq")])
    assert (result.new, result.present) == (0, 1)
    row = memory.store.events.get("s", 1)
    assert row is not None and row.text == "the original"


def test_generated_sources_are_flagged_but_kept(memory: Memory) -> None:
    memory.ingest(
        [
            event("s", 1, "typed by a person"),
            event("s", 2, "[memplug] evidence", source={"kind": "memplug", "form": "evidence"}),
            event("s", 3, "<system-reminder>today is Monday</system-reminder>"),
            parse_event(
                {
                    "session_id": "s",
                    "seq": 4,
                    "type": "compaction/summary",
                    "role": "system",
                    "text": "summary of earlier work",
                }
            ),
        ]
    )
    generated = {r[0]: r[1] for r in memory.db.conn.execute("SELECT seq, generated FROM events")}
    assert generated == {1: 0, 2: 1, 3: 1, 4: 1}


def test_thinking_is_kept_out_of_the_index_unless_configured(tmp_path) -> None:
    thinking = {
        "session_id": "s",
        "seq": 1,
        "type": "assistant/thinking",
        "role": "assistant",
        "text": "secret musings about quokkas",
    }
    for index_thinking, expected in ((False, 0), (True, 1)):
        path = tmp_path / f"t{index_thinking}" / "m.sqlite"
        with Memory.open(path, config={"capture": {"indexThinking": index_thinking}}) as memory:
            memory.ingest([parse_event(thinking)])
            hits = memory.db.conn.execute(
                "SELECT count(*) FROM events_fts WHERE events_fts MATCH '\"quokkas\"'"
            ).fetchone()[0]
            assert hits == expected
            assert memory.store.counts()["events"] == 1


def test_private_spans_never_reach_storage(memory: Memory) -> None:
    memory.ingest(
        [
            event("s", 1, "deploy key <private>hunter2-sapphire</private> is set"),
            parse_event(
                {
                    "session_id": "s",
                    "seq": 2,
                    "type": "user/message",
                    "content": [{"type": "text", "text": "x <private>opal-77</private> y"}],
                }
            ),
        ]
    )
    row = memory.store.events.get("s", 1)
    assert row is not None
    assert row.text == "deploy key [private] is set" and row.private_spans == 1
    exported = "".join(export_lines(memory.store))
    assert "hunter2" not in exported and "opal-77" not in exported
    hits = memory.db.conn.execute(
        'SELECT count(*) FROM events_fts WHERE events_fts MATCH \'"hunter2" OR "opal-77"\''
    ).fetchone()[0]
    assert hits == 0


def test_sessions_and_checkpoints_follow_capture(memory: Memory) -> None:
    order = list(range(1, 11))
    random.Random(3).shuffle(order)
    for seq in order:
        memory.ingest(
            [
                event(
                    "s",
                    seq,
                    f"line {seq}",
                    cwd="/home/ana/shop",
                    time=f"2026-01-0{1 + seq % 9}T10:00:00Z",
                )
            ]
        )
    session = memory.store.events.session("s")
    assert session is not None
    assert session["last_event_seq"] == 10
    assert session["project"] == "/home/ana/shop"
    assert session["first_time"] == "2026-01-01T10:00:00Z"
    assert session["last_time"] == "2026-01-09T10:00:00Z"


def test_a_session_left_unextracted_is_caught_up_by_the_next_capture(memory: Memory) -> None:
    with memory.db.write_transaction():
        memory.capture.capture(
            [event("a", 1, "Decision: we ship on Friday.")],
            origin="api",
            ingested_at="2026-01-01T00:00:00Z",
        )
    assert memory.store.counts()["memory_items"] == 0
    memory.ingest([event("b", 1, "unrelated small talk")])
    items = memory.db.conn.execute("SELECT session_id, kind FROM memory_items").fetchall()
    assert [tuple(r) for r in items] == [("a", "decision")]


def test_the_models_validate_against_the_vocabulary() -> None:
    """The Literals are written once, in vocab; the tuples are derived from them. What
    this pins is that the models validate by exactly those vocabularies."""
    assert (events.EventType, events.Role, events.Outcome) == (
        vocab.EventType,
        vocab.Role,
        vocab.Outcome,
    )
    base = {"session_id": "s", "seq": 1, "type": "user/message"}
    for field, values in (
        ("type", vocab.EVENT_TYPES),
        ("role", vocab.ROLES),
        ("outcome", vocab.OUTCOMES),
    ):
        for value in values:
            assert getattr(parse_event({**base, field: value}), field) == value
        with pytest.raises(ValidationError, match=field):
            parse_event({**base, field: "not-in-the-vocabulary"})


def test_the_schema_checks_and_the_vocabulary_agree(memory: Memory) -> None:
    """The one copy that cannot be derived: the migrations' CHECK constraints."""
    schema = " ".join(
        row[0]
        for row in memory.db.conn.execute(
            "SELECT sql FROM sqlite_master WHERE name IN ('memory_items', 'memory_events')"
        )
    )
    checks = {
        column: tuple(re.findall(r"'([^']*)'", values))
        for column, values in re.findall(r"CHECK \((\w+) IN\s*\(([^)]*)\)\)", schema)
    }
    assert checks["kind"] == vocab.MEMORY_KINDS
    assert checks["evidence_type"] == vocab.EVIDENCE_TYPES
    assert checks["status"] == vocab.ITEM_STATUSES
    assert checks["event"] == vocab.LIFECYCLE_EVENTS
