"""`memory import` of what a newcomer points it at: a directory, /dev/null, a Claude
Code transcript (through the installed script)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.installed import memory

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "claude_code"
SID = "5e1f0c2a-7b3d-4e8f-9a10-c0ffee000001"


def test_a_directory_is_named_as_one(tmp_path: Path) -> None:
    done = memory("--db", str(tmp_path / "m.sqlite"), "import", str(tmp_path))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        f"Error: {tmp_path} is a directory with no Codex rollout in it: give JSONL files"
        f" (memory import {tmp_path}/*.jsonl)\n"
    )


def test_dev_null_is_an_empty_stream_not_a_missing_file(tmp_path: Path) -> None:
    done = memory("--db", str(tmp_path / "m.sqlite"), "import", "/dev/null")
    assert (done.returncode, done.stdout) == (0, "0 new, 0 already present, 0 rejected\n")
    missing = memory("--db", str(tmp_path / "m.sqlite"), "import", str(tmp_path / "nope"))
    assert missing.stderr == f"Error: no such file: {tmp_path / 'nope'}\n"


def test_a_claude_code_transcript_is_captured_as_the_hook_would(tmp_path: Path) -> None:
    copy = tmp_path / "projects"
    shutil.copytree(FIXTURES, copy)
    transcript = copy / f"{SID}.jsonl"
    imported, hooked = tmp_path / "imported.sqlite", tmp_path / "hooked.sqlite"
    done = memory("--db", str(imported), "import", str(transcript), "--json")
    assert done.returncode == 0, done.stderr
    data = done.json()
    assert data["new"] > 30 and data["rejected"] == []
    assert data["claude_code_transcripts"] == [str(transcript)]
    payload = {"session_id": SID, "transcript_path": str(transcript), "hook_event_name": "Stop"}
    hook = memory("--db", str(hooked), "hook", "claude-code", input=json.dumps(payload))
    assert hook.returncode == 0, hook.stderr
    # The same events as the hook stores, subagents included.
    exports = [memory("--db", str(db), "export").stdout for db in (imported, hooked)]
    assert exports[0] == exports[1] and f"{SID}/agent-" in exports[0]
    again = memory("--db", str(imported), "import", str(transcript), "--json").json()
    assert again["new"] == 0
