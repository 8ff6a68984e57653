"""One rule for a mistyped --db: only capturing commands create a database."""

from __future__ import annotations

from pathlib import Path

from memplug.cli.app import COMMANDS
from tests.installed import memory

# A command line for every command that reads or rebuilds: each must refuse a path
# with no database and leave nothing behind.
REFUSING: dict[str, list[str]] = {
    "export": ["export"],
    "items": ["items"],
    "inspect": ["inspect", "s:1"],
    "search": ["search", "port"],
    "expand": ["expand", "s:1"],
    "assemble": ["assemble", "--session", "s"],
    "explain": ["explain", "--session", "s"],
    "core": ["core"],
    "retract": ["retract", "mem_x"],
    "promote": ["promote", "mem_x"],
    "rebuild": ["rebuild"],
    "purge": ["purge", "--all", "--yes"],
    "rules": ["rules", "list"],
    "validate": ["validate", "--session", "s"],
    "timeline": ["timeline"],
    "ui": ["ui", "--no-open"],
    "graph": ["graph", "neighbors", "x"],
    "share": ["share", "--project", "p"],
    "unshare": ["unshare", "--project", "p"],
}
# Create the database (they capture), or never open it as a command of their own.
# `sync` captures what it pulls, so `sync` and `sync init` create it like `import`; so
# does `remember`, which captures the one event it keeps. `doctor` reports a missing
# file as a finding (exit 1) and creates nothing (tests/test_doctor.py).
OTHERS = {
    "doctor",
    "import",
    "remember",
    "skills",
    "hook",
    "status",
    "config",
    "install",
    "uninstall",
    "mcp",
    "sync",
}


def test_every_command_is_classified() -> None:
    assert set(REFUSING) | OTHERS == set(COMMANDS)


def test_reading_and_rebuilding_commands_never_create_a_database(tmp_path: Path) -> None:
    missing = tmp_path / "typo" / "memory.sqlite"
    for name, args in REFUSING.items():
        done = memory("--db", str(missing), *args)
        assert done.returncode == 2, (name, done.stderr)
        assert done.stderr == f"Error: no memplug database at {missing}\n", name
        assert not missing.parent.exists(), name


def test_an_empty_file_is_no_database_and_reading_leaves_it_empty(tmp_path: Path) -> None:
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    for name, args in {**REFUSING, "status": ["status"]}.items():
        done = memory("--db", str(empty), *args)
        assert done.returncode == 2, (name, done.stderr)
        assert done.stderr.startswith(
            f"Error: no memplug database at {empty} (the file is empty"
        ), name
        assert empty.stat().st_size == 0, name
    assert memory("--db", str(empty), "import", "/dev/null").returncode == 0  # writing makes one
    assert empty.stat().st_size > 0
