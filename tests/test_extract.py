"""Incremental extraction over captured events: what is read, what it becomes, failures.

Everything runs against real SQLite files in temporary directories, through the public
API (``Memory``) that hosts and the CLI use.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import SESSIONS, new_db
from derived_state import conversation, dump, ev, statuses
from freezegun import freeze_time

import memplug.derive.extract
import memplug.derive.rederive
from memplug.base.models import parse_event
from memplug.memory import Memory

ID = re.compile(r"^mem_[a-z0-9]{1,8}_[0-9a-f]{16}$")


def by_seq(memory: Memory, session: str = "shop-1") -> dict[int, list]:
    out: dict[int, list] = {}
    for item in memory.store.items.find(session_ids=[session]):
        out.setdefault(item.derived_from_seq, []).append(item)
    return out


# -- the shop fixture ------------------------------------------------------------------


def test_shop_session_yields_exactly_the_cued_statements(shop_memory: Memory) -> None:
    found = {
        seq: sorted((i.kind, i.evidence_type) for i in items)
        for seq, items in by_seq(shop_memory).items()
    }
    user = "user_explicit"
    assert found == {
        2: [("fact", user)],
        8: [("constraint", user)],
        13: [("constraint", user)],
        18: [("constraint", user)],
        20: [("fact", user)],
        23: [("proposal", "assistant_proposal")],
        24: [("constraint", user)],
        30: [("preference", user)],
        34: [("fact", user)],
        50: [("decision", user), ("fact", user)],
        51: [("proposal", "assistant_proposal")],
        52: [("constraint", user), ("fact", user)],
        58: [("fact", user)],
        62: [("fact", user)],
        76: [("fact", user), ("fact", user)],
        86: [("decision", user), ("open_question", user)],
        93: [("constraint", user), ("decision", user), ("fact", user)],
        105: [("fact", user)],
    }


@pytest.mark.parametrize(
    ("seq", "why"),
    [
        (3, "generated system reminder"),
        (46, "never mind"),
        (66, "I must say"),
        (72, "always the same flaky test"),
        (80, "tool output with a prompt injection and a Note: cue"),
        (82, "cues inside a code fence"),
        (84, "a quoted Remember: line"),
        (96, "compaction summary"),
        (99, "memplug's own injected message"),
    ],
)
def test_negative_controls_produce_nothing(shop_memory: Memory, seq: int, why: str) -> None:
    assert seq not in by_seq(shop_memory), why
    assert shop_memory.store.items.citing("shop-1", seq) == []


def test_supersession_in_the_shop_session(shop_memory: Memory) -> None:
    items = by_seq(shop_memory)
    port_8080, port_9090 = items[2][0], items[105][0]
    assert (port_8080.status, port_8080.superseded_by) == ("superseded", port_9090.id)
    assert port_8080.subject_key == port_9090.subject_key == "api port"
    assert port_9090.supersedes == [port_8080.id]
    # "locally the API listens on port 8080 too" names no key: it is not the same subject.
    assert items[34][0].status == "active" and items[34][0].subject_key is None
    cache_3gb = next(i for i in items[50] if i.kind == "fact")
    assert cache_3gb.superseded_by == items[62][0].id  # "…4 GB, not 3 GB"
    pip_tools = next(i for i in items[52] if i.kind == "fact")
    assert pip_tools.superseded_by == items[58][0].id  # "Instead of pip-tools use uv"
    assert items[58][0].kind == "fact"  # a bare correction takes the kind it replaces


def test_a_correction_that_matches_nothing_is_recorded(shop_memory: Memory) -> None:
    decision = next(i for i in by_seq(shop_memory)[93] if i.kind == "decision")
    assert decision.status == "active" and decision.subject_key == "测试环境的端口"
    created = shop_memory.store.items.events_of(decision.id)[0]
    assert created["event"] == "created"
    assert created["detail"]["correction"] == {
        "rule": "zh.correction@1",
        "names": None,
        "matched_by": None,
        "target": None,
    }


def test_numbers_keep_conditions_and_bare_numbers_are_flagged(shop_memory: Memory) -> None:
    items = by_seq(shop_memory)
    slo = items[8][0]
    assert slo.conditions == ["at 1k rps"]
    assert [(n["raw"], n["unit"], n["conditions"]) for n in slo.numbers] == [
        ("p95 < 200 ms", "ms", ["at 1k rps"])
    ]
    retry = next(i for i in items[76] if "retry" in i.content)
    assert [n["flagged"] for n in retry.numbers] == [True]
    budget = next(i for i in items[76] if "budget" in i.content)
    assert budget.numbers[0]["per"] == "mo" and budget.numbers[0]["flagged"] is False
    pin = next(i for i in items[52] if i.kind == "constraint")
    assert pin.numbers[0]["kind"] == "version" and pin.numbers[0]["value"] == "2.31.5"


def test_task_state_of_the_shop_session(shop_memory: Memory) -> None:
    state = shop_memory.store.items.task_state("shop-1")
    assert state is not None
    assert state["goal"]["text"] == "make checkout p95 under 200 ms."
    assert state["goal"]["ref"] == "shop-1:8"
    assert [e["ref"] for e in state["progress"]] == ["shop-1:30"]
    assert [e["text"] for e in state["blockers"]] == ["waiting for the Stripe sandbox key."]
    assert [e["ref"] for e in state["open_items"]] == ["shop-1:88", "shop-1:111"]
    assert state["updated_by_seq"] == 111
    assert state["updated_at"] == "2026-03-02T13:19:16Z"  # the event's time, not the clock


def test_items_carry_stable_ids_refs_scope_and_event_times(shop_memory: Memory) -> None:
    for item in shop_memory.store.items.find():
        assert ID.match(item.id), item.id
        assert item.id.startswith("mem_shop1_")
        assert item.source_refs[0] == f"shop-1:{item.derived_from_seq}"
        assert item.scope == {"session": "shop-1", "project": "/home/ana/shop"}
        event = shop_memory.store.events.get("shop-1", item.derived_from_seq)
        assert event is not None and item.created_at == event.event_time
        assert re.match(r"^[a-z]{2}\.[a-z_.]+@\d+$", item.extractor)


def test_checkpoint_reaches_the_last_event(shop_memory: Memory) -> None:
    assert shop_memory.store.items.extracted_through("shop-1") == 115
    assert shop_memory.store.items.pending() == []


def test_ids_and_state_do_not_depend_on_when_events_were_ingested(tmp_path: Path) -> None:
    dumps = []
    for n, moment in enumerate(["2026-01-01 00:00:00", "2031-07-09 12:34:56"]):
        with freeze_time(moment), Memory.open(new_db(tmp_path / f"{n}.sqlite")) as memory:
            with open(SESSIONS / "shop.jsonl", "rb") as stream:
                memory.import_jsonl([("shop.jsonl", stream)])
            dumps.append(dump(memory, row_numbers=True))
    assert dumps[0] == dumps[1]


# -- what is read ------------------------------------------------------------------------


def test_only_typed_user_input_and_assistant_proposals_are_read(memory: Memory) -> None:
    cue = "Decision: we ship on Friday."
    memory.ingest(
        [
            ev("s", 1, cue, source={"kind": "prompt"}),
            ev("s", 2, "Decision: we ship on Monday.", source={"kind": "runtime-context"}),
            ev("s", 3, "<system-reminder>Decision: we ship on Sunday.</system-reminder>"),
            ev("s", 4, "Decision: tool says Tuesday.", type="tool/result"),
            ev("s", 5, "Decision: thinking Wednesday.", type="assistant/thinking"),
            ev("s", 6, "Decision: we ship Thursday. I suggest a canary.", type="assistant/message"),
            ev(
                "s", 7, "Decision: summary says Saturday.", type="compaction/summary", role="system"
            ),
            ev("s", 8, "Decision: we ship in May.", source={"kind": "memplug", "form": "evidence"}),
        ]
    )
    assert statuses(memory, "s") == {
        "we ship on Friday.": "active",
        "I suggest a canary.": "active",
    }


def test_proposals_can_be_switched_off(db_path: Path) -> None:
    with Memory.open(db_path, config={"extraction": {"extractProposals": False}}) as memory:
        memory.ingest([ev("s", 1, "I suggest a canary.", type="assistant/message")])
        assert memory.store.items.find() == []


def test_extraction_can_be_switched_off(db_path: Path) -> None:
    with Memory.open(db_path, config={"extraction": {"enabled": False}}) as memory:
        memory.ingest([ev("s", 1, "Decision: we ship on Friday.")])
        assert memory.store.items.find() == []
        assert memory.store.items.extracted_through("s") is None


def test_a_truncated_event_is_read_in_full_from_the_archive(memory: Memory) -> None:
    text = "filler words " * 2_000 + "\nDecision: the cue sits past the cap."
    memory.ingest([ev("s", 1, text)])
    stored = memory.store.events.get("s", 1)
    assert stored is not None and stored.truncated
    assert statuses(memory, "s") == {"the cue sits past the cap.": "active"}


def test_text_in_content_blocks_is_read(memory: Memory) -> None:
    memory.ingest(
        [ev("s", 1, None, content=[{"type": "text", "text": "Remember: the port is 8080."}])]
    )
    assert statuses(memory, "s") == {"the port is 8080.": "active"}


def test_the_same_statement_twice_is_one_item_with_two_sources(memory: Memory) -> None:
    memory.ingest(
        conversation("s", "Note: the API port is 8080.", "hi", "Note: the API port is 8080")
    )
    [item] = memory.store.items.find()
    assert item.source_refs == ["s:1", "s:3"]
    assert [e["event"] for e in memory.store.items.events_of(item.id)] == ["created", "revised"]


# -- incremental, late and failed ----------------------------------------------------------


def events_of_shop() -> list:
    with open(SESSIONS / "shop.jsonl", encoding="utf-8") as stream:
        return [parse_event(json.loads(line)) for line in stream]


def test_one_event_at_a_time_equals_all_at_once(tmp_path: Path, shop_memory: Memory) -> None:
    with Memory.open(new_db(tmp_path / "live.sqlite")) as live:
        for event in events_of_shop():
            live.ingest([event])
        assert dump(live, row_numbers=True) == dump(shop_memory, row_numbers=True)


def test_a_late_event_rederives_its_session(tmp_path: Path) -> None:
    texts = ["Note: the API port is 8080.", "Goal: ship it.", "Actually, the API port is 9090.",
             "Next: load test."]  # fmt: skip
    events = conversation("s", *texts)
    with (
        Memory.open(new_db(tmp_path / "a.sqlite")) as ordered,
        Memory.open(new_db(tmp_path / "b.sqlite")) as late,
    ):
        ordered.ingest(events)
        late.ingest([events[0], events[2], events[3]])
        assert statuses(late, "s")["the API port is 8080."] == "superseded"
        late.ingest([events[1]])  # seq 2 arrives after seq 4
        assert dump(late, row_numbers=True) == dump(ordered, row_numbers=True)


def test_a_failed_event_is_queued_the_rest_goes_on_and_a_retry_repairs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = memplug.derive.rederive.analysed

    def flaky(text: str, role: str, *context: Any):
        if "poison" in text:
            raise RuntimeError("rule exploded")
        return real(text, role, *context)

    events = conversation(
        "s", "Note: the API port is 8080.", "Decision: poison pill.", "Actually, the port is 9090."
    )
    with Memory.open(new_db(tmp_path / "clean.sqlite")) as clean:
        clean.ingest(events)
        want = dump(clean, row_numbers=True)
    with Memory.open(new_db(tmp_path / "m.sqlite")) as memory:
        monkeypatch.setattr(memplug.derive.rederive, "analysed", flaky)
        memory.ingest(events)
        [pending] = memory.store.items.pending()
        assert (pending["seq"], pending["attempts"]) == (2, 1)
        assert pending["last_error"] == "RuntimeError: rule exploded"
        assert memory.store.events.get("s", 2) is not None  # evidence untouched
        assert statuses(memory, "s")["the port is 9090."] == "active"
        assert memory.store.items.extracted_through("s") == 3
        # The next capture of the session retries, and fails again.
        memory.ingest([ev("s", 4, "hello")])
        assert memory.store.items.pending()[0]["attempts"] == 2
        # Fixed: the next capture retries, succeeds and re-derives in seq order.
        monkeypatch.setattr(memplug.derive.rederive, "analysed", real)
        memory.ingest([ev("s", 5, "thanks")])
        assert memory.store.items.pending() == []
        after = dump(memory, row_numbers=True)
    with Memory.open(tmp_path / "clean.sqlite") as clean:
        clean.ingest([ev("s", 4, "hello"), ev("s", 5, "thanks")])
        assert after == dump(clean, row_numbers=True)
    assert want["memory_items"] != []


def test_live_retries_stop_after_a_bound_and_rebuild_still_retries(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = memplug.derive.rederive.analysed

    def broken(text: str, role: str, *context: Any):
        if text.startswith("Decision"):
            raise ValueError("always")
        return real(text, role, *context)

    monkeypatch.setattr(memplug.derive.rederive, "analysed", broken)
    memory.ingest([ev("s", 1, "Decision: x.")])
    for seq in range(2, memplug.derive.extract.LIVE_RETRIES + 5):
        memory.ingest([ev("s", seq, "more")])
    attempts = memory.store.items.pending()[0]["attempts"]
    assert attempts == memplug.derive.extract.LIVE_RETRIES
    report = memory.extractor.rebuild()
    assert memory.store.items.pending()[0]["attempts"] == attempts + 1
    assert [(f["seq"], f["error"]) for f in report.failed] == [(1, "ValueError: always")]


def test_extraction_errors_never_reach_the_host(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object) -> None:
        raise RuntimeError("the whole extractor is down")

    monkeypatch.setattr(memplug.derive.extract.Extractor, "run", broken)
    result = memory.ingest([ev("s", 1, "Decision: still captured.")])
    assert result.new == 1
    assert memory.store.events.latest_errors()[0]["stage"] == "extract"


# -- chat, pasted text and subject keys (issue 12) ------------------------------------------


def test_a_speaker_label_is_never_a_subject_and_chat_lines_supersede_nothing(
    memory: Memory,
) -> None:
    memory.ingest(
        conversation(
            "s",
            "Note: the API port is 8080.",
            "We must never log card numbers.",
            "Melanie: Thanks, Caroline!",
            "Melanie: I'll never forget the day my youngest took her first steps.",
            "Gina: It must be scary stepping into the unknown but I know you can do it, Jon.",
            "Gina: 2 kids",
        )
    )
    assert statuses(memory, "s") == {
        "the API port is 8080.": "active",
        "We must never log card numbers.": "active",
    }


def test_a_known_key_restates_and_supersedes_its_own_subject_only(memory: Memory) -> None:
    memory.ingest(
        conversation(
            "s",
            "Note: the deadline is Thursday.",
            "Note: the API port is 8080.",
            "Deadline: Friday",
        )
    )
    assert statuses(memory, "s") == {
        "the deadline is Thursday.": "superseded",
        "the API port is 8080.": "active",
        "Deadline: Friday": "active",
    }


def test_pasted_logs_mail_and_deep_paste_are_evidence_not_rules(memory: Memory) -> None:
    paste = "\n".join(["Here is the form I filled in:", *(["x " * 60] * 40)])
    memory.ingest(
        conversation(
            "s",
            "TypeError: must be str, not int\nError: you must never call this twice",
            "Please look at this mail.\nOn Mon, 5 Jan 2026, Bob wrote:\nWe must ship on Friday.",
            paste + "\nYou must list your spouse even if you live apart.",
            paste + "\nDecision: we file the form on Monday.",
        )
    )
    assert statuses(memory, "s") == {"we file the form on Monday.": "active"}
