"""Claude Code hooks fired at once as separate processes, and what they must leave."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import FIXTURES

from memplug.memory import Memory
from memplug.store.db import load_migrations

TRANSCRIPT = FIXTURES / "claude_code" / "5e1f0c2a-7b3d-4e8f-9a10-c0ffee000001.jsonl"
HOOKS = 12


def tool_hook_payload(work: Path, source: Path = TRANSCRIPT) -> str:
    """A PostToolUse payload over a copy of the transcript ``source`` in ``work``."""
    transcript = work / source.name
    if not transcript.exists():
        shutil.copy(source, transcript)
    return json.dumps(
        {
            "hook_event_name": "PostToolUse",
            "session_id": source.stem,
            "tool_name": "Bash",
            "transcript_path": str(transcript),
            "cwd": "/home/ana/shop",
        }
    )


def fire_hooks(
    db: Path, work: Path, count: int = HOOKS, source: Path = TRANSCRIPT
) -> list[subprocess.CompletedProcess[str]]:
    """``count`` PostToolUse hooks of one session started at once, as parallel tool calls
    in a first session fire them: separate processes, each its own interpreter."""
    payload = tool_hook_payload(work, source)
    command = [sys.executable, "-m", "memplug.cli", "--db", str(db), "hook", "claude-code"]
    started = [
        subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(count)
    ]
    done = []
    for process in started:
        out, err = process.communicate(payload, timeout=120)
        done.append(subprocess.CompletedProcess(process.args, process.returncode, out, err))
    return done


def assert_quiet(db: Path, done: list[subprocess.CompletedProcess[str]]) -> None:
    """Every hook exited 0 printing nothing, and none recorded an error anywhere."""
    assert [(d.returncode, d.stdout, d.stderr) for d in done] == [(0, "", "")] * len(done)
    assert not db.with_name(db.name + ".hook-pending.jsonl").exists()
    with Memory.open(db, create=False) as memory:
        assert memory.store.events.latest_errors(limit=100) == []
        assert memory.store.schema_version() == len(load_migrations())
