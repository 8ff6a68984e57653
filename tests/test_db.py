"""The db layer: migrations, schema guards, permissions, transactions."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path

import apsw
import pytest
from conftest import FIXTURES, SESSIONS, run_cli, run_cli_here

from memplug.base.errors import DatabaseError, DatabaseMissing, SchemaTooNew
from memplug.store.db import BULK_CACHE_KIB, Database, load_migrations

ALL = load_migrations()


def tables(db: Database) -> set[str]:
    rows = db.conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
    return {str(r[0]) for r in rows}


def test_blank_database_gets_every_migration(db_path: Path) -> None:
    with Database.open(db_path) as db:
        assert db.schema_version() == len(ALL)
        recorded = db.conn.execute("SELECT version, name FROM schema_migrations ORDER BY 1")
        assert [tuple(r) for r in recorded] == [(m.version, m.name) for m in ALL]
        assert {"events", "events_fts", "memory_items", "memory_fts", "assembly_logs"} <= tables(db)
        assert db.integrity_check() == ["ok"]
        assert db.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert db.conn.execute("PRAGMA busy_timeout").fetchone()[0] == 5000
        config = dict(db.conn.execute("SELECT k, v FROM events_fts_config").fetchall())
        assert config["hashsize"] == 8 * 1024 * 1024, "a bulk batch should be one FTS flush"


def test_every_older_version_upgrades_and_keeps_data(tmp_path: Path) -> None:
    for start in range(1, len(ALL) + 1):
        path = tmp_path / f"v{start}" / "m.sqlite"
        with Database.open(path, migrations=ALL[:start]) as old:
            assert old.schema_version() == start
            old.conn.execute(
                "INSERT INTO meta (key, value) VALUES ('marker', ?)", (f"from v{start}",)
            )
        with Database.open(path) as upgraded:
            assert upgraded.schema_version() == len(ALL)
            row = upgraded.conn.execute("SELECT value FROM meta WHERE key = 'marker'").fetchone()
            assert row[0] == f"from v{start}"


def test_a_newer_database_is_refused(db_path: Path) -> None:
    with Database.open(db_path) as db:
        db.conn.execute("PRAGMA user_version = 999")
    with pytest.raises(SchemaTooNew, match="newer than this memplug"):
        Database.open(db_path)
    result = run_cli_here("--db", str(db_path), "status")
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0
    assert result.stderr.startswith("Error: the database") and "schema 999" in result.stderr


def test_duplicate_and_gapped_migration_numbers_are_rejected(tmp_path: Path) -> None:
    dup = tmp_path / "dup"
    dup.mkdir()
    (dup / "0001_a.sql").write_text("SELECT 1;")
    (dup / "0001_b.sql").write_text("SELECT 1;")
    with pytest.raises(DatabaseError, match="share number 0001"):
        load_migrations(dup)
    gap = tmp_path / "gap"
    gap.mkdir()
    (gap / "0001_a.sql").write_text("SELECT 1;")
    (gap / "0003_c.sql").write_text("SELECT 1;")
    with pytest.raises(DatabaseError, match="no gap"):
        load_migrations(gap)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "1_init.sql").write_text("SELECT 1;")
    with pytest.raises(DatabaseError, match=r"NNNN_name\.sql"):
        load_migrations(bad)


def test_a_failing_migration_leaves_the_previous_version(db_path: Path) -> None:
    from memplug.store.db import Migration

    failing = "CREATE TABLE t (x); SELECT * FROM nope;"
    broken = [*ALL, Migration(len(ALL) + 1, "9999_broken.sql", failing)]
    with Database.open(db_path) as db, pytest.raises(apsw.SQLError):
        db.migrate(migrations=broken)
    with Database.open(db_path) as db:
        assert db.schema_version() == len(ALL)
        assert "t" not in tables(db)


def test_created_private(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        path = tmp_path / "deep" / "home" / "memory.sqlite"
        Database.open(path).close()
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_reading_never_creates(tmp_path: Path) -> None:
    path = tmp_path / "nothing" / "memory.sqlite"
    with pytest.raises(DatabaseMissing):
        Database.open(path, create=False)
    assert not path.parent.exists()


def test_nested_transactions_are_savepoints(db_path: Path) -> None:
    with Database.open(db_path) as db:
        with db.write_transaction():
            db.conn.execute("INSERT INTO meta VALUES ('outer', '1')")
            with pytest.raises(RuntimeError), db.transaction():
                db.conn.execute("INSERT INTO meta VALUES ('inner', '1')")
                raise RuntimeError("undo the inner part only")
        keys = [r[0] for r in db.conn.execute("SELECT key FROM meta ORDER BY key")]
        assert keys == ["outer"]


def test_database_location_order(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from memplug.base.paths import default_db_path

    monkeypatch.setenv("MEMPLUG_HOME", str(tmp_path / "home"))
    assert default_db_path() == tmp_path / "home" / "memory.sqlite"
    monkeypatch.setenv("MEMPLUG_DB", str(tmp_path / "x.sqlite"))
    assert default_db_path() == tmp_path / "x.sqlite"
    assert default_db_path("~/y.sqlite") == Path.home() / "y.sqlite"
    monkeypatch.delenv("MEMPLUG_DB")
    monkeypatch.delenv("MEMPLUG_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_db_path() == tmp_path / "xdg" / "memplug" / "memory.sqlite"


def newer_database(path: Path) -> bytes:
    """A database holding events whose schema is ahead of this code; its bytes."""
    run_cli_here("--db", str(path), "import", str(SESSIONS / "shop2.jsonl"))
    with Database.open(path) as db:
        db.conn.execute("PRAGMA user_version = 999")
    assert not Path(f"{path}-wal").exists(), "closing folds the WAL into the file"
    return path.read_bytes()


def test_a_newer_database_is_left_byte_for_byte(db_path: Path) -> None:
    before = newer_database(db_path)
    for args in (["status"], ["status", "--json"], ["items"], ["export"], ["rebuild"],
                 ["import", str(SESSIONS / "shop.jsonl")]):  # fmt: skip
        result = run_cli_here("--db", str(db_path), *args)
        assert result.returncode == 1, args
        assert result.stdout == ""
        assert result.stderr == (
            f"Error: the database {db_path} has schema 999, newer than this memplug "
            f"({len(ALL)}); upgrade memplug instead\n"
        )
        assert db_path.read_bytes() == before, args
    assert not Path(f"{db_path}-wal").exists()


def test_a_hook_on_a_newer_database_touches_nothing(db_path: Path, tmp_path: Path) -> None:
    before = newer_database(db_path)
    transcript = tmp_path / "t.jsonl"
    shutil.copy(FIXTURES / "claude_code" / "5e1f0c2a-7b3d-4e8f-9a10-c0ffee000001.jsonl", transcript)
    payload = {"hook_event_name": "UserPromptSubmit", "session_id": "s", "prompt": "port?",
               "transcript_path": str(transcript), "cwd": "/home/ana/shop"}  # fmt: skip
    result = run_cli("--db", str(db_path), "hook", "claude-code", input=json.dumps(payload))
    # Nothing injected; the person is told once why, and what helps.
    assert result.returncode == 0
    told = json.loads(result.stdout)["systemMessage"]
    assert "has schema 999, newer than this memplug" in told and "`memory doctor`" in told
    again = run_cli("--db", str(db_path), "hook", "claude-code", input=json.dumps(payload))
    assert (again.returncode, again.stdout) == (0, "")
    assert db_path.read_bytes() == before
    # The error waits beside the file for a memplug that can open it.
    pending = db_path.with_name(db_path.name + ".hook-pending.jsonl").read_text()
    assert "schema 999, newer than this memplug" in pending


FAIL_AT_MIGRATION = """
import os, signal, sys
import memplug.store.db as db

