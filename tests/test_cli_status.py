"""`memory status` shows what the hooks could not record (issue: a bad config silences them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.installed import memory

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "claude_code"
SID = "5e1f0c2a-7b3d-4e8f-9a10-c0ffee000001"
BAD = {"MEMPLUG_ASSEMBLY__SOFT_BUDGET_TOKENS": "abc"}


def _hook(db: Path, env: dict[str, str] | None = None) -> None:
    payload = {
        "session_id": SID,
        "transcript_path": str(FIXTURES / f"{SID}.jsonl"),
        "cwd": "/home/ana/shop",
        "hook_event_name": "UserPromptSubmit",
        "prompt": "which port?",
    }
    done = memory("--db", str(db), "hook", "claude-code", input=json.dumps(payload), env=env)
    # Right for the host: nothing printed, exit 0, whatever the configuration.
    assert done.returncode == 0
    if env:
        assert done.stdout == ""


@pytest.mark.parametrize("captured_first", [False, True])
def test_a_bad_config_that_silenced_the_hooks_shows_in_status(
    tmp_path: Path, captured_first: bool
) -> None:
    db = tmp_path / "memory.sqlite"
    if captured_first:
        _hook(db)
    _hook(db, BAD)
    _hook(db, BAD)
    text = memory("--db", str(db), "status")
    assert text.returncode == 0, text.stderr
    assert "hook errors not yet in error_log: 2 (the database could not take them)" in text.stdout
    assert "MEMPLUG_ASSEMBLY__SOFT_BUDGET_TOKENS: Expected `int`, got `str`" in text.stdout
    data = json.loads(memory("--db", str(db), "status", "--json").stdout)
    assert data["exists"] is captured_first
    assert data["hook_pending"]["count"] == 2
    assert "assembly.softBudgetTokens" in data["hook_pending"]["latest"][-1]


def test_pending_hook_errors_move_to_the_error_log_once_a_hook_can_write(tmp_path: Path) -> None:
    db = tmp_path / "memory.sqlite"
    _hook(db, BAD)
    _hook(db)
    data = json.loads(memory("--db", str(db), "status", "--json").stdout)
    assert data["hook_pending"] == {"count": 0, "latest": []}
    assert any("softBudgetTokens" in e["message"] for e in data["latest_errors"])
