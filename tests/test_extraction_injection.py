"""What a coding session decided reaches the next one (issue 24).

A Claude Code transcript modelled on a real session (``fixtures/extraction/claude_code``:
an option pick, a prohibition, a choice that replaces another tool, thanks) is captured
by the hook; its decisions and constraints stand in ``memory core`` for the project and
open the next session's first injection, SessionStart and the first UserPromptSubmit,
each with its source quoted. The SessionStart context is a golden file.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import CliResult

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "fixtures" / "extraction" / "claude_code"
GOLDEN = REPO / "fixtures" / "golden" / "extraction-next-session.en.txt"
SID = "7c0de5e5-0a1b-4c2d-8e3f-aced00000024"
CWD = "/home/dev/scenario-tester"
Cli = Callable[..., CliResult]


@pytest.fixture
def captured(cli: Cli, db_path: Path, tmp_path: Path) -> Callable[..., CliResult]:
    """The database after the coding session's Stop hook, and the hook to run next."""
    project = tmp_path / "projects" / "-home-dev-scenario-tester"
    shutil.copytree(FIXTURE, project)

    def hook(event: str, session: str, **fields: Any) -> CliResult:
        payload = {
            "session_id": session,
            "transcript_path": str(project / f"{session}.jsonl"),
            "cwd": CWD,
            "hook_event_name": event,
            **fields,
        }
        return cli("--db", str(db_path), "hook", "claude-code", input=json.dumps(payload))

    assert hook("Stop", SID, stop_hook_active=False).returncode == 0
    (project / "next.jsonl").write_text("")
    return hook


def _context(result: CliResult) -> str:
    assert result.returncode == 0, result.stderr
    context: str = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    return context


def test_the_sessions_choices_stand_in_the_project_core(
    captured: Callable[..., CliResult], cli: Cli, db_path: Path
) -> None:
    core = cli("--db", str(db_path), "core", "--project", CWD, "--json")
    assert core.returncode == 0, core.stderr
    lines = {(line["kind"], line["text"]) for line in core.json()["lines"]}
    assert lines == {
        ("constraint", "we explicitly don't want hardcoded visual tests."),
        ("decision", "let's use apple container instead of docker proper."),
        ("decision", "Computer use tools: type, click, drag, screenshot"),
    }
    timeline = cli("--db", str(db_path), "timeline", "--project", CWD, "--json")
    assert timeline.returncode == 0, timeline.stderr
    entries = {(e["kind"], e["text"]) for e in timeline.json()["entries"]}
    assert lines <= entries


def test_the_next_session_opens_with_them_quoted(captured: Callable[..., CliResult]) -> None:
    start = _context(captured("SessionStart", "next", source="startup"))
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.write_text(start, encoding="utf-8")
    assert start == GOLDEN.read_text(encoding="utf-8")
    first = _context(
        captured("UserPromptSubmit", "next", prompt="Set up the runner image for the tests.")
    )
    for quoted in (
        "constraint, user said: we explicitly don't want hardcoded visual tests.",
        "decision, user said: let's use apple container instead of docker proper.",
        "decision, user said: Computer use tools: type, click, drag, screenshot",
    ):
        assert quoted in start and quoted in first
    # The pick cites the assistant's offer and the reply.
    assert f"[ev {SID}:4] [ev {SID}:5]" in start
