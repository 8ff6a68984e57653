"""Broken environments: each gets one `Error: …` line and a non-zero exit, never a
traceback, and what was already captured survives.

Every database here is a real file in a temp directory. "Full" is SQLite's own
SQLITE_FULL, produced by `PRAGMA max_page_count` on the CLI's connection (installed
through apsw's connection hooks in the child process) and, separately, by a file-size
rlimit; "read-only" drops the root-only capability to ignore file modes, so the test
means the same thing whoever runs it.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import apsw
import pytest

from memplug.memory import Memory
from memplug.plugin import open_plugin
from memplug.store.db import BUSY_TIMEOUT_MS, Database, code_schema_version

# Slow, still run by `make test`: each case breaks a real file or limit under a fresh process.
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent
SHOP = REPO / "fixtures" / "sessions" / "shop.jsonl"

# One reading command, one writing command, one that does both, and purge.
COMMANDS: list[list[str]] = [
    ["status", "--json"],
    ["export"],
    ["search", "--json", "--", "port"],
    ["import", str(SHOP)],
    ["purge", "--session", "shop-1", "--yes"],
]


def run(
    db: Path,
    *args: str,
    preexec: Callable[[], None] | None = None,
    prelude: str = "",
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """The CLI in a fresh process; ``prelude`` runs first inside it (connection hooks)."""
    code = f"{prelude}\nimport sys\nfrom memplug.cli import main\nsys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, "--db", str(db), *args],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=preexec,
        input=stdin,
    )


def one_error_line(result: subprocess.CompletedProcess[str], expected: str) -> None:
    assert result.returncode != 0, result.stdout[-200:]
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [expected]


def events_of(db: Path) -> list[tuple[str, int, str]]:
    with Database.open(db, create=False) as opened:
        assert opened.integrity_check() == ["ok"]
        rows = opened.conn.execute("SELECT session_id, seq, content_hash FROM events ORDER BY 1, 2")
        return [(str(s), int(q), str(h)) for s, q, h in rows]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("template") / "m.sqlite"
    with Memory.open(db) as memory, SHOP.open("rb") as stream:
        assert not memory.import_jsonl([("shop.jsonl", stream)]).rejected
        memory.db.checkpoint()
    return db


@pytest.fixture
def db(template: Path, tmp_path: Path) -> Path:
    target = tmp_path / "db" / "m.sqlite"
    target.parent.mkdir(mode=0o700)
    shutil.copy(template, target)
    return target


# -- corrupt -----------------------------------------------------------------------


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: a[0])
def test_a_file_that_is_not_a_database(db: Path, args: list[str]) -> None:
    db.write_bytes(b"this is a text file, not SQLite\n" * 200)
    one_error_line(run(db, *args), f"Error: the database {db} is corrupt or not a memplug database")


def test_a_damaged_page_is_an_error_line_wherever_it_is_met(db: Path) -> None:
    size = db.stat().st_size
    with db.open("r+b") as raw:
        raw.seek(size // 2)
        raw.write(b"\x07" * 4096 * 4)
    message = f"Error: the database {db} is corrupt or not a memplug database"
    one_error_line(run(db, "status", "--json"), message)
    for args in COMMANDS[1:]:
        result = run(db, *args)
        assert "Traceback" not in result.stderr
        if result.returncode != 0:
            assert result.stderr.strip().splitlines() == [message], args


# -- locked ------------------------------------------------------------------------


def test_a_locked_database_makes_writers_wait_then_fail_in_one_line(db: Path) -> None:
    before = events_of(db)
    holder = apsw.Connection(str(db))
    holder.execute("BEGIN IMMEDIATE")
    try:
        started = time.monotonic()
        result = run(db, "import", str(SHOP))
        waited = time.monotonic() - started
        # Readers are never blocked by a writer under WAL.
        status = run(db, "status", "--json")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    one_error_line(result, f"Error: the database {db} is locked by another writer; try again")
    assert waited >= BUSY_TIMEOUT_MS / 1000
    assert status.returncode == 0 and json.loads(status.stdout)["counts"]["events"] == len(before)
    assert events_of(db) == before
    assert run(db, "import", str(SHOP)).returncode == 0


# -- read-only ---------------------------------------------------------------------


def _without_dac_override() -> None:
    """Drop CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from this (child) process, so a
    root-run test obeys file modes like any user; a non-root run has nothing to drop."""
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: a[0])
def test_a_read_only_database(db: Path, args: list[str]) -> None:
    before = db.read_bytes()
    db.chmod(0o444)
    db.parent.chmod(0o555)
    try:
        result = run(db, *args, preexec=_without_dac_override)
    finally:
        db.parent.chmod(0o700)
        db.chmod(0o600)
    if args[0] in {"status", "export", "search"}:
        # Reading commands open read-only and work (tests/test_read_only.py has them all).
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() and not result.stderr
    else:
        one_error_line(
            result,
            f"Error: the database {db} is read-only: reading commands work, this one writes",
        )
    assert db.read_bytes() == before


# -- newer schema ------------------------------------------------------------------


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: a[0])
def test_a_database_from_a_newer_memplug_is_refused_untouched(db: Path, args: list[str]) -> None:
    conn = apsw.Connection(str(db))
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    before = db.read_bytes()
    one_error_line(
        run(db, *args),
        f"Error: the database {db} has schema 99, newer than this memplug "
        f"({code_schema_version()}); upgrade memplug instead",
    )
    assert db.read_bytes() == before


# -- full --------------------------------------------------------------------------


def more_events(path: Path, count: int) -> Path:
    lines = [
        json.dumps(
            {
                "session_id": f"more-{i % 3}",
                "seq": i,
                "type": "user/message",
                "role": "user",
                "text": f"event {i} " + "payload words " * 40,
            }
        )
        for i in range(count)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_full_database_is_one_line_and_keeps_what_was_committed(db: Path, tmp_path: Path) -> None:
    before = events_of(db)
    pages = apsw.Connection(str(db)).execute("PRAGMA page_count").fetchone()[0]
    prelude = (
        "import apsw\n"
        f"apsw.connection_hooks.append(lambda c: c.execute('PRAGMA max_page_count = {pages + 40}'))"
    )
    src = more_events(tmp_path / "more.jsonl", 12_000)
    result = run(db, "import", str(src), prelude=prelude)
    one_error_line(result, f"Error: the database {db} is full (disk or page limit reached)")
    after = events_of(db)
    assert set(before) <= set(after)
    # With room again, the same import completes and keeps every earlier event.
    assert run(db, "import", str(src)).returncode == 0
    final = events_of(db)
    assert set(before) <= set(final) and len(final) == len(before) + 12_000


def test_a_file_size_limit_is_one_line_and_keeps_what_was_committed(
    db: Path, tmp_path: Path
) -> None:
    before = events_of(db)
    limit = db.stat().st_size + 256 * 1024

    def small_disk() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    src = more_events(tmp_path / "more.jsonl", 12_000)
    result = run(db, "import", str(src), preexec=small_disk)
    one_error_line(result, f"Error: database error on {db}: disk I/O error")
    assert set(before) <= set(events_of(db))
    assert run(db, "import", str(src)).returncode == 0


# -- the host path -----------------------------------------------------------------


def test_the_plugin_never_raises_on_a_full_database_and_records_it(db: Path) -> None:
    with open_plugin(str(db)) as plugin:
        conn = plugin.memory.db.conn
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")
        stored = [
            plugin.on_event(
                {"session_id": "full", "seq": seq, "type": "user/message", "text": "x " * 3_000}
            )
            for seq in range(1, 40)
        ]
        assert stored[-1] is False
        injection = plugin.pre_step({"session_id": "full", "query": "x"})
        assert injection is None or injection.text
        conn.execute(f"PRAGMA max_page_count = {pages * 100}")
        errors = plugin.memory.store.events.latest_errors()
    assert any(e["stage"] == "capture" and "full" in e["message"] for e in errors), errors
    events_of(db)


# -- the Claude Code hook: records and continues -----------------------------------

CC_FIXTURES = REPO / "fixtures" / "claude_code"
CC_SESSION = "5e1f0c2a-7b3d-4e8f-9a10-c0ffee000001"


def hook_payload(tmp_path: Path) -> str:
    project = tmp_path / "projects" / "-home-ana-shop"
    if not project.exists():
        shutil.copytree(CC_FIXTURES, project)
    return json.dumps(
        {
            "session_id": CC_SESSION,
            "transcript_path": str(project / f"{CC_SESSION}.jsonl"),
            "cwd": "/home/ana/shop",
            "hook_event_name": "UserPromptSubmit",
            "prompt": "which port does the API use?",
        }
    )


def pending_notes(db: Path) -> str:
    pending = db.with_name(db.name + ".hook-pending.jsonl")
    return pending.read_text(encoding="utf-8") if pending.exists() else ""


def hook_errors(db: Path) -> list[str]:
    with Memory.open(db, create=False) as memory:
        return [str(e["message"]) for e in memory.store.events.latest_errors(limit=50)]


def newer_schema(db: Path) -> Callable[[], None]:
    conn = apsw.Connection(str(db))
    conn.execute("PRAGMA user_version = 99")
    conn.close()

    def restore() -> None:
        conn = apsw.Connection(str(db))
        conn.execute(f"PRAGMA user_version = {code_schema_version()}")
        conn.close()

    return restore


def not_a_database(db: Path) -> Callable[[], None]:
    good = db.read_bytes()
    db.write_bytes(b"this is a text file, not SQLite\n" * 200)
    return lambda: db.write_bytes(good)


@pytest.mark.parametrize(
    ("breaks", "note"),
    [(newer_schema, "newer than this memplug"), (not_a_database, "corrupt")],
    ids=["newer-schema", "not-a-database"],
)
def test_the_hook_never_fails_the_host_and_reports_later(
    db: Path, tmp_path: Path, breaks: Callable[[Path], Callable[[], None]], note: str
) -> None:
    payload = hook_payload(tmp_path)
    restore = breaks(db)
    result = run(db, "hook", "claude-code", stdin=payload)
    assert (result.returncode, result.stderr) == (0, "")
    # The person is told once, through Claude Code's systemMessage; nothing else is said.
    told = json.loads(result.stdout)
    assert list(told) == ["systemMessage"] and note in told["systemMessage"]
    assert told["systemMessage"].endswith("`memory doctor` checks the file and says what to do.")
    assert run(db, "hook", "claude-code", stdin=payload).stdout == ""
    assert note in pending_notes(db)
    restore()
    # The next hook that can open the database writes the note where status shows it.
    again = run(db, "hook", "claude-code", stdin=payload)
    assert again.returncode == 0 and again.stderr == ""
    assert any(note in message for message in hook_errors(db))
    assert pending_notes(db) == ""


def test_the_hook_on_a_full_database_injects_nothing_and_exits_0(db: Path, tmp_path: Path) -> None:
    pages = apsw.Connection(str(db)).execute("PRAGMA page_count").fetchone()[0]
    prelude = (
        "import apsw\n"
        f"apsw.connection_hooks.append(lambda c: c.execute('PRAGMA max_page_count = {pages}'))"
    )
    result = run(db, "hook", "claude-code", stdin=hook_payload(tmp_path), prelude=prelude)
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout == "" or json.loads(result.stdout)
    assert "full" in pending_notes(db) or any("full" in m for m in hook_errors(db))
