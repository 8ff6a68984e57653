"""`memory items`, `inspect`, `retract`, `promote`, `rebuild` through the CLI.

Each command runs through the CLI's entry point in process (click's CliRunner), with
the output and exit code a person would see; no process boundary is under test here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import SESSIONS, CliResult, new_db
from derived_state import dump, ev

from memplug.memory import Memory

Cli = Callable[..., CliResult]


@pytest.fixture
def shop_db(tmp_path: Path) -> Path:
    path = new_db(tmp_path / "db" / "memory.sqlite")
    with Memory.open(path) as memory:
        with open(SESSIONS / "shop.jsonl", "rb") as stream:
            memory.import_jsonl([("shop.jsonl", stream)])
        # An event past the text cap, with a cue at its end (read from the archive).
        memory.ingest([ev("long", 1, "filler " * 4_000 + "\nDecision: keep the archive.")])
    return path


def items(cli: Cli, db: Path, *args: str) -> list[dict]:
    result = cli("--db", str(db), "items", "--json", *args)
    assert result.returncode == 0, result.stderr
    return result.json()["items"]


def only_error(result: CliResult, text: str) -> None:
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and text in lines[0], lines


def test_items_lists_every_item_with_the_documented_fields(cli: Cli, shop_db: Path) -> None:
    listed = items(cli, shop_db)
    assert len(listed) == 25
    first = listed[0]
    assert {"id", "kind", "content", "status", "evidence_type", "superseded_by",
            "subject_key", "source_refs"} <= set(first)  # fmt: skip
    assert first["session_id"] == "long"  # session order, then creation order
    port = next(i for i in listed if i["content"] == "the API port is 8080.")
    assert port["status"] == "superseded" and port["subject_key"] == "api port"
    assert port["source_refs"] == ["shop-1:2"]
    assert port["superseded_by"].startswith("mem_shop1_")


def test_items_filters(cli: Cli, shop_db: Path) -> None:
    superseded = items(cli, shop_db, "--status", "superseded")
    assert sorted(i["content"] for i in superseded) == [
        "lock files are generated with pip-tools.",
        "the API port is 8080.",
        "the cache may use at most 3 GB.",
    ]
    decisions = items(cli, shop_db, "--kind", "decision", "--session", "shop-1")
    assert len(decisions) == 3 and {i["kind"] for i in decisions} == {"decision"}
    assert len(items(cli, shop_db, "--session", "long")) == 1
    assert len(items(cli, shop_db, "--limit", "2")) == 2
    text = cli("--db", str(shop_db), "items", "--status", "superseded")
    assert text.returncode == 0 and "the API port is 8080." in text.stdout


def test_inspect_an_item_shows_sources_chain_and_history(cli: Cli, shop_db: Path) -> None:
    port = next(i for i in items(cli, shop_db) if i["content"] == "the API port is 8080.")
    result = cli("--db", str(shop_db), "inspect", port["id"], "--json")
    assert result.returncode == 0, result.stderr
    data = result.json()
    assert data["object"] == "memory" and data["subject_key"] == "api port"
    assert data["rule"]["ref"] == "en.fact.label@1"
    assert data["sources"][0]["ref"] == "shop-1:2"
    assert data["sources"][0]["text"].endswith("Note: the API port is 8080.")
    assert [link["content"] for link in data["chain"]["newer"]] == ["the API port is 9090 now."]
    assert data["chain"]["older"] == []
    assert [e["event"] for e in data["lifecycle"]] == ["created", "superseded"]
    assert data["numbers"][0]["kind"] == "port"
    newer = cli("--db", str(shop_db), "inspect", port["superseded_by"], "--json").json()
    assert [link["id"] for link in newer["chain"]["older"]] == [port["id"]]
    text = cli("--db", str(shop_db), "inspect", port["id"])
    assert "replaced by" in text.stdout and "[shop-1:2]" in text.stdout


def test_inspect_an_event_by_reference(cli: Cli, shop_db: Path) -> None:
    data = cli("--db", str(shop_db), "inspect", "shop-1:93", "--json").json()
    assert data["object"] == "event" and data["type"] == "user/message"
    assert data["text"].startswith("顺便记一下值班的事。")
    assert [i["kind"] for i in data["items"]] == ["fact", "decision", "constraint"]
    generated = cli("--db", str(shop_db), "inspect", "shop-1:3", "--json").json()
    assert generated["generated"] is True and generated["extracted_as"] is None
    long = cli("--db", str(shop_db), "inspect", "long:1", "--json").json()
    assert long["truncated"] is True
    assert long["text"].endswith("Decision: keep the archive.")  # the archived full text


@pytest.mark.parametrize(
    ("ref", "error"),
    [
        ("mem_nothing_0000000000000000", "no memory item mem_nothing_0000000000000000"),
        ("shop-1:9999", "no event shop-1:9999"),
        ("nonsense", "not an item id or SESSION:SEQ reference"),
    ],
)
def test_inspect_bad_references(cli: Cli, shop_db: Path, ref: str, error: str) -> None:
    only_error(cli("--db", str(shop_db), "inspect", ref), error)


def test_reading_commands_never_create_a_database(cli: Cli, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "memory.sqlite"
    for args in (("items",), ("inspect", "shop-1:1"), ("retract", "mem_x"), ("promote", "mem_x")):
        only_error(cli("--db", str(missing), *args), "no memplug database")
    assert not missing.parent.exists()


def test_bad_options_are_one_line_errors(cli: Cli, shop_db: Path) -> None:
    only_error(cli("--db", str(shop_db), "items", "--status", "lost"), "--status")
    only_error(cli("--db", str(shop_db), "items", "--kind", "rumour"), "--kind")
    only_error(cli("--db", str(shop_db), "promote", "mem_x", "--kind", "proposal"), "--kind")


def test_retract_and_promote_are_recorded_and_survive_a_rebuild(cli: Cli, shop_db: Path) -> None:
    listed = items(cli, shop_db)
    friday = next(i for i in listed if i["content"] == "we ship the checkout rewrite on Friday.")
    proposal = next(i for i in listed if i["kind"] == "proposal")
    retracted = cli("--db", str(shop_db), "retract", friday["id"], "--note", "moved", "--json")
    assert retracted.returncode == 0, retracted.stderr
    assert retracted.json()["item"]["status"] == "retracted"
    promoted = cli("--db", str(shop_db), "promote", proposal["id"], "--kind", "constraint")
    assert promoted.returncode == 0 and "constraint" in promoted.stdout
    only_error(cli("--db", str(shop_db), "retract", friday["id"]), "already retracted")
    only_error(cli("--db", str(shop_db), "promote", friday["id"]), "not an assistant proposal")
    with Memory.open(shop_db, create=False) as memory:
        actions = memory.db.conn.execute(
            "SELECT memory_id, action, actor FROM memory_actions ORDER BY id"
        ).fetchall()
        assert actions == [(friday["id"], "retract", "cli"), (proposal["id"], "promote", "cli")]
        lifecycle = memory.store.items.events_of(friday["id"])
        assert (lifecycle[-1]["event"], lifecycle[-1]["actor"]) == ("retracted", "cli")
        # Sessions were captured out of name order, so row numbers differ by design.
        before = dump(memory)
    rebuilt = cli("--db", str(shop_db), "rebuild", "--json")
    assert rebuilt.returncode == 0, rebuilt.stderr
    summary = rebuilt.json()
    assert summary["sessions"] == ["long", "shop-1"] and summary["actions"] == 2
    assert summary["failed"] == []
    with Memory.open(shop_db, create=False) as memory:
        assert dump(memory) == before


def test_rebuild_one_session_and_refuse_an_unknown_one(cli: Cli, shop_db: Path) -> None:
    one = cli("--db", str(shop_db), "rebuild", "--session", "long")
    assert one.returncode == 0 and "rebuilt 1 session" in one.stdout
    only_error(cli("--db", str(shop_db), "rebuild", "--session", "nope"), "no session 'nope'")
