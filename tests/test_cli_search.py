"""`memory search` / `memory expand` as a user runs them (the installed script)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.installed import memory

EVENT = {
    "session_id": "s1",
    "seq": 1,
    "type": "user/message",
    "role": "user",
    "text": "set x to 5 in the config",
    "time": "2026-01-01T00:00:00Z",
    "cwd": "/home/ana/shop",
}


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = tmp_path / "m.sqlite"
    done = memory("--db", str(path), "import", "-", input=json.dumps(EVENT) + "\n")
    assert done.returncode == 0, done.stderr
    return str(path)


def test_a_short_query_is_not_an_authoritative_empty(db: str) -> None:
    done = memory("--db", db, "search", "x")
    assert done.returncode == 0, done.stderr
    assert "authoritative" not in done.stdout
    assert done.stdout.splitlines()[-2:] == [
        "coverage: INCOMPLETE (short_terms) — absence here is not proof",
        # Coverage says what to do about it, not only why.
        "  next: one- and two-letter words are not looked up alone: use a longer word",
    ]
    data = json.loads(memory("--db", db, "search", "x", "--json").stdout)
    assert data["coverage"] == {
        "complete": False,
        "reasons": ["short_terms"],
        "next_steps": ["one- and two-letter words are not looked up alone: use a longer word"],
    }
    # The paths that can answer it do.
    for mode in ("phrase", "regex"):
        found = json.loads(memory("--db", db, "search", "x", "--mode", mode, "--json").stdout)
        assert found["total"] == 1 and found["coverage"]["complete"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["search", "x", "--limit", "1000"], "--limit must be between 1 and 100, not 1000"),
        (["search", "x", "--limit", "0"], "--limit must be between 1 and 100, not 0"),
        (["expand", "s1:1", "--max-chars", "0"], "--max-chars must be between 1 and 20000, not 0"),
        (["expand", "s1:1", "--before", "51"], "--before must be between 0 and 50, not 51"),
    ],
)
def test_out_of_range_values_are_refused(db: str, args: list[str], message: str) -> None:
    done = memory("--db", db, *args)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"Error: {message}\n")
    failed = memory("--db", db, *args, "--json")
    assert failed.returncode == 2
    assert json.loads(failed.stdout)["coverage"]["error"] == {
        "code": "invalid_input",
        "message": message,
    }


def test_a_json_search_on_a_missing_database_says_so_on_stdout(tmp_path: Path) -> None:
    done = memory("--db", str(tmp_path / "typo.sqlite"), "search", "port", "--json")
    assert done.returncode == 2
    assert json.loads(done.stdout)["coverage"]["error"]["code"] == "no_database"
    assert not (tmp_path / "typo.sqlite").exists()


def test_a_long_query_gets_a_small_next_token_that_takes_the_query_again(tmp_path: Path) -> None:
    db = str(tmp_path / "m.sqlite")
    events = [
        {**EVENT, "seq": n, "text": f"deploy the checkout service step {n}"} for n in (1, 2, 3)
    ]
    lines = "".join(json.dumps(e) + "\n" for e in events)
    assert memory("--db", db, "import", "-", input=lines).returncode == 0
    query = "deploy checkout service " * 5_000  # 120 KB: one argument still fits argv
    first = memory("--db", db, "search", query, "--limit", "1", "--json")
    assert first.returncode == 0, first.stderr
    token = first.json()["next"]
    assert len(token) < 600
    text = memory("--db", db, "search", query, "--limit", "1").stdout
    assert "next page: memory search QUERY --next mp1." in text
    second = memory("--db", db, "search", query, "--next", token, "--json")
    assert second.returncode == 0, second.stderr
    assert second.json()["offset"] == 1 and second.json()["total"] == first.json()["total"]
    alone = memory("--db", db, "search", "--next", token)
    assert alone.returncode == 2 and "give the same QUERY with --next" in alone.stderr
    other = memory("--db", db, "search", "deploy", "--next", token)
    assert other.stderr == "Error: the QUERY given with --next is not the one this token is for\n"
    # A short query still rides in its token: --next alone follows it.
    short = memory("--db", db, "search", "deploy", "--limit", "1", "--json").json()
    assert memory("--db", db, "search", "--next", short["next"]).returncode == 0
