"""Privacy: private spans, file modes, and purge that leaves no trace (secrets that reach
a model: test_secrets.py, test_secret_exits.py)."""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import stat
import sys
import time
from pathlib import Path

import apsw
import pytest
from conftest import new_db

from memplug.base.models import parse_event
from memplug.capture.transfer import export_lines
from memplug.memory import Memory
from memplug.reports.purge import purge
from memplug.store.records import LogRecord

# Random-looking words whose trigrams occur nowhere else in these tests.
SECRET = "zqxjv-wkfpq-quokka-9137"
KEPT = "tangerine-harbour-4402"


def write_jsonl(path: Path, events: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events))
    return path


def ev(session: str, seq: int, text: str, **extra: object) -> dict[str, object]:
    data: dict[str, object] = {
        "session_id": session,
        "seq": seq,
        "type": "user/message",
        "role": "user",
        "time": f"2026-01-{seq:02d}T10:00:00Z",
        "text": text,
        "cwd": "/home/ana/shop",
    }
    data.update(extra)
    return data


def file_bytes(path: Path) -> bytes:
    """The database file and its WAL, as a person with `grep -a` would read them."""
    data = b""
    for suffix in ("", "-wal"):
        candidate = Path(str(path) + suffix)
        if candidate.exists():
            data += candidate.read_bytes()
    return data


def secret_trigrams(text: str) -> set[str]:
    return {text[i : i + 3].lower() for i in range(len(text) - 2)}


def vocabulary(conn: apsw.Connection, index: str) -> set[str]:
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.v_{index} USING fts5vocab(main, {index}, row)"
    )
    return {str(r[0]) for r in conn.execute(f"SELECT term FROM temp.v_{index}")}


# -- <private> spans ---------------------------------------------------------------


def test_private_spans_never_reach_text_index_archive_export_or_file(tmp_path: Path) -> None:
    db = tmp_path / "db" / "m.sqlite"
    long_tail = "filler words " * 2_000  # over the 20,000-character cap: archived
    events = [
        ev("s", 1, f"the key is <private>{SECRET}</private> ok"),
        ev("s", 2, f"{long_tail}<PRIVATE>{SECRET}</PRIVATE> end of a long one"),
        ev("s", 3, f"unclosed <private>{SECRET} runs to the end"),
        {
            "session_id": "s",
            "seq": 4,
            "type": "user/message",
            "content": [{"type": "text", "text": f"<private>{SECRET}</private> in a block"}],
        },
    ]
    with Memory.open(db) as memory:
        memory.ingest([parse_event(e) for e in events])
        conn = memory.db.conn
        rows = conn.execute("SELECT seq, text, private_spans, truncated FROM events").fetchall()
        assert {r[0]: r[2] for r in rows} == {1: 1, 2: 1, 3: 1, 4: 1}
        assert all(SECRET not in str(r[1]) for r in rows)
        assert all("[private]" in str(r[1]) for r in rows if r[0] != 2)  # 2: cut before it
        assert [r[3] for r in rows if r[0] == 2] == [1]
        archive = conn.execute("SELECT text FROM archive").fetchall()
        assert len(archive) == 1 and SECRET not in archive[0][0]
        assert "[private]" in archive[0][0]
        assert SECRET not in "".join(export_lines(memory.store))
        hits = conn.execute(
            "SELECT count(*) FROM events_fts WHERE events_fts MATCH ?", (f'"{SECRET[:11]}"',)
        ).fetchone()[0]
        assert hits == 0
        assert not secret_trigrams("zqxjv-wkfpq") & vocabulary(conn, "events_fts")
    assert SECRET.encode() not in file_bytes(db)
    assert b"zqxjv" not in file_bytes(db)


# -- file modes --------------------------------------------------------------------


