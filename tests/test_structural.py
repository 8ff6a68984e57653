"""Structural rules: typed transcript records (answered questions, approved plans, memory-file
edits, the agent's task list) become items and task state before any phrase rule runs.

The rules are pure functions of a call and its result (:func:`read_record`); the rest runs a
hand-written Claude Code transcript through the hook into a real SQLite file."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, CliResult
from derived_state import dump, ev

from memplug.derive.cues.structural import read_record
from memplug.memory import Memory

SID = "5e1f0c2a-7b3d-4e8f-9a10-c0ffee000003"
TRANSCRIPT = FIXTURES / "claude_code_structural" / f"{SID}.jsonl"
PLAN = "Approved plan: Orders cache — Add a Redis client (redis-py 5)."
REJECTED = "The user doesn't want to proceed with this tool use. The tool use was rejected."
QUESTION = {
    "question": "Which database for orders?",
    "header": "DB",
    "options": [
        {"label": "PostgreSQL 16", "description": "the team runs it already"},
        {"label": "SQLite", "description": "one file"},
    ],
}


def ask(answers: str) -> tuple[str, str]:
    call = "AskUserQuestion " + json.dumps({"questions": [QUESTION]})
    return call, f"User has answered your questions: {answers}. You can now continue."


def edit(path: str, old: str, new: str) -> str:
    return "Edit " + json.dumps({"file_path": path, "old_string": old, "new_string": new})


# -- the rules, record by record ----------------------------------------------------------------


def test_an_answer_is_a_decision_holding_the_question_and_the_chosen_option() -> None:
    call, result = ask('"Which database for orders?"="PostgreSQL 16"')
    (found,) = read_record("AskUserQuestion", call, result, "succeeded").candidates
    assert found.kind == "decision"
    assert found.rule == "structure.ask_answer@1"
    assert found.content == (
        "Which database for orders? → PostgreSQL 16 (the team runs it already)"
    )


def test_a_typed_answer_is_kept_as_the_person_wrote_it() -> None:
    call, result = ask('"Which database for orders?"="neither; keep the JSON files for now"')
    (found,) = read_record("AskUserQuestion", call, result, "succeeded").candidates
    assert found.content == "Which database for orders? → neither; keep the JSON files for now"


@pytest.mark.parametrize("outcome", ["aborted", "failed"])
def test_a_rejected_or_interrupted_question_makes_nothing(outcome: str) -> None:
    call, _ = ask("")
    reading = read_record("AskUserQuestion", call, REJECTED, outcome)
    assert reading.candidates == () and reading.tasks is None


def test_an_approved_plan_is_a_decision_named_by_its_title() -> None:
    plan = "# Plan: Add tar archive support\n\n1. Detect .tar.\n"
    call = "ExitPlanMode " + json.dumps({"plan": plan})
    (found,) = read_record(
        "ExitPlanMode", call, "User has approved your plan. You can now start coding.", None
    ).candidates
    assert found.kind == "decision"
    assert found.content == "Approved plan: Add tar archive support — Detect .tar."
    assert found.subject_key == "plan:add tar archive support"


def test_a_rejected_plan_makes_nothing() -> None:
    call = "ExitPlanMode " + json.dumps({"plan": "# Plan: X\n"})
    assert read_record("ExitPlanMode", call, REJECTED, "aborted").candidates == ()


def test_a_memory_file_edit_reads_its_changed_lines_with_the_phrase_rules_kinds() -> None:
    call = edit(
        "/repo/CLAUDE.md",
        "- Use npm for installs.\n- Keep it short.",
        "- Use pnpm for installs.\n- Keep it short.\n- Never push to main.\n# Layout\n",
    )
    found = read_record("Edit", call, "The file has been updated.", "succeeded").candidates
    assert [(c.kind, c.content, c.correction_target) for c in found] == [
        ("fact", "Use pnpm for installs.", "Use npm for installs."),
        ("constraint", "Never push to main.", None),
    ]
    assert {c.evidence for c in found} == {"artifact_verified"}


def test_a_removed_line_names_the_item_it_retracts() -> None:
    call = edit(
        "/repo/.claude/rules/style.md", "- Keep it short.\n- Use tabs here.", "- Keep it short."
    )
    (found,) = read_record("Edit", call, "updated", "succeeded").candidates
    assert found.retraction_target == "Use tabs here." and found.kind is None


@pytest.mark.parametrize(
    "path", ["/repo/README.md", "/repo/docs/CLAUDE.md.bak", "/repo/rules/x.md"]
)
def test_other_files_are_not_memory_files(path: str) -> None:
    call = edit(path, "", "- Never push to main.")
    assert read_record("Edit", call, "updated", "succeeded").candidates == ()


def test_a_todo_list_replaces_the_task_list() -> None:
    todos = [{"content": "A", "status": "completed"}, {"content": "B", "status": "in_progress"}]
    call = "TodoWrite " + json.dumps({"todos": todos})
    tasks = read_record("TodoWrite", call, "Todos have been modified successfully.", None).tasks
    assert tasks is not None and tasks.replaces_all
    assert [(t.text, t.status) for t in tasks.entries] == [("A", "completed"), ("B", "in_progress")]


# -- a real transcript through the hook ---------------------------------------------------------


@pytest.fixture
def captured(cli: Callable[..., CliResult], db_path: Path) -> Path:
    payload = {"session_id": SID, "transcript_path": str(TRANSCRIPT), "cwd": "/home/ana/shop",
               "hook_event_name": "Stop", "stop_hook_active": False}  # fmt: skip
    result = cli("--db", str(db_path), "hook", "claude-code", input=json.dumps(payload))
    assert result.returncode == 0, result.stderr
    return db_path


def items(cli: Callable[..., CliResult], db: Path) -> list[dict[str, Any]]:
    result = cli("--db", str(db), "items", "--scope", "global", "--json")
    assert result.returncode == 0, result.stderr
    return result.json()["items"]


def ref(seq: int) -> str:
    return f"{SID}:{seq}"


def test_each_typed_record_becomes_its_item_with_the_call_and_result_as_sources(
    cli: Callable[..., CliResult], captured: Path
) -> None:
    found = {(i["extractor"], i["content"]): i for i in items(cli, captured)}
    chosen = "Redis (A shared Redis instance, survives restarts)"
    answer = found[("structure.ask_answer@1", f"Which cache should the orders API use? → {chosen}")]
    assert (answer["kind"], answer["status"], answer["evidence_type"]) == (
        "decision", "active", "user_explicit")  # fmt: skip
    assert answer["source_refs"] == [ref(2), ref(3)]
    plan = found[("structure.plan_approved@1", PLAN)]
    assert plan["source_refs"] == [ref(9), ref(10)]
    # The rejected question (4-5) and the rejected plan (6-7) made nothing; nor did a
    # README, which is not a memory file.
    assert len([i for i in found if i[0] == "structure.ask_answer@1"]) == 1
    assert len([i for i in found if i[0] == "structure.plan_approved@1"]) == 1
    assert not any("Fridays" in content for _, content in found)


def test_memory_file_lines_follow_the_file_added_retracted_and_retried(
    cli: Callable[..., CliResult], captured: Path
) -> None:
    lines = {
        i["content"]: i for i in items(cli, captured) if i["extractor"] == "structure.memory_file@1"
    }
    assert {c: (i["kind"], i["status"]) for c, i in lines.items()} == {
        "Use pnpm for installs.": ("fact", "retracted"),
        "Never call Redis from a request handler without a timeout.": ("constraint", "active"),
        "Run the tests: `pnpm test --run`": ("fact", "active"),
        "Always run migrations inside a transaction.": ("constraint", "active"),
    }
    # The first attempt at the second edit failed (file not read); the retry wrote it.
    assert lines["Always run migrations inside a transaction."]["source_refs"] == [
        ref(15), ref(17), ref(18)]  # fmt: skip


def test_the_agents_task_list_is_the_task_state_and_reaches_the_core(
    cli: Callable[..., CliResult], captured: Path
) -> None:
    core = cli("--db", str(captured), "core", "--project", "/home/ana/shop", "--json").json()
    tasks = [
        (line["ref"].split(":")[-2], line["text"])
        for line in core["lines"]
        if line["kind"] == "task"
    ]
    assert tasks == [
        ("progress", "Add the Redis client"),
        ("open_items", "Cache GET /orders/{id}"),
        ("open_items", "Invalidate on PATCH"),
    ]
    kinds = {line["text"]: line["kind"] for line in core["lines"]}
    assert kinds[PLAN] == "decision"


def test_inspect_names_the_structural_rule(cli: Callable[..., CliResult], captured: Path) -> None:
    plan = next(i for i in items(cli, captured) if i["extractor"] == "structure.plan_approved@1")
    shown = cli("--db", str(captured), "inspect", plan["id"], "--json").json()
    assert shown["rule"]["summary"].startswith("An `ExitPlanMode` plan the person approved")


def test_rebuild_derives_the_same_rows(cli: Callable[..., CliResult], captured: Path) -> None:
    with Memory.open(captured) as memory:
        before = dump(memory)
        memory.rebuild()
        assert dump(memory) == before


def test_a_later_approved_plan_with_the_same_title_supersedes_the_earlier(memory: Memory) -> None:
    def plan_events(seq: int, plan: str) -> list[Any]:
        call = "ExitPlanMode " + json.dumps({"plan": plan})
        return [
            ev("p", seq, call, type="tool/call", role="assistant", tool_name="ExitPlanMode",
               call_id=f"c{seq}"),
            ev("p", seq + 1, "User has approved your plan.", type="tool/result",
               tool_name="ExitPlanMode", call_id=f"c{seq}", outcome="succeeded"),
        ]  # fmt: skip

    memory.ingest(plan_events(1, "# Plan: Cache\n60 s") + plan_events(3, "# Plan: Cache\n30 s"))
    plans = memory.store.items.find(session_ids=["p"])
    assert sorted((p.status, p.derived_from_seq) for p in plans) == [
        ("active", 4), ("superseded", 2)]  # fmt: skip
