"""A Claude Code ``PreToolUse`` hook answers a broken precondition with a deny, and
reads the config file's ``[validation]`` table, not its text, to tell whether it must
validate the configuration at all (a cost every tool call would pay)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_hook_imports import RUN

PRE = """
[[validation.preconditions]]
name = "append-only"
tools = ["Write"]
mustNotExist = ["migrations/*.sql"]
"""


def pre_tool(tmp_path: Path, config: str, file_path: str) -> tuple[str, list[str]]:
    """The hook's answer to a Write of ``file_path`` in a project with one migration,
    and the modules its process loaded."""
    (tmp_path / "migrations").mkdir(exist_ok=True)
    (tmp_path / "migrations" / "0001_init.sql").write_text("")
    (tmp_path / "memory.toml").write_text(config)
    transcript = tmp_path / "s.jsonl"
    transcript.write_text("")
    payload = {
        "hook_event_name": "PreToolUse",
        "session_id": "s",
        "transcript_path": str(transcript),
        "cwd": str(tmp_path),
        "tool_name": "Write",
        "tool_input": {"file_path": file_path},
    }
    modules = tmp_path / "modules.json"
    db = str(tmp_path / "memory.sqlite")
    # The transcript read once already: the PreToolUse hook has nothing to capture.
    stop = json.dumps({**payload, "hook_event_name": "Stop"})
    hook = [sys.executable, "-m", "memplug.cli", "--db", db, "hook", "claude-code"]
    subprocess.run(hook, input=stop, capture_output=True, text=True, check=True)
    done = subprocess.run(
        [sys.executable, "-c", RUN, str(modules), "--db", db, "hook", "claude-code"],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout, json.loads(modules.read_text())


def test_a_broken_precondition_is_denied(tmp_path: Path) -> None:
    out, _ = pre_tool(tmp_path, PRE, "migrations/0001_init.sql")
    decision = json.loads(out)["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny"
    assert "append-only" in decision["permissionDecisionReason"]
    assert pre_tool(tmp_path, PRE, "migrations/0002_next.sql")[0] == ""


@pytest.mark.parametrize(
    "config",
    [
        "# preconditions: none yet\n[retrieval]\n",
        '[validation]\nchecks = [{type = "preconditions-are-not-a-check"}]\n',
        "",
    ],
)
def test_a_file_that_only_mentions_them_validates_nothing(tmp_path: Path, config: str) -> None:
    out, modules = pre_tool(tmp_path, config, "migrations/0001_init.sql")
    assert out == ""
    assert "memplug.base.config" not in modules
