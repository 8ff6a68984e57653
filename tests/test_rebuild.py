"""`memory rebuild` and replay: derived state is a function of events and actions only.

"Identical" is checked on full dumps of every derived row (see derived_state.dump):
after a rebuild, after replaying the same events in another delivery order, in other
batch sizes and with duplicate deliveries.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from conftest import SESSIONS, new_db
from derived_state import conversation, dump, ev, statuses, without_row_numbers
from freezegun import freeze_time
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memplug.base.errors import NotFound
from memplug.base.models import HostEvent, parse_event
from memplug.memory import Memory

FIXTURES = ("shop.jsonl", "shop2.jsonl", "other_project.jsonl", "branches.jsonl")


def fixture_events(name: str) -> list[HostEvent]:
    with open(SESSIONS / name, encoding="utf-8") as stream:
        return [parse_event(json.loads(line)) for line in stream]


def all_fixture_events() -> list[HostEvent]:
    return [event for name in FIXTURES for event in fixture_events(name)]


@pytest.fixture
def fixtures_memory(memory: Memory) -> Memory:
    for name in FIXTURES:
        with open(SESSIONS / name, "rb") as stream:
            memory.import_jsonl([(name, stream)])
    return memory


def test_rebuild_gives_back_identical_derived_state(fixtures_memory: Memory) -> None:
    before = dump(fixtures_memory)
    assert len(before["memory_items"]) > 25 and before["task_state"]
    report = fixtures_memory.extractor.rebuild()
    assert sorted(report.sessions) == ["blog-1", "dag-1", "shop-1", "shop-2"]
    assert dump(fixtures_memory) == before
    fixtures_memory.extractor.rebuild()
    assert dump(fixtures_memory) == before


def test_a_rebuild_numbers_rows_like_a_fresh_database(tmp_path: Path) -> None:
    # Sessions captured one after another in name order: a fresh database then numbers
    # items and lifecycle rows exactly as a full rebuild does.
    events = sorted(all_fixture_events(), key=lambda e: (e.session_id, e.seq))
    with Memory.open(new_db(tmp_path / "m.sqlite")) as memory:
        memory.ingest(events)
        before = dump(memory, row_numbers=True)
        memory.extractor.rebuild()
        assert dump(memory, row_numbers=True) == before


def test_rebuild_of_one_session_leaves_the_others_alone(fixtures_memory: Memory) -> None:
    before = dump(fixtures_memory, row_numbers=True)
    others = {table: [row for row in rows if "shop-1" not in row] for table, rows in before.items()}
    report = fixtures_memory.extractor.rebuild("shop-1")
    assert report.sessions == ["shop-1"]
    after = dump(fixtures_memory, row_numbers=True)
    assert {t: [r for r in rows if "shop-1" not in r] for t, rows in after.items()} == others
    assert dump(fixtures_memory) == without_row_numbers(before)


def test_rebuild_of_an_unknown_session_is_refused(memory: Memory) -> None:
    with pytest.raises(NotFound, match="no session 'nope'"):
        memory.extractor.rebuild("nope")


def test_the_memory_index_stays_consistent(fixtures_memory: Memory) -> None:
    fixtures_memory.extractor.rebuild()
    conn = fixtures_memory.db.conn
    conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('integrity-check')")
    hits = conn.execute(
        "SELECT m.id FROM memory_fts f JOIN memory_items m ON m.rid = f.rowid "
        "WHERE memory_fts MATCH '\"9090\"'"
    ).fetchall()
    assert len(hits) == 1


# -- actions are replayed where they happened -----------------------------------------------


def test_recorded_actions_survive_and_are_replayed(tmp_path: Path) -> None:
    with Memory.open(new_db(tmp_path / "m.sqlite")) as memory:
        memory.ingest(
            conversation(
                "s",
                "Note: the API port is 8080.",
                "A: I suggest we set the API port to 9090.",
                "Decision: we ship on Friday.",
            )
        )
        items = {i.content: i.id for i in memory.store.items.find()}
        with freeze_time("2031-01-02 03:04:05"):
            memory.extractor.promote(items["I suggest we set the API port to 9090."])
            memory.extractor.retract(items["we ship on Friday."], note="not decided yet")
        before = dump(memory, row_numbers=True)
        assert statuses(memory) == {
            "the API port is 8080.": "superseded",
            "I suggest we set the API port to 9090.": "active",
            "we ship on Friday.": "retracted",
        }
        with freeze_time("2040-01-01"):
            memory.extractor.rebuild()
        assert dump(memory, row_numbers=True) == before
        assert memory.db.conn.execute("SELECT count(*) FROM memory_actions").fetchone() == (2,)


def test_an_action_is_replayed_before_what_was_said_after_it(memory: Memory) -> None:
    memory.ingest(conversation("s", "Decision: we ship on Friday.", "ok"))
    [friday] = memory.store.items.find()
    memory.extractor.retract(friday.id)
    # Said again after the retraction: the item comes back, live and after a rebuild.
    memory.ingest([ev("s", 3, "Decision: we ship on Friday.")])
    assert statuses(memory) == {"we ship on Friday.": "active"}
    before = dump(memory, row_numbers=True)
    memory.extractor.rebuild()
    assert dump(memory, row_numbers=True) == before
    assert [e["event"] for e in memory.store.items.events_of(friday.id)] == [
        "created",
        "retracted",
        "reactivated",
    ]


def test_an_action_whose_item_is_gone_is_skipped_and_reported(memory: Memory) -> None:
    memory.ingest(conversation("s", "Decision: we ship on Friday."))
    [friday] = memory.store.items.find()
    memory.extractor.retract(friday.id)
    with memory.db.write_transaction():
        memory.db.conn.execute("DELETE FROM events WHERE session_id = 's'")
    report = memory.extractor.rebuild()
    assert memory.store.items.find() == []
    assert report.skipped == [{"action": 1, "reason": "the item no longer exists"}]


# -- delivery order ----------------------------------------------------------------------------

SMALL = [
    "Note: the API port is 8080.",
    "Goal: ship the checkout rewrite.",
    "A: I suggest we set the API port to 9090.",
    "We must keep p95 < 200 ms at 1k rps.",
    "Actually, the API port is 7070.",
    "Next: load test the checkout endpoint.",
    "Remember: lock files are generated with pip-tools.",
    "Instead of pip-tools use uv.",
    "Done: load test the checkout endpoint.",
    "Forget that lock files are generated with uv.",
    "Note: the API port is 8080. Note: the API port is 6060.",
    "Decision: we ship on Friday.",
]


# Reference dumps, computed once per module: every hypothesis example compares with it.
_REFERENCES: dict[str, dict] = {}


def reference(tmp_path: Path, events: list[HostEvent]) -> dict:
    with Memory.open(new_db(tmp_path / "reference.sqlite")) as memory:
        memory.ingest(sorted(events, key=lambda e: (e.session_id, e.seq)))
        return dump(memory, row_numbers=True)


@pytest.mark.slow
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.randoms(use_true_random=False), st.integers(1, 6))
def test_any_delivery_order_batching_and_duplication_gives_the_same_state(
    tmp_path_factory: pytest.TempPathFactory, rng: random.Random, max_batch: int
) -> None:
    events = conversation("s", *SMALL) + conversation("t", *SMALL[::-1])
    if "small" not in _REFERENCES:
        _REFERENCES["small"] = reference(tmp_path_factory.mktemp("ref"), events)
    want = _REFERENCES["small"]
    delivered = events + rng.sample(events, k=rng.randint(0, 6))  # duplicate deliveries
    rng.shuffle(delivered)
    with Memory.open(new_db(tmp_path_factory.mktemp("live") / "m.sqlite")) as memory:
        while delivered:
            size = rng.randint(1, max_batch)
            memory.ingest(delivered[:size])
            delivered = delivered[size:]
        assert dump(memory) == without_row_numbers(want)
        memory.extractor.rebuild()
        assert dump(memory, row_numbers=True) == want


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.randoms(use_true_random=False))
def test_the_shop_session_in_any_order_gives_the_same_state(rng: random.Random) -> None:
    import tempfile

    events = fixture_events("shop.jsonl")
    with tempfile.TemporaryDirectory() as directory:
        want = reference(Path(directory), events)
        shuffled = list(events)
        rng.shuffle(shuffled)
        with Memory.open(new_db(Path(directory) / "live.sqlite")) as memory:
            for start in range(0, len(shuffled), 10):
                memory.ingest(shuffled[start : start + 10])
            assert dump(memory, row_numbers=True) == want


def test_replaying_the_same_events_twice_changes_nothing(fixtures_memory: Memory) -> None:
    before = dump(fixtures_memory, row_numbers=True)
    for name in FIXTURES:
        with open(SESSIONS / name, "rb") as stream:
            summary = fixtures_memory.import_jsonl([(name, stream)])
        assert summary.new == 0
    fixtures_memory.ingest(all_fixture_events())
    assert dump(fixtures_memory, row_numbers=True) == before
