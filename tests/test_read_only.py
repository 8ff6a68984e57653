"""A database the user may read but not write (a snapshot, a backup, another user's
file): reading commands work, writing ones give one line."""

from __future__ import annotations

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