def test_database_wal_and_directory_are_private_even_under_umask_0(cli, tmp_path: Path) -> None:
    db = tmp_path / "home" / "deep" / "m.sqlite"
    other = tmp_path / "cli" / "m.sqlite"
    src = write_jsonl(tmp_path / "e.jsonl", [ev("s", 1, "hello")])
    old = os.umask(0)
    try:
        with Memory.open(db) as memory:
            memory.ingest([parse_event(ev("s", 1, "hello"))])
            for suffix in ("", "-wal", "-shm"):
                created = Path(str(db) + suffix)
                assert stat.S_IMODE(created.stat().st_mode) == 0o600, suffix
        # The CLI inherits the umask too.
        result = cli("--db", str(other), "import", str(src))
    finally:
        os.umask(old)
    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE(db.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(other.stat().st_mode) == 0o600
    assert stat.S_IMODE(other.parent.stat().st_mode) == 0o700


def test_status_reports_loosened_modes(cli, tmp_path: Path) -> None:
    db = tmp_path / "db" / "m.sqlite"
    with Memory.open(db) as memory:
        memory.ingest([parse_event(ev("s", 1, "hello"))])
    status = cli("--db", str(db), "status", "--json").json()
    assert status["permissions"] == {"file": "600", "dir": "700", "private": True}
    os.chmod(db, 0o644)
    status = cli("--db", str(db), "status", "--json").json()
    assert status["permissions"]["private"] is False and status["permissions"]["file"] == "644"
    text = cli("--db", str(db), "status")
    assert text.returncode == 0 and "WARNING: readable by others" in text.stdout
    os.chmod(db, 0o600)
    os.chmod(db.parent, 0o755)
    status = cli("--db", str(db), "status", "--json").json()
    assert status["permissions"] == {"file": "600", "dir": "755", "private": False}


# -- purge -------------------------------------------------------------------------


def seed_two_sessions(memory: Memory) -> None:
    """A purged session with rows in every table that can hold its text, and a kept one."""
    secret_events = [
        ev("gone", 1, f"remember: the vault phrase is {SECRET}"),
        ev("gone", 2, f"{'long words ' * 2_000} and the tail {SECRET}"),
        ev("gone", 3, f"tool said {SECRET}", type="tool/result", role="tool", tool_name="bash"),
        ev("gone", 4, f"thinking about {SECRET}", type="assistant/thinking", role="assistant"),
    ]
    kept_events = [ev("kept", i, f"note {i}: the harbour code is {KEPT}") for i in range(1, 4)]
    memory.ingest([parse_event(e) for e in secret_events + kept_events])
    conn = memory.db.conn
    with memory.db.write_transaction():
        for session, text, seq in (("gone", SECRET, 1), ("kept", KEPT, 1)):
            item_id = f"mem_{session}_0000000000000001"
            conn.execute(
                "INSERT INTO memory_items (id, session_id, kind, content, source_refs_json, "
                "evidence_type, content_hash, extractor, derived_from_seq) "
                "VALUES (?, ?, 'fact', ?, ?, 'user_explicit', ?, 'test/1', ?)",
                (
                    item_id,
                    session,
                    f"vault phrase is {text}",
                    json.dumps([f"{session}:{seq}"]),
                    session,
                    seq,
                ),
            )
            conn.execute(
                "INSERT INTO memory_events (memory_id, session_id, event, actor, detail_json) "
                "VALUES (?, ?, 'created', 'extractor', ?)",
                (item_id, session, json.dumps({"content": text})),
            )
            conn.execute(
                "INSERT INTO memory_actions (memory_id, action, actor, at, note) "
                "VALUES (?, 'promote', 'ana', '2026-01-02T00:00:00Z', ?)",
                (item_id, text),
            )
            conn.execute(
                "INSERT INTO task_state (session_id, goal) VALUES (?, ?)", (session, f"goal {text}")
            )
            conn.execute(
                "INSERT INTO pending_extraction (session_id, seq, last_error, first_failed_at, "
                "last_failed_at) VALUES (?, 1, ?, 'x', 'x')",
                (session, f"failed on {text}"),
            )
            memory.store.events.record_error("extract", f"could not read {text}", session, 1)
        # An item of the kept session that cites the purged one (cross-session evidence).
        conn.execute(
            "INSERT INTO memory_items (id, session_id, kind, content, source_refs_json, "
            "evidence_type, content_hash, extractor, derived_from_seq) "
            "VALUES ('mem_kept_cites_gone', 'kept', 'fact', 'cites the other session', "
            "'[\"gone:1\"]', 'user_explicit', 'h2', 'test/1', 1)"
        )
    logs = memory.store.logs
    base = {
        "trigger": "pre_step",
        "created_at": "2026-01-05T00:00:00Z",
        "budget": 600,
        "used_tokens": 10,
        "token_source": "estimate",
        "injected": True,
    }
    logs.insert(LogRecord(session_id="gone", text=f"[ev gone:1] {SECRET}", **base), retention=100)
    # A kept session's assembly that quoted the purged session through global scope.
    logs.insert(
        LogRecord(
            session_id="kept",
            text=f"[ev gone:1] {SECRET}",
            included=[{"ref": "gone:1", "why": "bm25"}],
            **base,
        ),
        retention=100,
    )
    logs.insert(LogRecord(session_id="kept", text=f"[ev kept:1] {KEPT}", **base), retention=100)


def session_rows(conn: apsw.Connection, session: str) -> dict[str, int]:
    tables = [
        "events",
        "archive",
        "sessions",
        "checkpoints",
        "pending_extraction",
        "memory_items",
        "memory_events",
        "task_state",
        "assembly_logs",
        "error_log",
    ]
    return {
        t: conn.execute(f"SELECT count(*) FROM {t} WHERE session_id = ?", (session,)).fetchone()[0]
        for t in tables
    }


def test_purge_session_removes_every_trace_and_keeps_the_rest(tmp_path: Path) -> None:
    db = tmp_path / "db" / "m.sqlite"
    with Memory.open(db) as memory:
        seed_two_sessions(memory)
        conn = memory.db.conn
        kept_before = list(export_lines(memory.store, ["kept"]))
        kept_rows = session_rows(conn, "kept")
        gone_items = session_rows(conn, "gone")["memory_items"]
        assert SECRET.encode() in file_bytes(db)
        segments_before = {
            r[0] for r in conn.execute("SELECT id FROM events_fts_data WHERE id > 10")
        }

        report = purge(memory, sessions=["gone"])

        assert report.plan.events == 4
        assert report.deleted["events"] == 4 and report.deleted["archive"] == 1
        assert report.deleted["assembly_logs"] == 2
        # Its own items (extracted, and the one seeded) and the kept one citing it.
        assert report.deleted["memory_items"] == gone_items + 1
        assert report.deleted["memory_actions"] == 1
        assert report.indexes == {"events_fts": "ok", "memory_fts": "ok", "work_fts": "ok"}
        assert report.checkpoint["complete"] is True
        assert set(session_rows(conn, "gone").values()) == {0}
        assert (
            conn.execute(
                "SELECT count(*) FROM memory_actions WHERE note = ?", (SECRET,)
            ).fetchone()[0]
            == 0
        )
        # The kept session is untouched, byte for byte.
        assert list(export_lines(memory.store, ["kept"])) == kept_before
        assert session_rows(conn, "kept") == kept_rows | {
            "memory_items": kept_rows["memory_items"] - 1,
            "assembly_logs": kept_rows["assembly_logs"] - 1,
        }
        # No index matches, no index term of the secret survives, no old segment either.
        for index, column in (
            ("events_fts", "text"),
            ("memory_fts", "content"),
            ("work_fts", "words"),
        ):
            hits = conn.execute(
                f"SELECT count(*) FROM {index} WHERE {index} MATCH ?", (f'"{SECRET}"',)
            ).fetchone()[0]
            assert hits == 0, index
            assert not secret_trigrams("zqxjv-wkfpq") & vocabulary(conn, index), column
        segments_after = {
            r[0] for r in conn.execute("SELECT id FROM events_fts_data WHERE id > 10")
        }
        assert not segments_before & segments_after
        for table in (
            "events_fts_data",
            "events_fts_idx",
            "memory_fts_data",
            "memory_fts_idx",
            "work_fts_data",
            "work_fts_idx",
        ):
            for row in conn.execute(f"SELECT * FROM {table}"):
                for value in row:
                    raw = value if isinstance(value, bytes) else str(value).encode()
                    assert SECRET.encode() not in raw and b"zqxjv" not in raw
        assert memory.db.integrity_check() == ["ok"]
        # The WAL was truncated while the database is still open.
        assert Path(str(db) + "-wal").stat().st_size == 0
        assert SECRET.encode() not in file_bytes(db)
        assert b"zqxjv" not in file_bytes(db)
        assert KEPT.encode() in file_bytes(db)
    assert SECRET.encode() not in file_bytes(db)


def test_purge_before_a_date_cuts_by_event_time_and_rederives_the_rest(tmp_path: Path) -> None:
    db = tmp_path / "db" / "m.sqlite"
    events = [
        ev("old", 1, f"old one {SECRET}"),
        ev("old", 2, "old two"),
        ev("mixed", 3, f"early {SECRET}"),
        ev("mixed", 20, f"late {KEPT}"),
        ev("undated", 1, "no time at all", time=None),
    ]
    with Memory.open(db) as memory:
        memory.ingest([parse_event({k: v for k, v in e.items() if v is not None}) for e in events])
        conn = memory.db.conn
        with memory.db.write_transaction():
            conn.execute(
                "INSERT INTO memory_items (id, session_id, kind, content, evidence_type, "
                "content_hash, extractor, derived_from_seq) "
                "VALUES ('mem_mixed_1', 'mixed', 'fact', ?, 'user_explicit', 'h', 't/1', 3)",
                (f"early {SECRET}",),
            )
            conn.execute("INSERT INTO task_state (session_id, goal) VALUES ('mixed', ?)", (SECRET,))
        report = purge(memory, before="2026-01-10")
        assert report.plan.sessions == ("old",)
        assert report.plan.partial == {"mixed": 1}
        assert report.plan.undated_kept == 1
        assert report.rederived == ("mixed",)
        remaining = conn.execute("SELECT session_id, seq FROM events ORDER BY 1, 2").fetchall()
        assert remaining == [("mixed", 20), ("undated", 1)]
        assert (
            conn.execute("SELECT count(*) FROM sessions WHERE session_id = 'old'").fetchone()[0]
            == 0
        )
        first_time = conn.execute(
            "SELECT first_time FROM sessions WHERE session_id = 'mixed'"
        ).fetchone()[0]
        assert first_time == "2026-01-20T10:00:00Z"
        assert (
            conn.execute(
                "SELECT last_extract_seq FROM checkpoints WHERE session_id = 'mixed'"
            ).fetchone()[0]
            != 3
        )
        assert SECRET not in json.dumps(conn.execute("SELECT * FROM memory_items").fetchall())
        assert SECRET not in json.dumps(conn.execute("SELECT * FROM task_state").fetchall())
    assert SECRET.encode() not in file_bytes(db)
    assert KEPT.encode() in file_bytes(db)


def test_purge_all_empties_every_table_and_index(tmp_path: Path) -> None:
    db = tmp_path / "db" / "m.sqlite"
    with Memory.open(db) as memory:
        seed_two_sessions(memory)
        report = purge(memory, everything=True, vacuum=True)
        assert report.vacuumed and report.free_pages == 0
        counts = memory.store.counts()
        assert set(counts.values()) == {0}, counts
        assert memory.db.conn.execute("SELECT count(*) FROM memory_actions").fetchone()[0] == 0
        assert vocabulary(memory.db.conn, "events_fts") == set()
        assert vocabulary(memory.db.conn, "memory_fts") == set()
        # The file is still a working memplug database.
        memory.ingest([parse_event(ev("new", 1, "after the purge"))])
        assert memory.store.counts()["events"] == 1
    data = file_bytes(db)
    assert SECRET.encode() not in data and KEPT.encode() not in data


def test_purge_reports_a_wal_it_could_not_truncate(tmp_path: Path) -> None:
    db = tmp_path / "db" / "m.sqlite"
    with Memory.open(db) as memory:
        seed_two_sessions(memory)
        reader = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM events").fetchall()
        memory.db.conn.set_busy_timeout(50)
        report = purge(memory, sessions=["gone"])
        assert report.checkpoint == {"complete": False, "busy": True}
        assert any("write-ahead log could not be truncated" in w for w in report.warnings)
        assert (
            memory.db.conn.execute(
                "SELECT count(*) FROM events WHERE session_id = 'gone'"
            ).fetchone()[0]
            == 0
        )
        reader.execute("COMMIT")
        reader.close()


# -- purge through the CLI ---------------------------------------------------------


@pytest.fixture
def seeded(tmp_path: Path) -> Path:
    db = tmp_path / "db" / "m.sqlite"
    with Memory.open(db) as memory:
        seed_two_sessions(memory)
    return db


def test_cli_purge_without_a_terminal_needs_yes(cli, seeded: Path) -> None:
    result = cli("--db", str(seeded), "purge", "--session", "gone", input="y\n")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "Error: purge deletes data for good: pass --yes to confirm when not at a terminal"
    ]
    assert cli("--db", str(seeded), "status", "--json").json()["counts"]["events"] == 7


