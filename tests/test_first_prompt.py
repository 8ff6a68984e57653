"""The first prompt of a new session gets what its second would: before the session has
any event stored, retrieval reads the project the host names (its cwd)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from conftest import SESSIONS, CliResult

PROMPT = "Morning. Where were we with the checkout p95 and the Stripe key?"


def test_a_new_session_s_first_prompt_quotes_the_project_s_evidence(
    cli: Callable[..., CliResult], db_path: Path, tmp_path: Path
) -> None:
    assert cli("--db", str(db_path), "import", str(SESSIONS / "shop.jsonl")).returncode == 0
    empty = tmp_path / "new.jsonl"
    empty.write_text("")
    base = {"session_id": "new-1", "transcript_path": str(empty), "cwd": "/home/ana/shop"}
    for event in ({"hook_event_name": "SessionStart", "source": "startup"},
                  {"hook_event_name": "UserPromptSubmit", "prompt": PROMPT}):  # fmt: skip
        done = cli("--db", str(db_path), "hook", "claude-code", input=json.dumps({**base, **event}))
        assert done.returncode == 0
    text = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    # Quoted, or pointed at in the index: the project's evidence is in the first message.
    assert ("## Raw evidence" in text or "## Index" in text) and "[ev shop-1" in text
    explained = cli("--db", str(db_path), "explain", "--session", "new-1", "--json").json()
    assert explained["coverage"]["complete"] is True
    assert "unknown_session" not in explained["coverage"]["reasons"]
