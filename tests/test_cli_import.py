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
    assert again["present"] == data["new"]  # the whole file is counted, each time


def test_a_transcript_with_a_malformed_line_gives_the_same_counts_each_time(
    tmp_path: Path,
) -> None:
    lines = (FIXTURES / f"{SID}.jsonl").read_text().splitlines(keepends=True)
    transcript = tmp_path / f"{SID}.jsonl"
    transcript.write_text("".join(lines[:5]) + '{"broken\n' + "".join(lines[5:]))
    db = tmp_path / "m.sqlite"
    first, second = (memory("--db", str(db), "import", str(transcript)) for _ in range(2))
    assert (first.returncode, second.returncode) == (2, 2)
    new = int(first.stdout.split()[0])
    assert new > 20 and first.stdout.startswith(f"{new} new, 0 already present")
    assert second.stdout.startswith(f"0 new, {new} already present")
    for done in (first, second):
        assert "1 malformed line(s) skipped" in done.stderr


def test_a_hook_goes_on_from_an_import_and_an_import_from_a_hook(tmp_path: Path) -> None:
    """The import's re-read moves the cursor forward only: seqs never repeat or skip."""
    lines = (FIXTURES / f"{SID}.jsonl").read_text().splitlines(keepends=True)
    transcript = tmp_path / f"{SID}.jsonl"
    db = tmp_path / "m.sqlite"
    payload = json.dumps(
        {"session_id": SID, "transcript_path": str(transcript), "hook_event_name": "Stop"}
    )
    transcript.write_text("".join(lines[:12]))
    assert memory("--db", str(db), "hook", "claude-code", input=payload).returncode == 0
    transcript.write_text("".join(lines[:30]))
    assert memory("--db", str(db), "import", str(transcript)).returncode == 0
    transcript.write_text("".join(lines))
    assert memory("--db", str(db), "hook", "claude-code", input=payload).returncode == 0
    assert memory("--db", str(db), "import", str(transcript)).stdout.startswith("0 new")
    whole = tmp_path / "whole.sqlite"
    assert memory("--db", str(whole), "import", str(transcript)).returncode == 0
    exports = [memory("--db", str(d), "export", "--session", SID).stdout for d in (db, whole)]
    assert exports[0] == exports[1]


def test_import_project_stores_the_events_under_it_and_keeps_their_cwd(tmp_path: Path) -> None:
    db = tmp_path / "m.sqlite"
    line = {"session_id": "pkg", "seq": 1, "type": "user/message", "role": "user",
            "text": "We use ruff.", "cwd": str(tmp_path / "mono" / "packages" / "api")}  # fmt: skip
    done = memory("--db", str(db), "import", "-", "--project", "api", input=json.dumps(line) + "\n")
    assert done.returncode == 0, done.stderr
    lines = (FIXTURES / f"{SID}.jsonl").read_text()
    transcript = tmp_path / f"{SID}.jsonl"
    transcript.write_text(lines)
    assert memory("--db", str(db), "import", str(transcript), "--project", "shop").returncode == 0
    sessions = {
        s["session_id"]: s["project"]
        for s in memory("--db", str(db), "status", "--json").json()["sessions"]
    }
    assert sessions["pkg"] == "api" and sessions[SID] == "shop"
    assert memory("--db", str(db), "inspect", "pkg:1", "--json").json()["cwd"] == line["cwd"]
    empty = memory("--db", str(db), "import", "-", "--project", " ", input="")
    assert empty.returncode == 2 and "--project is empty" in empty.stderr