def test_cli_purge_yes_json(cli, seeded: Path) -> None:
    result = cli("--db", str(seeded), "purge", "--session", "gone", "--yes", "--json")
    assert result.returncode == 0, result.stderr
    data = result.json()
    assert data["sessions"] == ["gone"] and data["deleted"]["events"] == 4
    assert data["checkpoint"]["complete"] is True
    assert cli("--db", str(seeded), "status", "--json").json()["counts"]["events"] == 3
    assert SECRET.encode() not in file_bytes(seeded)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--yes"], "Error: give exactly one of --session, --before or --all"),
        (
            ["--all", "--session", "gone", "--yes"],
            "Error: give exactly one of --session, --before or --all",
        ),
        (
            ["--before", "last tuesday", "--yes"],
            "Error: --before 'last tuesday' is not a date (YYYY-MM-DD) or ISO-8601 date-time",
        ),
    ],
)
def test_cli_purge_bad_usage_is_one_line_and_deletes_nothing(
    cli, seeded: Path, args: list[str], message: str
) -> None:
    result = cli("--db", str(seeded), "purge", *args)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [message]
    assert cli("--db", str(seeded), "status", "--json").json()["counts"]["events"] == 7


def test_cli_purge_of_an_absent_session_deletes_nothing_and_still_scrubs(cli, seeded: Path) -> None:
    result = cli("--db", str(seeded), "purge", "--session", "nope", "--json")
    assert result.returncode == 0, result.stderr  # nothing to delete: no question asked
    data = result.json()
    assert data["sessions"] == [] and data["missing_sessions"] == ["nope"]
    assert data["deleted"] == {} and data["checkpoint"]["complete"] is True
    assert cli("--db", str(seeded), "status", "--json").json()["counts"]["events"] == 7


