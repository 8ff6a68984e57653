"""The Claude Code transcript reader on hand-written transcripts (fixtures/claude_code/)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memplug.base.models import HostEvent
from memplug.base.vocab import GENERATED_SOURCE_KINDS
from memplug.hosts import claude_code as cc

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "claude_code"
SID = "5e1f0c2a-7b3d-4e8f-9a10-c0ffee000001"
MAIN = FIXTURES / f"{SID}.jsonl"
ORPHAN = FIXTURES / "5e1f0c2a-7b3d-4e8f-9a10-c0ffee000002.jsonl"
SUBAGENT = FIXTURES / SID / "subagents" / "agent-a1b2c3d.jsonl"
COMPACTOR = FIXTURES / SID / "subagents" / "agent-acompact-7f3e21.jsonl"


def U(n: int) -> str:
    """The uuid of record number ``n`` in the fixtures (see fixtures/claude_code/README.md)."""
    return f"00000000-0000-4000-8000-{n:012d}"


def by_entry(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {e["entry_id"]: e for e in events}


@pytest.fixture(scope="module")
def main() -> cc.ReadResult:
    return cc.read_all(MAIN)


def test_every_event_is_a_valid_host_event_in_increasing_seq_order(main: cc.ReadResult) -> None:
    models = main.host_events()
    assert all(isinstance(m, HostEvent) for m in models)
    # Dense, in transcript order: retrieval measures recency and neighbours in seq distance.
    assert [e["seq"] for e in main.events] == list(range(1, len(main.events) + 1))
    assert main.state.next_seq == len(main.events) + 1
    assert {e["session_id"] for e in main.events} == {SID}
    assert {e["project"] for e in main.events} == {"/home/ana/shop"}
    assert main.errors == [] and not main.more and main.held_bytes == 0


def test_record_types_counted_and_noise_dropped_with_reasons(main: cc.ReadResult) -> None:
    assert main.record_types["progress/hook_progress"] == 4
    assert main.record_types["progress/agent_progress"] == 1
    assert main.record_types["file-history-snapshot"] == 2
    dropped = dict(main.dropped)
    assert dropped == {
        "progress: hook, bash and agent progress noise": 5,
        "file-history-snapshot: file backup bookkeeping": 2,
        "queue-operation: prompt queue bookkeeping (the prompt arrives as a record)": 1,
        "system/stop_hook_summary: harness bookkeeping": 1,
        "system/turn_duration: harness bookkeeping": 1,
        "empty assistant text block": 1,
    }
    assert sum(main.record_types.values()) == 42


def test_split_assistant_message_is_joined_into_one_event(main: cc.ReadResult) -> None:
    events = by_entry(main.events)
    joined = events[U(12)]
    assert joined["type"] == "assistant/message"
    assert joined["text"] == (
        "The configuration sets port 9090, and config/local.toml does not exist.\n\n"
        "I suggest we change app.toml to port 8080."
    )
    assert joined["part_uuids"] == [U(12), U(13)]
    assert joined["message_id"] == "msg_B"
    assert U(13) not in events
    # The records after the second part link to the joined message.
    assert main.links[U(13)] == U(12)
    assert events[U(16)]["parent_id"] == U(12)
    # One message with text, thinking and tool calls: thinking and calls stay separate.
    msg_a = [e["type"] for e in main.events if e.get("message_id") == "msg_A"]
    assert msg_a == ["assistant/thinking", "assistant/message", "tool/call", "tool/call"]


def test_tool_calls_and_results_carry_name_call_id_outcome_and_error(
    main: cc.ReadResult,
) -> None:
    events = by_entry(main.events)
    call = events[U(7)]
    assert (call["type"], call["tool_name"], call["call_id"]) == ("tool/call", "Bash", "toolu_01")
    assert call["text"].startswith('Bash {"command":"grep -rn port config/"')
    ok = events[U(10)]
    assert (ok["tool_name"], ok["call_id"], ok["outcome"], ok["is_error"]) == (
        "Bash",
        "toolu_01",
        "succeeded",
        False,
    )
    missing = events[U(11)]
    assert (missing["tool_name"], missing["outcome"], missing["is_error"]) == (
        "Read",
        "failed",
        True,
    )
    failed = events[U(28)]
    assert failed["text"].startswith("Exit code 1") and failed["outcome"] == "failed"
    assert main.state.pending_calls == {}


def test_parents_resolve_through_skipped_records(main: cc.ReadResult) -> None:
    events = by_entry(main.events)
    # The first prompt hangs off two SessionStart progress records that start at a root.
    assert "parent_id" not in events[U(3)]
    # The caveat hangs off turn_duration → stop_hook_summary → the joined message part.
    assert events[U(16)]["parent_id"] == U(12)
    # After the compaction, a prompt whose parent is a progress record.
    assert events[U(38)]["parent_id"] == U(36)
    assert not any(e.get("parent_unresolved") for e in main.events)
    # Every parent names an event of the session.
    assert {e["parent_id"] for e in main.events if "parent_id" in e} <= set(events)


def test_generated_text_is_marked_and_typed_input_is_not(main: cc.ReadResult) -> None:
    events = by_entry(main.events)

    def source(entry: str) -> tuple[str, str]:
        s = events[entry]["source"]
        return s["kind"], s["form"]

    assert source(U(3)) == ("user", "prompt")
    assert source(U(16)) == ("host-generated", "caveat")
    assert events[U(17)]["type"] == "command" and events[U(17)]["text"] == "/model opus"
    assert source(U(17)) == ("user", "slash-command")
    assert events[U(18)]["text"] == "Set model to opus"
    assert source(U(18)) == ("host-generated", "command-output")
    assert source(U(22)) == ("host-generated", "task-notification")
    assert source(U(29)) == ("host-generated", "interrupt")
    assert source(U(36)) == ("host-generated", "compact-summary")
    assert source(U(40)) == ("host-generated", "synthetic")
    # memplug's own additionalContext, written back by Claude Code.
    assert source(U(41)) == ("memplug", "evidence")
    # A system reminder appended to a typed prompt is split off as its own event.
    assert events[U(19)]["text"] == "Remember: the staging database is db-staging-2 on port 5433."
    assert source(U(19)) == ("user", "prompt")
    reminder = events[f"{U(19)}#1"]
    assert reminder["text"].startswith("<system-reminder>")
    assert reminder["parent_id"] == U(19) and reminder["seq"] == events[U(19)]["seq"] + 1
    assert events[U(20)]["parent_id"] == f"{U(19)}#1"
    generated = {
        e["entry_id"] for e in main.events if e.get("source", {}).get("kind") == "host-generated"
    }
    assert all(events[g]["source"]["kind"] in GENERATED_SOURCE_KINDS for g in generated)
    typed = [e["text"] for e in main.events if e.get("source", {}).get("kind") == "user"]
    assert not any(t.startswith(("<", "[Request")) for t in typed)


def test_turns_count_typed_input_and_steps_count_model_calls(main: cc.ReadResult) -> None:
    events = by_entry(main.events)
    assert (events[U(3)]["turn"], events[U(3)]["step"]) == (1, 0)
    assert (events[U(7)]["turn"], events[U(7)]["step"]) == (1, 1)
    assert (events[U(12)]["turn"], events[U(12)]["step"]) == (1, 2)
    assert events[U(17)]["turn"] == 2  # /model
    assert events[U(38)]["turn"] == 6


def test_compaction_boundary_continues_at_its_logical_parent(main: cc.ReadResult) -> None:
    events = by_entry(main.events)
    boundary = events[U(35)]
    assert boundary["type"] == "compaction/start"
    assert boundary["parent_id"] == U(34) and boundary["continues_from"] == "logical-parent"
    assert (boundary["compact_trigger"], boundary["pre_tokens"]) == ("manual", 41250)
    summary = events[U(36)]
    assert summary["type"] == "compaction/summary" and summary["parent_id"] == U(35)
    assert main.state.context_start == boundary["seq"]


def test_model_context_is_what_follows_the_latest_compaction(main: cc.ReadResult) -> None:
    context = [e["entry_id"] for e in cc.model_context(main.events)]
    assert context == [U(35), U(36), U(38), U(39), U(40), U(41)]


def test_active_path_skips_the_rewound_branch_but_crosses_the_compaction(
    main: cc.ReadResult,
) -> None:
    path = {e["entry_id"] for e in cc.active_path(main.events)}
    # The user rewound to /model's output and retyped: the staging-2 branch is abandoned.
    assert U(19) not in path and U(20) not in path and U(23) not in path
    assert {U(25), U(26)} <= path
    # Before the compaction, through the logical parent, back to the first prompt.
    assert {U(34), U(3), U(12)} <= path
    # A parallel call's result is a sibling of the next call in Claude Code's tree.
    assert U(10) in path and U(11) in path


def test_boundary_without_a_known_logical_parent_continues_at_the_last_main_record() -> None:
    result = cc.read_all(ORPHAN)
    events = by_entry(result.events)
    boundary = events[U(304)]
    assert boundary["logical_parent_uuid"] == U(999)
    assert boundary["continues_from"] == "last-main-chain"
    assert boundary["parent_id"] == U(302)
    assert [e["entry_id"] for e in cc.active_path(result.events)] == [
        U(301),
        U(302),
        U(304),
        U(305),
        U(306),
    ]


def test_subagent_transcript_is_a_sidechain_session_named_by_the_task_result(
    main: cc.ReadResult,
) -> None:
    assert cc.subagent_paths(MAIN) == [SUBAGENT, COMPACTOR]
    result = cc.read_all(SUBAGENT)
    assert result.session_id == f"{SID}/agent-a1b2c3d"
    assert all(e["is_sidechain"] and e["agent_id"] == "a1b2c3d" for e in result.events)
    assert all(e["parent_session_id"] == SID for e in result.events)
    prompt = result.events[0]
    assert prompt["source"] == {"kind": "agent-instructions", "form": "subagent-prompt"}
    assert "parent_id" not in prompt
    task_result = by_entry(main.events)[U(33)]
    assert task_result["subagent_session"] == result.session_id
    assert task_result["tool_name"] == "Task"
    assert [e["type"] for e in cc.model_context(result.events)][-1] == "assistant/message"
    result.host_events()


def test_compaction_agent_transcript_is_all_generated() -> None:
    result = cc.read_all(COMPACTOR)
    assert result.session_id == f"{SID}/agent-acompact-7f3e21"
    assert [e["source"]["kind"] for e in result.events] == ["host-generated"] * 3
    # Its first record points into the main transcript: kept raw, flagged.
    first = result.events[0]
    assert first["parent_id"] == U(33) and first["parent_unresolved"] is True


# -- incremental reading ----------------------------------------------------------


def _replay(source: Path, target: Path, cuts: list[int]) -> tuple[list[dict[str, Any]], int]:
    """Grow ``target`` to each cut of ``source`` and read after every growth."""
    data = source.read_bytes()
    links = cc.MemoryLinks()
    state = None
    events: list[dict[str, Any]] = []
    reads = 0
    for cut in [*sorted(set(cuts)), len(data)]:
        target.write_bytes(data[:cut])
        final = cut == len(data)
        result = cc.read_transcript(target, state, session_id=SID, resolve=links, final=final)
        links.add(result)
        state = result.state
        events += result.events
        reads += 1
        assert not result.rewritten
    return events, reads


def _strip_state(events: list[dict[str, Any]]) -> list[str]:
    return [json.dumps(e, sort_keys=True) for e in events]


def test_reading_line_by_line_gives_the_same_events_as_one_read(
    tmp_path: Path, main: cc.ReadResult
) -> None:
    data = MAIN.read_bytes()
    ends = [i + 1 for i, byte in enumerate(data) if byte == ord("\n")]
    events, _ = _replay(MAIN, tmp_path / f"{SID}.jsonl", ends)
    assert _strip_state(events) == _strip_state(main.events)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=MAIN.stat().st_size), max_size=12))
def test_reading_at_any_byte_cuts_gives_the_same_events(
    tmp_path_factory: pytest.TempPathFactory, cuts: list[int]
) -> None:
    target = tmp_path_factory.mktemp("cuts") / f"{SID}.jsonl"
    events, _ = _replay(MAIN, target, cuts)
    assert _strip_state(events) == _strip_state(cc.read_all(MAIN).events)


def test_a_partial_last_line_is_left_for_the_next_read(tmp_path: Path) -> None:
    data = MAIN.read_bytes()
    first_line_end = data.index(b"\n") + 1
    second = data.index(b"\n", first_line_end) + 1
    target = tmp_path / f"{SID}.jsonl"
    target.write_bytes(data[: second - 10])
    result = cc.read_transcript(target, final=True)
    assert result.state.offset == first_line_end
    assert result.errors == []


def test_an_open_assistant_message_is_held_until_it_is_complete(tmp_path: Path) -> None:
    lines = MAIN.read_bytes().splitlines(keepends=True)
    target = tmp_path / f"{SID}.jsonl"
    # Up to and including the first text part of msg_B (line 13 of 41).
    target.write_bytes(b"".join(lines[:13]))
    result = cc.read_transcript(target, session_id=SID)
    assert result.held_bytes == len(lines[12])
    assert result.state.offset == sum(len(line) for line in lines[:12])
    assert not any(e.get("message_id") == "msg_B" for e in result.events)
    # The Stop hook knows the turn is over: the same read with ``final`` flushes it.
    flushed = cc.read_transcript(target, result.state, session_id=SID, final=True)
    assert [e["entry_id"] for e in flushed.events] == [U(12)]
    assert flushed.events[0]["text"].startswith("The configuration sets port 9090")
    # A message whose parts straddle two reads without ``final`` stays one event.
    target.write_bytes(b"".join(lines[:15]))
    later = cc.read_transcript(target, result.state, session_id=SID)
    assert later.events[0]["part_uuids"] == [U(12), U(13)]


def test_reading_again_is_idempotent_on_uuid(tmp_path: Path, main: cc.ReadResult) -> None:
    again = cc.read_transcript(MAIN, main.state, final=True)
    assert again.events == [] and again.state.offset == main.state.offset
    links = cc.MemoryLinks()
    links.links.update(main.links)
    from_start = cc.read_transcript(MAIN, None, resolve=links, final=True)
    assert from_start.events == []
    assert from_start.dropped["duplicate uuid (already captured)"] == 39


def test_a_rewritten_file_restarts_above_every_seq_and_skips_known_uuids(
    tmp_path: Path, main: cc.ReadResult
) -> None:
    target = tmp_path / f"{SID}.jsonl"
    lines = MAIN.read_bytes().splitlines(keepends=True)
    target.write_bytes(b"".join(lines))
    links = cc.MemoryLinks()
    first = cc.read_transcript(target, resolve=links, final=True)
    links.add(first)
    extra = json.loads(lines[38])
    extra.update(uuid=U(42), parentUuid=U(41), message={"role": "user", "content": "Ship it."})
    # The file was rewritten: its first half gone, one new record at the end, so the
    # new record's offset is below offsets already used.
    target.write_bytes(b"".join(lines[20:]) + json.dumps(extra).encode() + b"\n")
    second = cc.read_transcript(target, first.state, resolve=links, final=True)
    assert second.rewritten
    assert [e["entry_id"] for e in second.events] == [U(42)]
    assert second.events[0]["seq"] > max(e["seq"] for e in first.events)
    assert second.events[0]["parent_id"] == U(41)


def test_malformed_lines_are_reported_and_the_rest_is_kept(tmp_path: Path) -> None:
    lines = MAIN.read_bytes().splitlines(keepends=True)
    target = tmp_path / f"{SID}.jsonl"
    target.write_bytes(b"".join(lines[:5]) + b"{not json\n[1, 2]\n" + b"".join(lines[5:]))
    result = cc.read_all(target)
    assert len(result.errors) == 2 and "not a JSON record" in result.errors[0]
    assert result.dropped["malformed line (not a JSON object)"] == 2
    assert len(result.events) == len(cc.read_all(MAIN).events)


def test_a_small_window_reads_in_parts_with_the_same_result(
    tmp_path: Path, main: cc.ReadResult
) -> None:
    state = None
    links = cc.MemoryLinks()
    events: list[dict[str, Any]] = []
    reads = 0
    while True:
        part = cc.read_transcript(MAIN, state, resolve=links, final=True, max_bytes=300)
        links.add(part)
        events += part.events
        state = part.state
        reads += 1
        if not part.more:
            break
    assert reads >= 5
    assert _strip_state(events) == _strip_state(main.events)


def test_cursor_state_round_trips_through_json(main: cc.ReadResult) -> None:
    text = json.dumps(main.state.to_dict())
    assert cc.CursorState.from_dict(json.loads(text)) == main.state
    assert cc.CursorState.from_dict(None) == cc.CursorState()


def test_the_reader_does_not_import_pydantic() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from memplug.hosts import claude_code as cc; "
        f"cc.read_all({str(MAIN)!r}); print('pydantic' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_copying_a_session_keeps_its_subagents_beside_it(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES, tmp_path / "projects")
    copied = tmp_path / "projects" / f"{SID}.jsonl"
    names = [p.name for p in cc.subagent_paths(copied)]
    assert names == ["agent-a1b2c3d.jsonl", "agent-acompact-7f3e21.jsonl"]
    assert cc.subagent_paths(tmp_path / "none.jsonl") == []
