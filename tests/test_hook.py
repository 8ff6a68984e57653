"""`memory hook claude-code` run as Claude Code runs it: a fresh process, JSON on stdin."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import pytest

from memplug.hosts import claude_code as cc
from memplug.hosts import claude_hook
from memplug.memory import Memory
from memplug.store.db import BUSY_TIMEOUT_MS
from tests.conftest import CliResult

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "claude_code"
SID = "5e1f0c2a-7b3d-4e8f-9a10-c0ffee000001"
# Events of the main session, its Task subagent and its compaction agent.
ALL_EVENTS = sum(len(cc.read_all(p).events) for p in FIXTURES.rglob("*.jsonl") if SID in str(p))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the fixture transcripts where Claude Code would keep them."""
    target = tmp_path / "projects" / "-home-ana-shop"
    shutil.copytree(FIXTURES, target)
    return target


@pytest.fixture
def hook(
    cli_process: Callable[..., CliResult], project: Path, db_path: Path
) -> Callable[..., CliResult]:
    """The hook as Claude Code runs it: a fresh process (its import diet is the point)."""

    def run(event: str, stdin: str | None = None, **fields: Any) -> CliResult:
        payload = {
            "session_id": SID,
            "transcript_path": str(project / f"{SID}.jsonl"),
            "cwd": "/home/ana/shop",
            "permission_mode": "default",
            "hook_event_name": event,
            **fields,
        }
        text = stdin if stdin is not None else json.dumps(payload)
        return cli_process("--db", str(db_path), "hook", "claude-code", input=text)

    return run


def status(cli: Callable[..., CliResult], db_path: Path) -> dict[str, Any]:
    result = cli("--db", str(db_path), "status", "--json")
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = result.json()
    return data


def errors(cli: Callable[..., CliResult], db_path: Path) -> list[str]:
    return [e["message"] for e in status(cli, db_path)["latest_errors"] if e["stage"] == "hook"]


def test_session_start_captures_the_session_and_its_subagents(
    hook: Callable[..., CliResult], cli: Callable[..., CliResult], db_path: Path, project: Path
) -> None:
    result = hook("SessionStart", source="startup")
    assert result.returncode == 0
    # What precedes the transcript's compaction comes back as the project's core.
    assert "## Project core" in json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    data = status(cli, db_path)
    assert data["counts"]["events"] == ALL_EVENTS
    sessions = {s["session_id"]: s for s in data["sessions"]}
    assert set(sessions) == {SID, f"{SID}/agent-a1b2c3d", f"{SID}/agent-acompact-7f3e21"}
    assert sessions[SID]["project"] == "/home/ana/shop"
    assert errors(cli, db_path) == []
    transcript = project / f"{SID}.jsonl"
    cursor = next(c for c in data["host_cursors"] if c["session_id"] == SID)
    assert (cursor["host"], cursor["path"]) == ("claude-code", str(transcript))
    assert cursor["byte_offset"] == transcript.stat().st_size
    text = cli("--db", str(db_path), "status").stdout
    assert f"claude-code {SID}: {transcript} read to byte" in text


def test_hooks_are_idempotent_and_a_repeat_opens_nothing(
    hook: Callable[..., CliResult], cli: Callable[..., CliResult], db_path: Path
) -> None:
    hook("Stop", stop_hook_active=False)
    first = status(cli, db_path)["counts"]
    for event in ("Stop", "PostToolUse", "SessionEnd"):
        assert hook(event).returncode == 0
    assert status(cli, db_path)["counts"] == first
    assert errors(cli, db_path) == []