def test_cli_purge_of_a_missing_database_creates_nothing(cli, tmp_path: Path) -> None:
    db = tmp_path / "none" / "m.sqlite"
    result = cli("--db", str(db), "purge", "--all", "--yes")
    assert result.returncode == 2
    assert result.stderr.strip() == f"Error: no memplug database at {db}"
    assert not db.parent.exists()


def run_in_terminal(args: list[str], answer: str) -> tuple[int, str]:
    """Run the CLI on a pseudo-terminal, answer its question, return (exit, output)."""
    pid, fd = pty.fork()
    if pid == 0:  # the child becomes the CLI, with the terminal as stdin/stdout/stderr
        os.execv(sys.executable, [sys.executable, "-m", "memplug.cli", *args])
    output = b""
    deadline = time.monotonic() + 60
    answered = False
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            output += chunk
            if not answered and b"[y/N]" in output:
                os.write(fd, answer.encode() + b"\n")
                answered = True
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), output.decode(errors="replace")


def test_cli_purge_asks_at_a_terminal(cli, seeded: Path) -> None:
    code, output = run_in_terminal(["--db", str(seeded), "purge", "--session", "gone"], "n")
    assert "Delete 4 events, 1 whole session (gone) for good? [y/N]" in output
    assert code == 1 and "Error: purge cancelled; nothing was deleted" in output
    assert cli("--db", str(seeded), "status", "--json").json()["counts"]["events"] == 7
    code, output = run_in_terminal(["--db", str(seeded), "purge", "--session", "gone"], "y")
    assert code == 0, output
    assert "purged:" in output and "write-ahead log: truncated" in output
    assert cli("--db", str(seeded), "status", "--json").json()["counts"]["events"] == 3