apply = db.Database._apply

def failing(self, migration):
    if migration.version == {version}:
        {action}
    apply(self, migration)

db.Database._apply = failing
from memplug.cli import main
main(["--db", sys.argv[1], "status", "--json"])
"""


def old_fixture(tmp_path: Path, version: int) -> Path:
    path = tmp_path / "old" / "memory.sqlite"
    path.parent.mkdir(mode=0o700)
    shutil.copyfile(FIXTURES / "schemas" / f"v{version:02d}.sqlite", path)
    return path


@pytest.mark.parametrize(
    "action",
    ["self.conn.execute('INSERT INTO no_such_table VALUES (6)')", "os.kill(os.getpid(), 9)"],
    ids=["error", "sigkill"],
)
def test_a_migration_that_fails_part_way_leaves_the_file_as_it_was(
    tmp_path: Path, action: str
) -> None:
    """Schema 2 → 10 stops inside migration 6 (after 3, 4 and 5 ran): by an error, or by
    the process being killed. The file is schema 2 byte for byte, and the next open
    migrates it all and keeps every event."""
    path = old_fixture(tmp_path, 2)
    before = path.read_bytes()
    script = FAIL_AT_MIGRATION.format(version=6, action=action)
    done = subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=60
    )
    if "kill" in action:
        assert done.returncode == -signal.SIGKILL
    else:
        assert done.returncode == 1
        assert done.stderr.startswith("Error: database error on ")
        assert done.stderr.endswith("no such table: no_such_table\n")
        assert done.stderr.count("\n") == 1
    assert path.read_bytes() == before
    with Database.open(path) as db:
        assert db.schema_version() == len(ALL)
    exported = run_cli_here("--db", str(path), "export").stdout
    assert exported == (FIXTURES / "schemas" / "v02.export.jsonl").read_text()


def test_a_bulk_import_widens_only_its_own_page_cache(db_path: Path) -> None:
    # The import's connection keeps its rewritten FTS pages in memory; any other
    # connection (a hook's, a reader's) keeps SQLite's default.
    with Database.open(db_path) as bulk, Database.open(db_path) as other:
        default = bulk.conn.execute("PRAGMA cache_size").fetchone()[0]
        bulk.for_bulk_writes()
        assert bulk.conn.execute("PRAGMA cache_size").fetchone()[0] == -BULK_CACHE_KIB
        assert other.conn.execute("PRAGMA cache_size").fetchone()[0] == default != -BULK_CACHE_KIB
