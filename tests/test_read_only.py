"""A database the user may read but not write (a snapshot, a backup, another user's
file): reading commands work, writing ones give one line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import SESSIONS

READING = [
    ["status"],
    ["export"],
    ["items"],
    ["inspect", "shop-1:1"],
    ["search", "card"],
    ["expand", "shop-1:1"],
    ["config", "show"],
    ["skills", "list"],
    ["rules", "list"],
    ["timeline", "--scope", "global"],
    ["graph", "neighbors", "port:8080", "--scope", "global"],
    ["graph", "export", "--scope", "global"],
]
WRITING = [
    ["import", str(SESSIONS / "shop.jsonl")],
    ["rebuild"],
    ["assemble", "--session", "shop-1"],
]


def _protect(paths: list[Path]) -> None:
    """Make ``paths`` unwritable for this process: permissions stop anyone but root;
    root is stopped by the immutable attribute."""
    if os.geteuid() != 0:
        for path in paths:
            path.chmod(0o555 if path.is_dir() else 0o444)
        return
    subprocess.run(["chattr", "+i", *map(str, paths)], check=True)


def _release(paths: list[Path]) -> None:
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", *map(str, paths)], check=False)
    for path in paths:
        path.chmod(0o700 if path.is_dir() else 0o600)


@pytest.fixture(params=["file", "file and directory"])
def read_only_db(request: pytest.FixtureRequest, cli, tmp_path: Path) -> Iterator[Path]:
    """A database holding ``shop-1`` that cannot be written: only the file, or the file
    and its directory (where SQLite cannot make the WAL's shared-memory file)."""
    made = tmp_path / "made" / "memory.sqlite"
    assert cli("--db", str(made), "import", str(SESSIONS / "shop.jsonl")).returncode == 0
    snapshot = tmp_path / "snapshot"
    snapshot.mkdir()
    db = snapshot / "memory.sqlite"
    shutil.copyfile(made, db)
    protected = [db] if request.param == "file" else [db, snapshot]
    _protect(protected)
    try:
        yield db
    finally:
        _release(protected)


@pytest.mark.parametrize("command", READING, ids=lambda c: c[0])
def test_reading_commands_work_on_a_read_only_database(
    cli, read_only_db: Path, command: list[str]
) -> None:
    done = cli("--db", str(read_only_db), *command, "--json")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()


def test_a_read_only_database_is_read_in_full(cli, read_only_db: Path, tmp_path: Path) -> None:
    exported = cli("--db", str(read_only_db), "export")
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout.count("\n") == sum(
        1 for line in (SESSIONS / "shop.jsonl").read_text("utf-8").splitlines() if line.strip()
    )
    status = cli("--db", str(read_only_db), "status", "--json").json()
    assert status["counts"]["memory_items"] > 0


@pytest.mark.parametrize("command", WRITING, ids=lambda c: c[0])
def test_writing_commands_say_the_database_is_read_only(
    cli, read_only_db: Path, command: list[str]
) -> None:
    done = cli("--db", str(read_only_db), *command)
    assert done.returncode == 1
    # One line; `assemble` says which part failed (logging what it built) around it.
    assert done.stderr.startswith("Error: ") and done.stderr.count("\n") == 1
    assert (
        f"the database {read_only_db} is read-only: reading commands work, this one writes"
        in done.stderr
    )


FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "claude_code"
SID = "5e1f0c2a-7b3d-4e8f-9a10-c0ffee000001"


def _prompt_hook(cli, db: Path, transcript: Path) -> dict:
    payload = {
        "session_id": SID,
        "transcript_path": str(transcript),
        "cwd": "/home/ana/shop",
        "hook_event_name": "UserPromptSubmit",
        "prompt": "what did we decide about the card payments?",
    }
    done = cli("--db", str(db), "hook", "claude-code", input=json.dumps(payload))
    assert done.returncode == 0 and not done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else {}


def test_a_hook_injects_from_a_read_only_database_and_says_so_once(
    cli, read_only_db: Path, tmp_path: Path
) -> None:
    """The transcript holds lines to capture: they cannot be kept, memory is still read."""
    project = tmp_path / "projects" / "-home-ana-shop"
    shutil.copytree(FIXTURES, project)
    before = read_only_db.read_bytes()
    first = _prompt_hook(cli, read_only_db, project / f"{SID}.jsonl")
    assert first["hookSpecificOutput"]["additionalContext"].startswith("[memplug] Memory")
    assert "is read-only" in first["systemMessage"]
    assert "nothing new is kept" in first["systemMessage"]
    assert "`memory doctor`" in first["systemMessage"]
    again = _prompt_hook(cli, read_only_db, project / f"{SID}.jsonl")
    assert "systemMessage" not in again and again["hookSpecificOutput"]["additionalContext"]
    assert read_only_db.read_bytes() == before


def test_a_broken_database_is_told_once_until_it_works_again(cli, tmp_path: Path) -> None:
    project = tmp_path / "projects" / "-home-ana-shop"
    shutil.copytree(FIXTURES, project)
    transcript = project / f"{SID}.jsonl"
    db = tmp_path / "memory.sqlite"
    db.write_bytes(b"not a database " * 400)
    first = _prompt_hook(cli, db, transcript)
    assert set(first) == {"systemMessage"}
    assert "is corrupt or not a memplug database" in first["systemMessage"]
    assert "nothing is captured or shown until it is fixed" in first["systemMessage"]
    assert _prompt_hook(cli, db, transcript) == {}  # the same failure: quiet
    db.unlink()
    working = _prompt_hook(cli, db, transcript)  # a new file: capture works again
    assert "systemMessage" not in working
    db.write_bytes(b"still not a database " * 400)
    assert "systemMessage" in _prompt_hook(cli, db, transcript)  # another file: told anew