def test_text_deleted_before_a_purge_is_not_left_in_free_space(tmp_path: Path) -> None:
    """Log retention deletes old assembly logs long before anyone purges; their quoted
    text must not survive in the file's free space for a later purge to miss."""
    db = tmp_path / "db" / "m.sqlite"
    with Memory.open(db) as memory:
        memory.ingest([parse_event(ev("gone", 1, f"remember {SECRET}"))])
        base = {
            "trigger": "pre_step",
            "created_at": "2026-01-05T00:00:00Z",
            "budget": 600,
            "used_tokens": 10,
            "token_source": "estimate",
            "injected": True,
        }
        memory.store.logs.insert(
            LogRecord(session_id="gone", text=f"[ev gone:1] {SECRET}", **base), retention=1
        )
        memory.store.logs.insert(LogRecord(session_id="other", text="x", **base), retention=1)
        assert memory.store.counts()["assembly_logs"] == 1
    with Memory.open(db) as memory:
        purge(memory, sessions=["gone"])
    assert SECRET.encode() not in file_bytes(db)


def test_a_private_tag_with_a_control_character_is_still_private(tmp_path: Path) -> None:
    with Memory.open(new_db(tmp_path / "m.sqlite")) as memory:
        memory.ingest([parse_event(ev("s", 1, f"key <\x7fprivate>{SECRET}</private> ok"))])
        row = memory.store.events.get("s", 1)
    assert row is not None and SECRET not in row.text