def test_the_same_events_whether_read_in_pieces_or_at_once(
    cli: Callable[..., CliResult], project: Path, tmp_path: Path
) -> None:
    lines = (project / f"{SID}.jsonl").read_bytes().splitlines(keepends=True)
    growing = tmp_path / "growing" / f"{SID}.jsonl"
    growing.parent.mkdir()
    db = tmp_path / "pieces.sqlite"
    for end, event in (
        (9, "PreToolUse"),
        (13, "PostToolUse"),
        (30, "PostToolUse"),
        (len(lines), "Stop"),
    ):
        growing.write_bytes(b"".join(lines[:end]) + b'{"partial": ')
        payload = {"session_id": SID, "transcript_path": str(growing), "hook_event_name": event}
        result = cli("--db", str(db), "hook", "claude-code", input=json.dumps(payload))
        assert (result.returncode, result.stdout) == (0, "")
    exported = cli("--db", str(db), "export", "--session", SID)
    got = [json.loads(line) for line in exported.stdout.splitlines()]
    expected = cc.read_all(project / f"{SID}.jsonl").events
    assert [(e["seq"], e["type"], e.get("entry_id")) for e in got] == [
        (e["seq"], e["type"], e.get("entry_id")) for e in expected
    ]
    joined = next(e for e in got if e.get("entry_id") == "00000000-0000-4000-8000-000000000012")
    assert joined["text"].endswith("I suggest we change app.toml to port 8080.")


