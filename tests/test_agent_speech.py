"""How people address a coding agent (issue 24): choices, standing rules, option picks
and anchored facts, read only where an agent is listening.

Through the CLI (`memory import`, `memory items`) and the public API, on real SQLite files
in temporary directories.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, CliResult, new_db
from derived_state import dump, ev
from hypothesis import given, settings
from hypothesis import strategies as st

from memplug.derive.cues import analyse
from memplug.memory import Memory

Cli = Callable[..., CliResult]

# The ten statements of issue 24, typed one after another in one coding session, and the
# kind each must give (None: nothing).
TEN = [
    ("Remember: never log card numbers.", "constraint"),
    ("We must never log card numbers.", "constraint"),
    ("Never log card numbers in the payment service.", "constraint"),
    ("Important: card numbers must not be logged.", "constraint"),
    ("Don't ever log card numbers.", "constraint"),
    ("Please never push directly to main.", "constraint"),
    ("From now on, always run the linter before committing.", "constraint"),
    ("Let's use PostgreSQL 16 for the orders service.", "decision"),
    ("Actually, switch the orders service to MySQL 8 instead.", "decision"),
    ("Thanks, that's great!", None),
]
TOOL_CALL = {"type": "tool/call", "role": "assistant", "tool_name": "Bash", "call_id": "c1"}


def _lines(session: str, head: list[dict[str, Any]], texts: list[str], **extra: Any) -> str:
    events = [{"session_id": session, "seq": n, **e} for n, e in enumerate(head, start=1)]
    start = len(events) + 1
    for n, text in enumerate(texts, start=start):
        events.append(
            {
                "session_id": session,
                "seq": n,
                "type": "user/message",
                "role": "user",
                "text": text,
                "cwd": "/home/ana/shop",
                **extra,
            }
        )
    return "".join(json.dumps(e) + "\n" for e in events)


def _import(cli: Cli, db: Path, lines: str) -> list[dict[str, Any]]:
    result = cli("--db", str(db), "import", "-q", "-", input=lines)
    assert result.returncode == 0, result.stderr
    listed = cli("--db", str(db), "items", "--json", "--scope", "global")
    assert listed.returncode == 0, listed.stderr
    items: list[dict[str, Any]] = listed.json()["items"]
    return items


def _by_source(items: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    out: dict[int, list[dict[str, Any]]] = {}
    for item in items:
        seq = int(item["source_refs"][-1].rsplit(":", 1)[1])
        out.setdefault(seq, []).append(item)
    return out


@pytest.mark.parametrize(
    ("head", "extra"),
    [([TOOL_CALL], {}), ([], {"host": "claude-code"})],
    ids=["after-a-tool-call", "claude-code-host"],
)
def test_the_ten_statements_give_the_right_kind(
    cli: Cli, tmp_path: Path, head: list[dict[str, Any]], extra: dict[str, Any]
) -> None:
    db = new_db(tmp_path / "m.sqlite")
    items = _by_source(_import(cli, db, _lines("code-1", head, [t for t, _ in TEN], **extra)))
    first = len(head) + 1
    for offset, (text, kind) in enumerate(TEN):
        got = [i["kind"] for i in items.get(first + offset, [])]
        assert got == ([kind] if kind else []), text
    postgres, mysql = items[first + 7][0], items[first + 8][0]
    assert postgres["status"] == "superseded" and postgres["superseded_by"] == mysql["id"]
    assert mysql["status"] == "active"
    assert mysql["content"] == "switch the orders service to MySQL 8 instead."


def test_in_chat_the_agent_rules_stay_silent(cli: Cli, tmp_path: Path) -> None:
    """No tool call, no coding host: the same words between people make no choices."""
    db = new_db(tmp_path / "m.sqlite")
    items = _by_source(_import(cli, db, _lines("chat-1", [], [t for t, _ in TEN])))
    kinds = {seq: [i["kind"] for i in found] for seq, found in items.items()}
    # Only the statements that name a rule outright ("Important:" introducing a must-not
    # about an artefact is one).
    assert kinds == {1: ["constraint"], 2: ["constraint"], 3: ["constraint"], 4: ["constraint"]}


# Advice inside a story and "we must never forget": obligations on people, not the work.
CHAT_MUSTS = [
    "you must try the pasta!",
    "Oh, you must try the pasta at Luigi's!",
    "You must come to the beach with us.",
    "We must visit the museum next week.",
    "We must never forget this day.",
]


def test_in_chat_a_must_aimed_at_people_not_the_work_makes_nothing(
    cli: Cli, tmp_path: Path
) -> None:
    db = new_db(tmp_path / "m.sqlite")
    assert _import(cli, db, _lines("chat-1", [], CHAT_MUSTS)) == []
    # The work named after the same words still makes a rule.
    items = _import(cli, new_db(tmp_path / "w.sqlite"), _lines("chat-2", [], WORK_MUSTS))
    assert [i["kind"] for i in items] == ["constraint"] * len(WORK_MUSTS)


WORK_MUSTS = [
    "You must run the migrations in a transaction.",
    "We must never log card numbers.",
]
REVIEW = "Request Changes - The authentication bug must be fixed before merging."


@pytest.mark.parametrize(
    ("head", "extra"),
    [([], {}), ([TOOL_CALL], {}), ([], {"host": "claude-code"})],
    ids=["chat", "after-a-tool-call", "claude-code-host"],
)
def test_a_pasted_review_verdict_is_a_task_not_a_standing_rule(
    cli: Cli, tmp_path: Path, head: list[dict[str, Any]], extra: dict[str, Any]
) -> None:
    texts = [REVIEW, "The authentication bug must be fixed before merging."]
    db = new_db(tmp_path / "m.sqlite")
    assert _import(cli, db, _lines("review-1", head, texts, **extra)) == []
    # A standing rule in the same words is still one.
    rule = ["Every bug must be fixed before merging."]
    items = _import(cli, new_db(tmp_path / "r.sqlite"), _lines("review-2", head, rule, **extra))
    assert [i["kind"] for i in items] == ["constraint"]


def test_a_tool_call_after_a_statement_does_not_make_it_said_to_an_agent(
    tmp_path: Path,
) -> None:
    with Memory.open(new_db(tmp_path / "m.sqlite")) as memory:
        memory.ingest(
            [
                ev("s", 1, "Let's use Redis for the session cache."),
                ev("s", 2, "", type="tool/call", tool_name="Bash", call_id="c1"),
                ev("s", 3, "Let's use Postgres for the orders."),
            ]
        )
        assert [(i.derived_from_seq, i.kind) for i in memory.store.items.find()] == [
            (3, "decision")
        ]


OFFER = (
    "Two ways to do it:\n\n"
    "| Option | Description |\n|---|---|\n"
    "| **A. Poll** | Poll the API every 30 s |\n"
    "| **B. Push** | Push from a webhook |\n\n"
    "Which one would you prefer?"
)


@pytest.mark.parametrize(
    ("reply", "content"),
    [
        ("B", "Push: Push from a webhook"),
        ("let's go with the first", "Poll: Poll the API every 30 s"),
        ("option A please", "Poll: Poll the API every 30 s"),
    ],
)
def test_an_option_pick_is_the_offered_option_with_both_sources(
    tmp_path: Path, reply: str, content: str
) -> None:
    with Memory.open(new_db(tmp_path / "m.sqlite")) as memory:
        memory.ingest(
            [
                ev("s", 1, "How should the feed get new items?", host="claude-code"),
                ev("s", 2, OFFER, type="assistant/message", host="claude-code"),
                ev("s", 3, reply, host="claude-code"),
            ]
        )
        [item] = [i for i in memory.store.items.find() if i.kind == "decision"]
        assert item.content == content
        assert item.source_refs == ["s:2", "s:3"]
        assert item.extractor == "en.decision.option_pick@3"


INLINE_OFFER = "Two ways. Option 1: poll the API every 30 s. Option 2: push from a webhook."


@pytest.mark.parametrize(
    ("reply", "content"),
    [("the second one", "push from a webhook"), ("option 1", "poll the API every 30 s")],
)
def test_a_pick_of_options_offered_inline_in_one_sentence(
    cli: Cli, tmp_path: Path, reply: str, content: str
) -> None:
    head = [{"type": "assistant/message", "role": "assistant", "text": INLINE_OFFER}]
    items = _import(
        cli, new_db(tmp_path / "m.sqlite"), _lines("pick-1", head, [reply], host="claude-code")
    )
    assert [(i["kind"], i["content"], i["source_refs"]) for i in items] == [
        ("decision", content, ["pick-1:1", "pick-1:2"])
    ]


def test_a_pick_with_nothing_offered_or_not_first_is_nothing(tmp_path: Path) -> None:
    with Memory.open(new_db(tmp_path / "m.sqlite")) as memory:
        memory.ingest(
            [
                ev("s", 1, "Does this match your intuition?", type="assistant/message"),
                ev("s", 2, "A", host="claude-code"),
                ev("s", 3, OFFER, type="assistant/message"),
                ev("s", 4, "Thanks.\n\nA) it's when the user closed it.", host="claude-code"),
            ]
        )
        assert memory.store.items.find() == []


def test_live_capture_one_event_at_a_time_equals_a_rebuild(tmp_path: Path) -> None:
    """The dialogue a live catch-up starts from (a tool call earlier, the options of the
    assistant's last message) is read back from the stored events: the same items."""
    events = [
        ev("s", 1, "Set up the CI workflow."),
        ev("s", 2, "", type="tool/call", tool_name="Bash", call_id="c1"),
        ev("s", 3, "A) Node 20\nB) Node 22\n\nWhich one?", type="assistant/message"),
        ev("s", 4, "system note", type="user/message", source={"kind": "host-generated"}),
        ev("s", 5, "B"),
        ev("s", 6, "You can test it with `act`."),
        ev("s", 7, "we explicitly don't want hardcoded visual tests"),
    ]
    with Memory.open(new_db(tmp_path / "all.sqlite")) as memory:
        memory.ingest(events)
        memory.extractor.rebuild()
        want = dump(memory)
    with Memory.open(new_db(tmp_path / "live.sqlite")) as memory:
        for event in events:
            memory.ingest([event])
        got = dump(memory)
        kinds = [(i.kind, i.content) for i in memory.store.items.find()]
    assert got == want
    assert kinds == [
        ("decision", "Node 22"),
        ("fact", "You can test it with `act`."),
        ("constraint", "we explicitly don't want hardcoded visual tests"),
    ]


TASKS = (
    "yeah let's push and re-test",
    "Yes, let's fix the gaps - they should be straightforward?",
    "Lets do the implementation too",
    "Question: doesn't git know if it's a binary file?",
    "Here is the log:\n" + "x" * 2_100 + "\nlet's use Redis for the cache.",
)


def test_tasks_questions_and_pasted_material_are_no_choices(tmp_path: Path) -> None:
    with Memory.open(new_db(tmp_path / "m.sqlite")) as memory:
        memory.ingest(
            [ev("s", n, text, host="claude-code") for n, text in enumerate(TASKS, start=1)]
        )
        assert memory.store.items.find() == []


def test_to_an_agent_a_sentence_may_start_in_lower_case() -> None:
    text = (
        "ok. let's use apple container instead of docker proper. it works the same way."
        " you can run 'container' to see the help. use e.g. the cache."
    )
    found = [(c.kind, c.content) for c in analyse(text, "user", agent=True)]
    assert found == [
        ("decision", "let's use apple container instead of docker proper."),
        ("fact", "you can run 'container' to see the help."),
    ]
    emoji = "yeah so maybe let's not have CONDENSE as a state 😅 Did we define the states?"
    assert [c.kind for c in analyse(emoji, "user", agent=True)] == ["decision"]
    # In chat the same text is one sentence and no choice at all.
    assert analyse(text, "user") == []


_PIECES = st.sampled_from(
    ["A", "B)", "2.", "option", "let's", "do", "use", "go with the second", "instead",
     "\n", "| **A. X** | y |", "never", "don't", "we", "want", "you can run `x`", "?", "."]
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(st.lists(_PIECES, max_size=20), st.lists(st.lists(_PIECES, max_size=20), max_size=3))
def test_replies_to_an_agent_never_raise_and_are_deterministic(
    reply: list[str], offered: list[list[str]]
) -> None:
    text, offers = " ".join(reply), [" ".join(o) for o in offered]
    first = analyse(text, "user", agent=True, offered=offers)
    assert first == analyse(text, "user", agent=True, offered=offers)
    for candidate in first:
        assert candidate.content.strip()
        assert candidate.picked is None or 0 <= candidate.picked < len(offers)


def test_a_file_derived_by_the_older_must_rule_loses_the_review_on_upgrade(
    cli: Cli, tmp_path: Path
) -> None:
    """fixtures/schemas/v10.sqlite holds the pasted review as an active constraint made
    by en.constraint.must@2; the rule's version moved, so the next command derives it
    again and the review is gone while the standing rules stay."""
    db = tmp_path / "m.sqlite"
    db.write_bytes((FIXTURES / "schemas" / "v10.sqlite").read_bytes())
    listed = cli("--db", str(db), "items", "--json", "--scope", "global")
    assert listed.returncode == 0, listed.stderr
    constraints = [i for i in listed.json()["items"] if i["kind"] == "constraint"]
    assert REVIEW not in [i["content"] for i in constraints]
    assert [i["content"] for i in constraints if i["status"] == "active"].count(
        "We must never log card numbers."
    ) == 2