# -- purge and a live Claude Code session ------------------------------------------

CC_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "claude_code"
CC_SESSION = "5e1f0c2a-7b3d-4e8f-9a10-c0ffee000001"


def test_a_purged_claude_code_session_is_not_captured_again_by_the_next_hook(
    cli, tmp_path: Path
) -> None:
    """The hook's reading position survives the purge: later hooks capture only what
    the transcript gains afterwards, not the purged turns all over again."""
    project = tmp_path / "projects" / "-home-ana-shop"
    shutil.copytree(CC_FIXTURES, project)
    transcript = project / f"{CC_SESSION}.jsonl"
    db = tmp_path / "db" / "m.sqlite"

    def hook(event: str) -> None:
        payload = {"session_id": CC_SESSION, "transcript_path": str(transcript),
                   "cwd": "/home/ana/shop", "hook_event_name": event}  # fmt: skip
        done = cli("--db", str(db), "hook", "claude-code", input=json.dumps(payload))
        assert done.returncode == 0 and done.stderr == "", done.stderr

    def events_of_session() -> list[str]:
        with Memory.open(db, create=False) as memory:
            return [row.text for row in memory.store.events.session_events(CC_SESSION)]

    hook("Stop")
    before = events_of_session()
    assert before
    with Memory.open(db, create=False) as memory:
        purge(memory, sessions=[CC_SESSION])
    assert events_of_session() == []
    hook("Stop")
    assert events_of_session() == []
    last = json.loads(transcript.read_text(encoding="utf-8").splitlines()[-1])
    record = {
        "parentUuid": last["uuid"], "isSidechain": False, "userType": "external",
        "cwd": "/home/ana/shop", "sessionId": CC_SESSION, "type": "user",
        "message": {"role": "user", "content": f"a new turn after the purge {KEPT}"},
        "uuid": "00000000-0000-4000-8000-0000000000ff", "timestamp": "2026-03-03T09:00:00.000Z",
    }  # fmt: skip
    with transcript.open("a", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\n")
    hook("Stop")
    assert events_of_session() == [f"a new turn after the purge {KEPT}"]
