"""`memory import` / `memory export` / `memory status` through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import SESSIONS

from memplug.base.text import normalize_text
from memplug.derive.extract import Extractor


def test_import_summary_and_idempotent_reimport(cli, db_path: Path) -> None:
    fixture = str(SESSIONS / "shop.jsonl")
    lines = sum(1 for line in Path(fixture).read_text("utf-8").splitlines() if line.strip())
    first = cli("--db", str(db_path), "import", "--json", fixture)
    assert first.returncode == 0, first.stderr
    assert first.json() == {"new": lines, "present": 0, "rejected": []}
    again = cli("--db", str(db_path), "import", fixture)
    assert again.returncode == 0
    assert again.stdout.strip() == f"0 new, {lines} already present, 0 rejected"


def test_an_extractor_crash_fails_the_import_and_says_what_was_kept(
    cli, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash(self: Extractor, sessions: object) -> None:
        raise RuntimeError("rule table broken")

    monkeypatch.setattr(Extractor, "run", crash)
    fixture = str(SESSIONS / "shop.jsonl")
    lines = sum(1 for line in Path(fixture).read_text("utf-8").splitlines() if line.strip())
    done = cli("--db", str(db_path), "import", "--json", fixture)
    assert done.returncode == 1
    assert done.json() == {"new": lines, "present": 0, "rejected": [],
                           "extraction_error": "RuntimeError: rule table broken"}  # fmt: skip
    assert done.stderr == (
        f"Error: the events are kept ({lines} new, 0 already present), but memory extraction "
        "crashed after the import: RuntimeError: rule table broken\n"
    )
    monkeypatch.undo()
    data = cli("--db", str(db_path), "status", "--json").json()
    assert data["counts"]["events"] == lines and data["counts"]["memory_items"] == 0
    assert data["latest_errors"][0]["stage"] == "extract"
    # The sessions lag their events, so the next capture derives them.
    again = cli("--db", str(db_path), "import", fixture)
    assert again.returncode == 0, again.stderr
    assert cli("--db", str(db_path), "status", "--json").json()["counts"]["memory_items"] > 0


def test_bad_lines_are_rejected_by_number_and_good_ones_kept(cli, db_path: Path) -> None:
    good = [
        {"session_id": "b", "seq": i, "type": "user/message", "text": f"good {i}"}
        for i in (1, 2, 3)
    ]
    body = "\n".join(
        [
            json.dumps(good[0]),
            '{"session_id": "b", "seq": "x", "type": "user/message"}',
            json.dumps(good[1]),
            "not json at all",
            '{"seq": 9, "type": "user/message"}',
            '{"session_id": "b", "seq": 4, "type": "user/shout"}',
            "",
            json.dumps(good[2]),
            '{"session_id": "b", "seq": 5, "type": "user/message", "content": "oops"}',
        ]
    )
    result = cli("--db", str(db_path), "import", "--json", "-", input=body + "\n")
    assert result.returncode == 2
    summary = result.json()
    assert summary["new"] == 3 and summary["present"] == 0
    rejected = {r["line"]: r["error"] for r in summary["rejected"]}
    assert sorted(rejected) == [2, 4, 5, 6, 9]
    assert rejected[2].startswith("field 'seq'")
    assert rejected[4].startswith("not valid JSON")
    assert rejected[5] == "missing required field 'session_id'"
    assert rejected[6].startswith("field 'type'")
    assert rejected[9].startswith("field 'content'")
    status = cli("--db", str(db_path), "status", "--json").json()
    assert status["counts"]["events"] == 3

    text = cli("--db", str(db_path), "import", "-", input=body + "\n")
    assert text.returncode == 2
    assert "line 4: not valid JSON" in text.stderr
    assert text.stdout.strip() == "0 new, 3 already present, 5 rejected"


def test_invalid_utf8_is_a_rejected_line(cli, db_path: Path, tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(
        b'{"session_id": "u", "seq": 1, "type": "user/message", "text": "ok"}\n'
        b'{"session_id": "u", "seq": 2, "type": "user/message", "text": "\xff\xfe"}\n'
    )
    result = cli("--db", str(db_path), "import", "--json", str(path))
    assert result.returncode == 2
    assert result.json()["rejected"] == [{"line": 2, "error": "not valid UTF-8 (byte 64)"}]


def test_export_import_export_is_byte_identical(cli, tmp_path: Path) -> None:
    first_db, second_db = tmp_path / "a" / "m.sqlite", tmp_path / "b" / "m.sqlite"
    files = sorted(str(p) for p in SESSIONS.glob("*.jsonl"))
    assert cli("--db", str(first_db), "import", *files).returncode == 0
    one = cli("--db", str(first_db), "export")
    assert one.returncode == 0
    assert cli("--db", str(second_db), "import", "-", input=one.stdout).returncode == 0
    two = cli("--db", str(second_db), "export")
    assert one.stdout == two.stdout
    exported = [json.loads(line) for line in one.stdout.splitlines()]
    originals = [
        json.loads(line)
        for f in files
        for line in Path(f).read_text("utf-8").splitlines()
        if line.strip()
    ]
    assert len(exported) == len(originals)
    by_key = {(e["session_id"], e["seq"]): e for e in exported}
    for original in originals:
        again = by_key[(original["session_id"], original["seq"])]
        for key, value in original.items():
            if key == "time":
                continue
            expected = normalize_text(value) if key == "text" else value
            assert again[key] == expected, (key, original["session_id"], original["seq"])


def test_export_one_session(cli, db_path: Path) -> None:
    files = [str(SESSIONS / "shop.jsonl"), str(SESSIONS / "other_project.jsonl")]
    cli("--db", str(db_path), "import", *files)
    out = cli("--db", str(db_path), "export", "--session", "blog-1").stdout.splitlines()
    assert out and {json.loads(line)["session_id"] for line in out} == {"blog-1"}


def test_status_on_a_missing_database_creates_nothing(cli, tmp_path: Path) -> None:
    home = tmp_path / "no-home-yet"
    result = cli("status", "--json", env={"MEMPLUG_HOME": str(home)})
    assert result.returncode == 0
    assert result.json() == {
        "exists": False,
        "path": str(home / "memory.sqlite"),
        "hook_pending": {"count": 0, "latest": []},
    }
    text = cli("status", env={"MEMPLUG_HOME": str(home)})
    assert text.returncode == 0 and "no memplug database" in text.stdout
    for reading in (["export"], ["config", "show"]):
        cli(*reading, env={"MEMPLUG_HOME": str(home)})
    assert not home.exists()


def test_status_of_a_named_database_that_is_not_there_is_exit_2(
    cli_process, tmp_path: Path
) -> None:
    """Through the installed script: a mistyped --db (or MEMPLUG_DB) is an error, the
    default place on a fresh install is not (above)."""
    missing = tmp_path / "typo" / "memroy.sqlite"
    for args, env in (
        (["--db", str(missing), "status"], {}),
        (["status", "--json"], {"MEMPLUG_DB": str(missing)}),
    ):
        result = cli_process(*args, env=env)
        assert result.returncode == 2, result.stdout
        assert result.stderr == f"Error: no memplug database at {missing}\n"
    assert not missing.parent.exists()


def test_export_of_a_missing_database_is_a_one_line_error(cli, tmp_path: Path) -> None:
    result = cli("--db", str(tmp_path / "none.sqlite"), "export")
    assert result.returncode == 2
    assert result.stderr == f"Error: no memplug database at {tmp_path / 'none.sqlite'}\n"
    assert not (tmp_path / "none.sqlite").exists()


def test_import_of_a_missing_file(cli, db_path: Path) -> None:
    result = cli("--db", str(db_path), "import", "/nonexistent/x.jsonl")
    assert result.returncode == 2
    assert result.stderr == "Error: no such file: /nonexistent/x.jsonl\n"
    assert not db_path.exists()


def test_status_reports_counts_sessions_and_health(cli, db_path: Path) -> None:
    cli("--db", str(db_path), "import", str(SESSIONS / "shop.jsonl"))
    status = cli("--db", str(db_path), "status", "--json").json()
    assert status["exists"] is True
    assert status["schema_version"] == status["code_schema_version"]
    assert status["integrity"] == ["ok"]
    assert status["permissions"]["file"] == "600"
    assert status["counts"]["events"] == status["sessions"][0]["events"]
    assert status["sessions"][0]["session_id"] == "shop-1"
    assert status["compaction"]["detected"] is True
    db_path.chmod(0o644)
    loosened = cli("--db", str(db_path), "status")
    assert "WARNING: readable by others" in loosened.stdout


def test_bare_memory_shows_the_help(cli) -> None:
    result = cli()
    assert result.returncode == 0
    assert "Usage: memory" in result.stdout and "import" in result.stdout


def test_an_export_holds_events_only_and_says_so(tmp_path: Path) -> None:
    """A retraction is a person's action, not an event: an import of the export derives
    the item afresh (active again), as `memory export --help` says."""
    from tests.installed import memory

    first, second = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    line = {"session_id": "s", "seq": 1, "type": "user/message", "role": "user",
            "text": "We must never log card numbers."}  # fmt: skip
    assert memory("--db", str(first), "import", "-", input=json.dumps(line) + "\n").returncode == 0
    (item,) = memory("--db", str(first), "items", "--scope", "global", "--json").json()["items"]
    assert memory("--db", str(first), "retract", item["id"]).returncode == 0
    exported = memory("--db", str(first), "export").stdout
    assert memory("--db", str(second), "import", "-", input=exported).returncode == 0
    (again,) = memory("--db", str(second), "items", "--scope", "global", "--json").json()["items"]
    assert (again["id"], again["status"]) == (item["id"], "active")
    assert "Only events are exported" in " ".join(memory("export", "--help").stdout.split())