def test_user_prompt_submit_injects_memory_from_before_the_compaction(
    hook: Callable[..., CliResult], cli: Callable[..., CliResult], db_path: Path
) -> None:
    hook("SessionStart", source="startup")
    result = hook("UserPromptSubmit", prompt="Which port does the checkout API listen on?")
    assert result.returncode == 0, result.stderr
    output = json.loads(result.stdout)
    assert output["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    context = output["hookSpecificOutput"]["additionalContext"]
    assert "8080" in context and 0 < len(context) < 10_000
    explained = cli("--db", str(db_path), "explain", "--json").json()
    assert explained["trigger"] == "claude-code:UserPromptSubmit"
    assert explained["query"]["text"] == "Which port does the checkout API listen on?"


def test_a_failed_assembly_injects_nothing_and_is_recorded(
    project: Path, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memplug.memory import Memory
    from memplug.recall.assemble import MemorySource

    def broken(self: MemorySource, session_id: str, task_text: str) -> None:
        raise RuntimeError("index unavailable")

    monkeypatch.setattr(MemorySource, "candidates", broken)
    payload = {"session_id": SID, "transcript_path": str(project / f"{SID}.jsonl"),
               "cwd": "/home/ana/shop", "hook_event_name": "UserPromptSubmit",
               "prompt": "Which port does the checkout API listen on?"}  # fmt: skip
    assert claude_hook.main(json.dumps(payload).encode(), db_path=str(db_path)) == ""
    with Memory.open(db_path, create=False) as memory:
        messages = [e["message"] for e in memory.store.events.latest_errors()]
        logged = memory.store.logs.latest()
        events = memory.store.counts()["events"]
    assert events == ALL_EVENTS  # capture went on: the failure was only the assembly
    assert any("failed: RuntimeError: index unavailable" in m for m in messages)
    assert logged is not None and not logged.injected
    assert logged.errors == ["RuntimeError: index unavailable"]


def test_session_start_after_compaction_or_resume_reinjects(
    hook: Callable[..., CliResult],
) -> None:
    for source in ("startup", "compact", "resume"):
        result = hook("SessionStart", source=source)
        assert result.returncode == 0
        output = json.loads(result.stdout)["hookSpecificOutput"]
        assert output["hookEventName"] == "SessionStart"
        assert output["additionalContext"].startswith("[memplug]")


def test_a_new_session_starts_with_its_projects_core(
    hook: Callable[..., CliResult], cli: Callable[..., CliResult], db_path: Path, project: Path
) -> None:
    hook("Stop", stop_hook_active=False)
    standing = cli("--db", str(db_path), "core", "--project", "/home/ana/shop", "--json").json()
    assert standing["lines"], "the fixture session states constraints"
    fresh = project / "fresh-session.jsonl"
    fresh.write_text("")
    result = hook("SessionStart", source="startup", session_id="fresh", transcript_path=str(fresh))
    assert result.returncode == 0, result.stderr
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "## Project core" in context
    for line in standing["lines"]:
        if line["kind"] != "task":
            assert line["ref"] in context
    # Elsewhere nothing is standing: a new session there gets nothing.
    elsewhere = hook(
        "SessionStart", source="startup", session_id="other", transcript_path=str(fresh), cwd="/x"
    )
    assert (elsewhere.returncode, elsewhere.stdout) == (0, "")


def test_the_character_cap_holds_and_what_it_cut_is_logged(
    hook: Callable[..., CliResult], cli: Callable[..., CliResult], db_path: Path
) -> None:
    db_path.parent.mkdir(parents=True, exist_ok=True)
    (db_path.parent / "memory.toml").write_text("[hook]\nmaxContextChars = 1400\n")
    hook("SessionStart", source="startup")
    result = hook("UserPromptSubmit", prompt="port 8080 staging database card numbers checkout")
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert len(context) <= 1400
    explained = cli("--db", str(db_path), "explain", "--json").json()
    assert explained["budget"] <= 1400 // 4
    sections = explained["sections"]
    assert any(section["included"] for section in sections)
    reasons = {o["reason"] for section in sections for o in section["omitted"]}
    assert "over budget" in reasons
    # Without the cap the same prompt brings more.
    (db_path.parent / "memory.toml").unlink()
    uncapped = hook("UserPromptSubmit", prompt="port 8080 staging database card numbers checkout")
    assert len(json.loads(uncapped.stdout)["hookSpecificOutput"]["additionalContext"]) > 1400


@pytest.mark.parametrize(
    "stdin",
    ["not json at all {{{", "[1, 2, 3]", "", '{"hook_event_name": "Nope", "session_id": "s"}'],
)
def test_bad_input_exits_0_prints_nothing_and_is_recorded(
    hook: Callable[..., CliResult], cli: Callable[..., CliResult], db_path: Path, stdin: str
) -> None:
    result = hook("UserPromptSubmit", stdin=stdin)
    assert (result.returncode, result.stdout) == (0, "")
    assert len(errors(cli, db_path)) == 1


def test_a_missing_transcript_is_recorded_and_the_prompt_still_answered(
    hook: Callable[..., CliResult], cli: Callable[..., CliResult], db_path: Path, project: Path
) -> None:
    hook("Stop")
    (project / f"{SID}.jsonl").unlink()
    result = hook("UserPromptSubmit", prompt="Which port does the checkout API listen on?")
    assert result.returncode == 0
    assert "8080" in json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert any("does not exist" in e for e in errors(cli, db_path))


def test_a_held_write_lock_skips_capture_within_the_deadline_and_still_injects(
    hook: Callable[..., CliResult], cli: Callable[..., CliResult], db_path: Path, project: Path
) -> None:
    transcript = project / f"{SID}.jsonl"
    full = transcript.read_bytes()
    lines = full.splitlines(keepends=True)
    # Captured through the compaction (records 35–37), so the decision made before it is
    # out of the model's context and memory must bring it back.
    transcript.write_bytes(b"".join(lines[:37]))
    hook("Stop")
    before = status(cli, db_path)["counts"]["events"]
    transcript.write_bytes(full)
    writer = apsw.Connection(str(db_path))
    writer.execute("BEGIN IMMEDIATE")
    try:
        started = time.monotonic()
        result = hook("UserPromptSubmit", prompt="Which port does the checkout API listen on?")
        elapsed = time.monotonic() - started
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    # Bounded waits (1 s for the lock, 0.25 s per log write) instead of the 5 s busy
    # timeout on each of its four writes (≥ 20 s); the rest is process start on a busy CI.
    assert result.returncode == 0 and elapsed < 4 * BUSY_TIMEOUT_MS / 1000
    assert "8080" in json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert status(cli, db_path)["counts"]["events"] == before
    hook("Stop")  # catches up, and writes down what the locked hook could not
    assert status(cli, db_path)["counts"]["events"] == ALL_EVENTS
    assert any("capture skipped" in e for e in errors(cli, db_path))


def test_subagent_stop_captures_the_subagent_transcript(
    hook: Callable[..., CliResult], cli: Callable[..., CliResult], db_path: Path, project: Path
) -> None:
    agent = project / SID / "subagents" / "agent-a1b2c3d.jsonl"
    hook("SubagentStop", agent_id="a1b2c3d", agent_transcript_path=str(agent))
    sessions = {s["session_id"]: s["events"] for s in status(cli, db_path)["sessions"]}
    assert sessions[f"{SID}/agent-a1b2c3d"] == 5


def test_what_a_subagent_did_carries_its_agent_tag(
    hook: Callable[..., CliResult], cli: Callable[..., CliResult], db_path: Path, project: Path
) -> None:
    agent = project / SID / "subagents" / "agent-a1b2c3d.jsonl"
    hook("SubagentStop", agent_id="a1b2c3d", agent_transcript_path=str(agent))
    timeline = cli("--db", str(db_path), "timeline", "--scope", "agent:a1b2c3d", "--json")
    assert timeline.returncode == 0, timeline.stderr
    entries = timeline.json()["entries"]
    assert entries and {(e["session_id"], e["agent"]) for e in entries} == {
        (f"{SID}/agent-a1b2c3d", "a1b2c3d")
    }
    assert "tool_succeeded" in {e["kind"] for e in entries}
    main = cli("--db", str(db_path), "timeline", "--scope", f"session:{SID}", "--json").json()
    assert main["entries"] and {e["agent"] for e in main["entries"]} == {None}


def test_a_hook_with_nothing_new_loads_neither_click_nor_pydantic(
    hook: Callable[..., CliResult], project: Path, db_path: Path
) -> None:
    hook("Stop")
    payload = {
        "session_id": SID,
        "transcript_path": str(project / f"{SID}.jsonl"),
        "hook_event_name": "PostToolUse",
    }
    code = (
        "import sys, json; from memplug.hosts import claude_hook as h; "
        f"r = h.handle(json.loads(sys.argv[1]), db_path={str(db_path)!r}); "
        "print(json.dumps([r.opened, r.errors, 'pydantic' in sys.modules, 'click' in sys.modules]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(payload)], capture_output=True, text=True
    )
    assert json.loads(out.stdout) == [False, [], False, False], out.stderr


def test_the_claude_code_doc_names_every_hook_and_setting() -> None:
    doc = (Path(__file__).resolve().parent.parent / "docs" / "claude-code.md").read_text()
    missing = [event for event in sorted(claude_hook.HOOK_EVENTS) if f"`{event}`" not in doc]
    assert not missing, f"docs/claude-code.md does not describe {missing}"
    for key in ("hook.maxContextChars", "hook.deadlineMs", "maxContextChars", "deadlineMs"):
        assert key in doc


def _append(path: Path, *records: dict[str, Any]) -> None:
    with path.open("a", encoding="utf-8") as stream:
        for record in records:
            stream.write(json.dumps(record) + "\n")


def _prompt(uuid: str, parent: str | None, text: str) -> dict[str, Any]:
    return {"type": "user", "uuid": uuid, "parentUuid": parent, "isSidechain": False,
            "message": {"role": "user", "content": text}}  # fmt: skip


def _hook_context(uuid: str, parent: str, text: str) -> dict[str, Any]:
    """How Claude Code (2.1.x) records a hook's additionalContext."""
    attachment = {"type": "hook_additional_context", "content": [text],
                  "hookName": "UserPromptSubmit", "hookEvent": "UserPromptSubmit"}  # fmt: skip
    return {"type": "attachment", "uuid": uuid, "parentUuid": parent, "isSidechain": False,
            "sessionId": SID, "attachment": attachment}  # fmt: skip


def _said(result: CliResult) -> str:
    return str(json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"])


@pytest.mark.parametrize("recorded", [True, False], ids=["attachment", "assembly-logs"])
def test_an_injection_is_not_said_again_until_a_compaction(
    hook: Callable[..., CliResult],
    cli: Callable[..., CliResult],
    project: Path,
    db_path: Path,
    recorded: bool,
) -> None:
    # The main session's transcript records memplug's context; the second session's,
    # read by a host that does not, leaves memplug its own assembly logs to go by.
    sid = SID if recorded else SID[:-1] + "2"
    path = project / f"{sid}.jsonl"
    session = {"session_id": sid, "transcript_path": str(path)}
    prompt = "Which port does the checkout API listen on?"
    last = json.loads(path.read_text(encoding="utf-8").splitlines()[-1]).get("uuid")
    hook("Stop")  # the main session is captured: the second one recalls from it
    said = _said(hook("UserPromptSubmit", prompt=prompt, **session))
    assert "8080" in said
    _append(path, _prompt("p-1", last, prompt))
    if recorded:
        _append(path, _hook_context("c-1", "p-1", said))
    again = hook("UserPromptSubmit", prompt=prompt, **session)
    assert again.returncode == 0
    quoted = {line for line in said.splitlines() if line.startswith("- [")}
    assert not quoted & set(_said(again).splitlines() if again.stdout.strip() else [])
    explained = cli("--db", str(db_path), "explain", "--json").json()
    assert explained["omitted_by_reason"].get("already_injected", 0) > 0
    left = [o for s in explained["sections"] for o in s["omitted"]]
    cited = [o["ref"] for o in left if o["reason"] == "already_injected"]
    assert cited and all(r in said or r.startswith("task:") or f":{r.split(':')[-1]}]" in said
                         for r in cited)  # fmt: skip
    assert "already_injected" in cli("--db", str(db_path), "explain").stdout
    # After a compaction the context no longer holds it: it may come back.
    boundary = {"type": "system", "subtype": "compact_boundary", "uuid": "b-1",
                "content": "Conversation compacted", "parentUuid": None,
                "logicalParentUuid": "p-1", "sessionId": sid}  # fmt: skip
    _append(path, _prompt("p-2", "p-1", prompt), boundary)
    assert "8080" in _said(hook("UserPromptSubmit", prompt=prompt, **session))


def test_after_a_compaction_the_query_is_the_work_at_hand_never_continue() -> None:
    summary = (
        "This session is being continued from a previous conversation.\n"
        "1. Primary Request and Intent:\n   Speed up checkout.\n"
        "8. Current Work:\n   Adding the partial index on orders(status).\n"
        "9. Optional Next Step:\n   Run the load test against staging.\n"
        "If you need specific details from before compaction, read the transcript."
    )
    focus = claude_hook.work_at_hand([{"type": "compaction/summary", "text": summary}])
    assert focus is not None
    assert "partial index on orders(status)" in focus and "load test" in focus
    assert "Speed up checkout" not in focus and "read the transcript" not in focus
    assert claude_hook.work_at_hand([{"type": "user/message", "text": "continue"}]) is None


def test_tool_hooks_leave_a_short_backlog_and_derivation_to_the_turns_end(
    cli: Callable[..., CliResult], project: Path, tmp_path: Path
) -> None:
    """A tool hook reads nothing under the bound and derives nothing at all; the Stop
    after it catches up from the same cursor, and derives even with no byte new."""
    from memplug.hosts.claude_idle import TOOL_BACKLOG_BYTES

    lines = (project / f"{SID}.jsonl").read_bytes().splitlines(keepends=True)
    growing = tmp_path / "growing" / f"{SID}.jsonl"
    growing.parent.mkdir()
    db = tmp_path / "turns.sqlite"

    def run(event: str) -> dict[str, Any]:
        payload = {"session_id": SID, "transcript_path": str(growing), "hook_event_name": event}
        result = cli("--db", str(db), "hook", "claude-code", input=json.dumps(payload))
        assert (result.returncode, result.stdout) == (0, "")
        return next(s for s in status(cli, db)["sessions"] if s["session_id"] == SID)

    growing.write_bytes(b"".join(lines[:9]))
    before = run("Stop")
    assert before["extraction_lag"] == 0
    growing.write_bytes(b"".join(lines[:30]))
    assert run("PostToolUse") == before  # a short backlog waits
    after = run("Stop")
    assert after["events"] > before["events"] and after["extraction_lag"] == 0

    # Past the bound the tool hook captures, and still leaves derivation to Stop.
    padding = b" " * TOOL_BACKLOG_BYTES + b"\n"
    growing.write_bytes(b"".join(lines) + padding)
    captured = run("PostToolUse")
    assert captured["events"] > after["events"] and captured["extraction_lag"] > 0
    assert Memory.derivation_lags(db, [SID])  # what Stop reads when no byte is new
    done = run("Stop")
    assert done["events"] >= captured["events"] and done["extraction_lag"] == 0
    assert not Memory.derivation_lags(db, [SID])
