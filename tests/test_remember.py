"""`memory remember`: an explicit, lasting item, captured as an event so that a rebuild
makes it again, and superseded by a later remember of the same subject."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from conftest import CliResult
from derived_state import dump
from freezegun import freeze_time

from memplug.memory import Memory

PROJECT = "/home/ana/shop"


def remember(cli: Callable[..., CliResult], db: Path, *args: str) -> CliResult:
    return cli("--db", str(db), "remember", *args, "--project", PROJECT, "--json")


def test_remember_makes_an_item_of_the_project_from_an_event(
    cli_process: Callable[..., CliResult], cli: Callable[..., CliResult], db_path: Path
) -> None:
    made = remember(cli_process, db_path, "Never deploy on Fridays.")
    assert made.returncode == 0, made.stderr
    data = made.json()
    assert data["item"]["kind"] == "constraint"  # read from the text
    assert data["item"]["content"] == "Never deploy on Fridays."
    assert data["project"] == PROJECT and data["supersedes"] == []
    shown = cli("--db", str(db_path), "inspect", data["event"], "--json").json()
    assert shown["source_kind"] == "remember" and shown["text"] == "Never deploy on Fridays."
    core = cli("--db", str(db_path), "core", "--project", PROJECT, "--json").json()
    assert [line["ref"] for line in core["lines"]] == [data["item"]["id"]]


def test_a_kind_given_wins_and_a_later_remember_of_the_subject_supersedes(
    cli: Callable[..., CliResult], db_path: Path
) -> None:
    first = remember(cli, db_path, "the staging database port is 5433").json()
    assert first["item"]["kind"] == "fact"
    second = remember(cli, db_path, "the staging database port is 6543").json()
    assert second["supersedes"] == [first["item"]["id"]]
    choice = remember(cli, db_path, "PostgreSQL 16 for orders", "--kind", "decision").json()
    switch = remember(cli, db_path, "MySQL 8 for orders", "--kind", "decision").json()
    assert choice["item"]["kind"] == "decision"
    assert switch["supersedes"] == [choice["item"]["id"]]
    items = cli("--db", str(db_path), "items", "--project", PROJECT, "--json").json()["items"]
    assert {i["content"]: i["status"] for i in items} == {
        "the staging database port is 5433": "superseded",
        "the staging database port is 6543": "active",
        "PostgreSQL 16 for orders": "superseded",
        "MySQL 8 for orders": "active",
    }


def test_plain_text_is_said_the_way_a_person_reads_it(
    cli: Callable[..., CliResult], db_path: Path
) -> None:
    result = cli("--db", str(db_path), "remember", "we use pnpm", "--project", PROJECT)
    assert result.returncode == 0
    assert result.stdout.startswith("remembered as mem_remember_")
    assert result.stdout.rstrip().endswith(f"(fact) in project {PROJECT}")


def test_bad_input_is_one_line_and_exit_2(cli: Callable[..., CliResult], db_path: Path) -> None:
    empty = cli("--db", str(db_path), "remember", "   ")
    assert (empty.returncode, empty.stderr) == (
        2,
        "Error: nothing to remember: the text is empty\n",
    )
    kind = cli("--db", str(db_path), "remember", "x", "--kind", "proposal")
    assert kind.returncode == 2 and kind.stderr.startswith("Error: Invalid value for '--kind'")


def test_rebuild_and_another_database_make_the_same_item(
    db_path: Path, fresh_db: Callable[..., Path]
) -> None:
    ids = []
    for path in (db_path, fresh_db()):
        with freeze_time("2026-03-04T10:00:00Z"), Memory.open(path) as memory:
            made = memory.remember("Always run migrations in a transaction.", project=PROJECT)
            ids.append(made["item"]["id"])
            before = dump(memory)
            memory.rebuild()
            assert dump(memory) == before
    assert ids[0] == ids[1]


def test_a_correction_supersedes_the_item_and_survives_a_rebuild(memory: Memory) -> None:
    from derived_state import ev

    memory.ingest([ev("s1", 1, "We must never log card numbers.", cwd=PROJECT)])
    (old,) = memory.store.items.find(session_ids=["s1"])
    made = memory.correct(old.id, "We must never log card numbers or CVVs.", actor="ui")
    assert made["corrected"] == old.id and made["item"]["kind"] == "constraint"
    for _ in range(2):
        fresh = memory.store.items.get(old.id)
        assert fresh is not None
        assert (fresh.status, fresh.superseded_by) == ("superseded", made["item"]["id"])
        assert fresh.content == "We must never log card numbers."  # never overwritten
        memory.rebuild()
