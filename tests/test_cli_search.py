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
    assert done.stdout.splitlines()[-1] == (
        "coverage: INCOMPLETE (short_terms) — absence here is not proof"
    )
    data = json.loads(memory("--db", db, "search", "x", "--json").stdout)
    assert data["coverage"] == {"complete": False, "reasons": ["short_terms"]}
    # The paths that can answer it do.
    for mode in ("phrase", "regex"):
        found = json.loads(memory("--db", db, "search", "x", "--mode", mode, "--json").stdout)
        assert found["total"] == 1 and found["coverage"]["complete"]
