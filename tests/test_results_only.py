"""A request that asks nothing about earlier work, in a session of tool work, gets the
results said before — the person's statements, the agent's reply of each turn — not
the talk on the way to them (docs/assembly.md, "Results, not the way to them")."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import new_db
from derived_state import ev

from memplug.base.models import HostEvent
from memplug.memory import Memory
from memplug.recall.assemble import ON_THE_WAY, AssemblyRequest
from memplug.reports.explain import explain, render_explain

OLD = "old-session"
NOW = "new-session"  # the next session of the same project
TALK = (
    "The migration script reads entire/sessions first and copies each checkpoint to the v1 "
    "branch in order."
)
REPLY = (
    "Done. The migration script now writes every checkpoint to the v1 branch and leaves "
    "entire/sessions untouched."
)
ASKED = "does the migration script write to the v1 branch?"
INSTRUCTION = "update the migration script docs for the v1 branch"
PROPOSED = "what if we run the migration script on the v1 branch twice?"


def session_events(with_tools: bool = True) -> list[HostEvent]:
    events = [
        ev(OLD, 1, "the migration script should write to the v1 branch", turn=1),
        ev(OLD, 2, TALK, type="assistant/message", turn=1),
        ev(
            OLD,
            3,
            '{"command": "sh scripts/migration.sh --v1-branch"}',
            type="tool/call",
            tool_name="Bash",
            call_id="c1",
            turn=1,
        ),
        ev(
            OLD,
            4,
            "migrated 12 checkpoints to the v1 branch",
            type="tool/result",
            call_id="c1",
            turn=1,
        ),
        ev(OLD, 5, REPLY, type="assistant/message", turn=1),
        ev(OLD, 6, ASKED, turn=2),
        ev(OLD, 7, "Yes: it writes to the v1 branch only.", type="assistant/message", turn=2),
        ev(OLD, 8, PROPOSED, turn=3),
        ev(
            OLD,
            9,
            "Running it twice is safe: it skips checkpoints already there.",
            type="assistant/message",
            turn=3,
        ),
        ev(NOW, 1, "good morning", turn=1),
    ]
    return events if with_tools else [e for e in events if not e.type.startswith("tool/")]


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    with Memory.open(new_db(tmp_path_factory.mktemp("ro") / "m.sqlite")) as opened:
        opened.ingest(session_events())
        yield opened


def omitted(result: object, section: str = "evidence") -> dict[str, tuple[str, str | None]]:
    return {
        o.ref: (o.reason, o.detail)
        for o in result.omitted  # type: ignore[attr-defined]
        if o.section == section
    }


def assert_the_way_is_quoted(result: object) -> None:
    """The talk on the way is in the message: quoted, or pointed at in the index."""
    assert ON_THE_WAY not in {reason for reason, _ in omitted(result).values()}
    text = result.text  # type: ignore[attr-defined]
    assert "[ev :2]" in text or f"[ev {OLD}:2]" in text


def test_an_instruction_gets_the_results_not_the_way_to_them(memory: Memory) -> None:
    result = memory.assemble(AssemblyRequest(session_id=NOW, query=INSTRUCTION))
    why = omitted(result)
    assert why[f"{OLD}:2"] == (ON_THE_WAY, "talk before the turn's reply :5")
    assert why[f"{OLD}:6"] == (ON_THE_WAY, "a question; its answer says more")
    assert omitted(result, "work")[f"{OLD}:3"] == (ON_THE_WAY, "a tool call")
    assert "[ev :5]" in result.text and "[ev :8]" in result.text  # the reply; a proposal
    assert "[ev :2]" not in result.text and "[ev :6]" not in result.text
    text = render_explain(explain(memory.store.logs.get(result.assembly_id or -1)))
    assert "on the way  score" in text and "talk before the turn's reply :5" in text


def test_a_question_about_earlier_work_still_gets_the_way(memory: Memory) -> None:
    result = memory.assemble(
        AssemblyRequest(session_id=NOW, query="why did the migration script copy to v1 branch?")
    )
    assert_the_way_is_quoted(result)


def test_a_long_message_with_a_question_is_a_discussion(memory: Memory) -> None:
    question = "why does the migration script fill the v1 branch in order?"
    asked = memory.assemble(AssemblyRequest(session_id=NOW, query=question))
    assert f"{OLD}:2" not in omitted(asked)
    # The same question among instructions and thoughts: what to do next.
    query = (
        "ok so the migration script is mostly there, I still want the docs to say what happens "
        "to entire/sessions afterwards and who runs it. " + question
    )
    result = memory.assemble(AssemblyRequest(session_id=NOW, query=query))
    assert omitted(result)[f"{OLD}:2"] == (ON_THE_WAY, "talk before the turn's reply :5")


def test_a_compactions_step_brings_back_the_way_too(memory: Memory) -> None:
    result = memory.assemble(
        AssemblyRequest(session_id=NOW, summary="Current work: the migration script, v1 branch.")
    )
    assert_the_way_is_quoted(result)


def test_a_chat_without_tool_events_is_not_judged_so(tmp_path: Path) -> None:
    with Memory.open(new_db(tmp_path / "m.sqlite")) as chat:
        chat.ingest(session_events(with_tools=False))
        result = chat.assemble(AssemblyRequest(session_id=NOW, query=INSTRUCTION))
    assert_the_way_is_quoted(result)
    assert "[ev :6]" in result.text


def test_the_same_request_gives_the_same_bytes(memory: Memory) -> None:
    request = AssemblyRequest(session_id=NOW, query=INSTRUCTION)
    assert memory.assemble(request).text == memory.assemble(request).text


def test_the_reply_of_a_turn_is_its_last_agent_message(memory: Memory) -> None:
    turns = [(OLD, 1), (OLD, 2), (OLD, 1), (OLD, 9), (NOW, 1)]
    # A turn without an agent message (NOW's, or one that never was) is left out.
    assert memory.store.events.last_in_turns(turns, "assistant/message") == {
        (OLD, 1): 5,
        (OLD, 2): 7,
    }


@pytest.fixture(autouse=True)
def _one_tier(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests judge which lines are worth quoting at all: every line that passes is
    quoted (one tier), so that the two tiers' own criterion (test_index.py) is not what
    they measure."""
    monkeypatch.setenv("MEMPLUG_ASSEMBLY__QUOTE_SPECIFIC", "0")
    monkeypatch.setenv("MEMPLUG_ASSEMBLY__QUOTES", "100")
