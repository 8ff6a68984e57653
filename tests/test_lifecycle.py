"""The lifecycle: corrections supersede, conflicts are disputed, retraction and promotion.

Each chain is a conversation replayed through ``Memory.ingest`` into a real database;
the expected outcome names every item by its content.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import new_db
from derived_state import conversation, dump, ev, statuses
from freezegun import freeze_time

from memplug.base.errors import NotFound, UsageError
from memplug.memory import Memory
from memplug.store.records import ItemRow


def run(memory: Memory, *texts: str, session: str = "s") -> Memory:
    memory.ingest(conversation(session, *texts))
    return memory


def item(memory: Memory, content: str) -> ItemRow:
    [found] = [i for i in memory.store.items.find() if i.content == content]
    return found


def lifecycle(memory: Memory, content: str) -> list[tuple[str, str]]:
    return [
        (e["event"], e["actor"]) for e in memory.store.items.events_of(item(memory, content).id)
    ]


# -- correction chains: (utterances, final status of each item's content) ------------------

CHAINS = {
    "key-value restatement": (
        ["Note: the API port is 8080.", "The API port is 9090."],
        {"the API port is 8080.": "superseded", "The API port is 9090.": "active"},
    ),
    "three links with two cues": (
        ["Note: the API port is 8080.", "Actually, the API port is 9090.",
         "Correction: the API port is 7070."],
        {"the API port is 8080.": "superseded", "the API port is 9090.": "superseded",
         "the API port is 7070.": "active"},
    ),
    "instead of X use Y": (
        ["Remember: we lock dependencies with pip-tools.", "Instead of pip-tools use uv."],
        {"we lock dependencies with pip-tools.": "superseded",
         "Instead of pip-tools use uv.": "active"},
    ),
    "not X but Y": (
        ["Decision: the release is on Friday.", "The release is not Friday but Monday."],
        {"the release is on Friday.": "superseded",
         "The release is not Friday but Monday.": "active"},
    ),
    "Y, not X names the replaced value": (
        ["Note: the cache may use at most 3 GB.",
         "Correction: the cache limit is 4 GB, not 3 GB."],
        {"the cache may use at most 3 GB.": "superseded",
         "the cache limit is 4 GB, not 3 GB.": "active"},
    ),
    "不是…而是…": (
        ["记住：数据库用MySQL。", "数据库不是MySQL，而是Postgres。"],
        {"数据库用MySQL。": "superseded", "数据库不是MySQL，而是Postgres。": "active"},
    ),
    "改为 with a subject key": (
        ["记住：测试环境的端口是5432。", "把测试环境的端口改为5433。"],
        {"测试环境的端口是5432。": "superseded", "把测试环境的端口改为5433。": "active"},
    ),
    "更正": (
        ["记住：值班电话是4324。", "更正：值班电话是4325。"],
        {"值班电话是4324。": "superseded", "值班电话是4325。": "active"},
    ),
    "a correction with its own kind replaces the latest of that kind": (
        ["We decided to deploy with Helm.", "Note: Helm charts live in deploy/.",
         "Actually, we decided to deploy with Kustomize."],
        {"We decided to deploy with Helm.": "superseded",
         "Helm charts live in deploy/.": "active",
         "we decided to deploy with Kustomize.": "active"},
    ),
    "set X to Y": (
        ["Remember: the batch size is 100.", "Set the batch size to 200."],
        {"the batch size is 100.": "superseded", "Set the batch size to 200.": "active"},
    ),
    "a correction in the same message": (
        ["Note: the API port is 8080. Actually, the API port is 9090."],
        {"the API port is 8080.": "superseded", "the API port is 9090.": "active"},
    ),
    "back to the first value reactivates it": (
        ["Note: the API port is 8080.", "The API port is 9090.", "The API port is 8080."],
        {"the API port is 8080.": "active", "The API port is 9090.": "superseded"},
    ),
    "statements that share words coexist": (
        ["We must use Postgres for orders.", "We must use Redis for sessions."],
        {"We must use Postgres for orders.": "active", "We must use Redis for sessions.": "active"},
    ),
    "a value that names nothing does not restate": (
        ["Remember: the build is green.", "The build is broken."],
        {"the build is green.": "active"},
    ),
    "a correction of another subject replaces nothing": (
        ["Note: the API port is 8080.", "Actually, we decided to ship on Monday."],
        {"the API port is 8080.": "active", "we decided to ship on Monday.": "active"},
    ),
    "a bare correction with nothing to replace creates nothing": (
        ["Note: the API port is 8080.", "Actually, it's fine."],
        {"the API port is 8080.": "active"},
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_correction_chain(memory: Memory, name: str) -> None:
    texts, expected = CHAINS[name]
    run(memory, *texts)
    assert statuses(memory) == expected


def test_there_are_at_least_ten_superseding_chains() -> None:
    superseding = [n for n, (_, want) in CHAINS.items() if "superseded" in want.values()]
    assert len(superseding) >= 10


def test_a_chain_is_linked_both_ways_and_audited(memory: Memory) -> None:
    run(memory, *CHAINS["three links with two cues"][0])
    first, second, third = (
        item(memory, f"the API port is {port}.") for port in ("8080", "9090", "7070")
    )
    assert (first.superseded_by, second.superseded_by, third.superseded_by) == (
        second.id,
        third.id,
        None,
    )
    assert (second.supersedes, third.supersedes) == ([first.id], [second.id])
    assert lifecycle(memory, first.content) == [
        ("created", "extractor:en.fact.label@1"),
        ("superseded", "extractor:en.correction.label@1"),
    ]
    inspected = memory.extractor.inspect(second.id)
    assert [link["id"] for link in inspected["chain"]["older"]] == [first.id]
    assert [link["id"] for link in inspected["chain"]["newer"]] == [third.id]
    superseded = memory.store.items.events_of(first.id)[1]
    assert superseded["detail"] == {"by": second.id, "reason": "subject_key"}
    assert superseded["source_seq"] == 2
    assert superseded["at"] == "2026-03-02T09:00:02Z"  # seq 2's own time


def test_a_reactivated_item_keeps_its_id_and_history(memory: Memory) -> None:
    run(memory, *CHAINS["back to the first value reactivates it"][0])
    first = item(memory, "the API port is 8080.")
    assert first.source_refs == ["s:1", "s:3"]
    assert [e for e, _ in lifecycle(memory, first.content)] == [
        "created",
        "superseded",
        "reactivated",
    ]
    assert item(memory, "The API port is 9090.").superseded_by == first.id


def test_a_correction_with_no_target_says_so(memory: Memory) -> None:
    run(memory, *CHAINS["a correction of another subject replaces nothing"][0])
    created = memory.store.items.events_of(item(memory, "we decided to ship on Monday.").id)[0]
    assert created["detail"]["correction"]["target"] is None


def test_a_bare_correction_with_no_target_is_reported(memory: Memory) -> None:
    memory.ingest(conversation("s", "Note: the API port is 8080."))
    # Captured without deriving, so that this test sees the extractor's own report.
    events = conversation("s", "x", "Actually, it's fine.")[1:]
    with memory.db.write_transaction():
        memory.capture.capture(events, origin="api", ingested_at="t")
    report = memory.extractor.run(["s"])
    assert [s["reason"] for s in report.skipped] == [
        "a correction with no kind of its own and no earlier item it could replace"
    ]


# -- disputes ------------------------------------------------------------------------------


def test_two_values_in_one_message_are_disputed_until_the_user_settles(memory: Memory) -> None:
    run(memory, "Note: the API port is 8080. Note: the API port is 9090.")
    assert statuses(memory) == {
        "the API port is 8080.": "disputed",
        "the API port is 9090.": "disputed",
    }
    first, second = item(memory, "the API port is 8080."), item(memory, "the API port is 9090.")
    disputed = [e for e in memory.store.items.events_of(first.id) if e["event"] == "disputed"]
    assert disputed[0]["detail"] == {"with": [second.id]}
    memory.ingest([ev("s", 2, "The API port is 9090.")])
    assert statuses(memory) == {
        "the API port is 8080.": "superseded",
        "the API port is 9090.": "active",
    }
    assert [e for e, _ in lifecycle(memory, "the API port is 9090.")] == [
        "created",
        "disputed",
        "reactivated",
    ]


def test_a_proposal_against_a_user_statement_is_disputed(memory: Memory) -> None:
    run(memory, "Note: the API port is 8080.", "A: I suggest we set the API port to 9090.")
    assert statuses(memory) == {
        "the API port is 8080.": "disputed",
        "I suggest we set the API port to 9090.": "disputed",
    }
    assert item(memory, "I suggest we set the API port to 9090.").evidence_type == (
        "assistant_proposal"
    )


def test_a_newer_proposal_replaces_an_older_one(memory: Memory) -> None:
    run(
        memory,
        "A: I suggest we set the API port to 9090.",
        "A: I suggest we set the API port to 7070.",
    )
    assert statuses(memory) == {
        "I suggest we set the API port to 9090.": "superseded",
        "I suggest we set the API port to 7070.": "active",
    }


def test_a_cued_user_statement_replaces_a_proposal_a_bare_one_cannot(memory: Memory) -> None:
    run(memory, "A: I suggest we set the API port to 9090.", "The API port is 9090.")
    assert statuses(memory) == {"I suggest we set the API port to 9090.": "active"}
    memory.ingest([ev("s", 3, "Remember: the API port is 7070.")])
    assert statuses(memory) == {
        "I suggest we set the API port to 9090.": "superseded",
        "the API port is 7070.": "active",
    }


# -- retraction ----------------------------------------------------------------------------


def test_forget_that_retracts_the_item_it_names(memory: Memory) -> None:
    run(memory, "Note: the API port is 8080.", "Decision: we ship on Friday.",
        "Forget that the API port is 8080.")  # fmt: skip
    assert statuses(memory) == {
        "the API port is 8080.": "retracted",
        "we ship on Friday.": "active",
    }
    assert lifecycle(memory, "the API port is 8080.")[-1] == (
        "retracted",
        "extractor:en.retraction@1",
    )


def test_forget_that_never_hits_a_different_value(memory: Memory) -> None:
    run(memory, "Note: the API port is 8080.", "The API port is 9090.",
        "Forget that the API port is 8080.")  # fmt: skip
    assert statuses(memory)["The API port is 9090."] == "active"


def test_chinese_retraction_then_restatement_reactivates(memory: Memory) -> None:
    run(memory, "记住：值班室分机号 4324。", "忘掉之前说的值班室分机号。")
    assert statuses(memory) == {"值班室分机号 4324。": "retracted"}
    memory.ingest([ev("s", 3, "记住：值班室分机号 4324。")])
    assert statuses(memory) == {"值班室分机号 4324。": "active"}


def test_retracting_one_side_of_a_dispute_settles_it(memory: Memory) -> None:
    run(memory, "Note: the API port is 8080.", "A: I suggest we set the API port to 9090.")
    user_side = item(memory, "the API port is 8080.")
    with freeze_time("2031-01-02 03:04:05"):
        retracted = memory.extractor.retract(user_side.id, note="wrong machine")
    assert retracted.status == "retracted"
    assert statuses(memory)["I suggest we set the API port to 9090."] == "active"
    [action] = memory.store.items.actions_of(user_side.id)
    assert (action.action, action.actor, action.at) == (
        "retract",
        "api",
        "2031-01-02T03:04:05.000000Z",
    )
    assert action.params == {"session_id": "s", "after_seq": 2, "note": "wrong machine"}
    last = memory.store.items.events_of(user_side.id)[-1]
    assert (last["event"], last["actor"], last["at"], last["source_seq"]) == (
        "retracted",
        "api",
        "2031-01-02T03:04:05.000000Z",
        None,
    )


def test_retract_refuses_what_cannot_be_retracted(memory: Memory) -> None:
    run(memory, "Note: the API port is 8080.")
    target = item(memory, "the API port is 8080.")
    memory.extractor.retract(target.id)
    with pytest.raises(UsageError, match="already retracted"):
        memory.extractor.retract(target.id)
    with pytest.raises(NotFound, match="no memory item mem_nope"):
        memory.extractor.retract("mem_nope")


# -- promotion -----------------------------------------------------------------------------


def test_promote_makes_a_proposal_a_user_decision_and_settles_its_dispute(memory: Memory) -> None:
    run(memory, "Note: the API port is 8080.", "A: I suggest we set the API port to 9090.")
    proposal = item(memory, "I suggest we set the API port to 9090.")
    with freeze_time("2031-01-02 03:04:05"):
        promoted = memory.extractor.promote(proposal.id)
    assert (promoted.kind, promoted.evidence_type, promoted.status) == (
        "decision",
        "user_explicit",
        "active",
    )
    assert promoted.id == proposal.id
    assert statuses(memory)["the API port is 8080."] == "superseded"
    assert item(memory, "the API port is 8080.").superseded_by == proposal.id
    event = next(e for e in memory.store.items.events_of(proposal.id) if e["event"] == "promoted")
    assert event["detail"]["from_kind"] == "proposal" and event["detail"]["to_kind"] == "decision"
    assert event["at"] == "2031-01-02T03:04:05.000000Z"


def test_promote_takes_a_kind_and_refuses_non_proposals(memory: Memory) -> None:
    run(memory, "Note: the API port is 8080.", "A: We could shard the orders table by region.")
    proposal = item(memory, "We could shard the orders table by region.")
    assert memory.extractor.promote(proposal.id, kind="constraint").kind == "constraint"
    with pytest.raises(UsageError, match="not an assistant proposal"):
        memory.extractor.promote(item(memory, "the API port is 8080.").id)
    with pytest.raises(UsageError, match="not an assistant proposal"):
        memory.extractor.promote(proposal.id)  # already promoted
    run(memory, "A: I suggest a canary.", session="t")
    with pytest.raises(UsageError, match="cannot promote to 'proposal'"):
        memory.extractor.promote(item(memory, "I suggest a canary.").id, kind="proposal")


def test_nothing_promotes_a_proposal_automatically(memory: Memory) -> None:
    run(memory, "A: I suggest a canary release.", "Sounds good, let's do that.", "Yes.")
    assert item(memory, "I suggest a canary release.").evidence_type == "assistant_proposal"


# -- time ------------------------------------------------------------------------------------


def test_derived_times_are_event_times_whatever_the_clock(tmp_path: Path) -> None:
    texts = CHAINS["three links with two cues"][0]
    dumps = []
    for n, moment in enumerate(["2020-05-05 05:05:05", "2039-09-09 09:09:09"]):
        with freeze_time(moment), Memory.open(new_db(tmp_path / f"{n}.sqlite")) as memory:
            run(memory, *texts, "Goal: ship the port change.", "Done: nothing yet.")
            dumps.append(dump(memory, row_numbers=True))
            times = {row[0] for row in memory.db.conn.execute("SELECT at FROM memory_events")}
            assert times <= {f"2026-03-02T09:00:0{s}Z" for s in range(1, 6)}
    assert dumps[0] == dumps[1]
