"""The real PostgreSQL server of the sync tests (``bench.postgres``), started once per
test process; each test gets a database of its own on it (``pg_url``). No mock of
PostgreSQL and no skip: `make test` installs Debian's server when it is missing, and
without it these tests fail saying what to install.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bench.postgres import PASSWORD, PgServer, free_port, running_server

__all__ = [
    "PASSWORD",
    "PgServer",
    "free_port",
    "pg_server",
    "pg_url",
    "postgres",
    "shop_database",
]

postgres = pytest.mark.postgres


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    os.environ["PGPASSWORD"] = PASSWORD
    with running_server() as server:
        yield server


@pytest.fixture
def pg_url(pg_server: PgServer, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh database on the test server, as a libpq connection string."""
    monkeypatch.setenv("PGPASSWORD", PASSWORD)
    return pg_server.url(pg_server.create_database())


def shop_database(path: Path, count: int, text: Callable[[int], str]) -> Path:
    """A database at ``path`` holding ``count`` user messages of project ``shop``, 1,000
    a session, captured without extraction (a template the sync tests copy)."""
    from memplug.memory import Memory

    lines = "".join(
        json.dumps(
            {
                "session_id": f"s{i // 1000}",
                "seq": i % 1000,
                "type": "user/message",
                "role": "user",
                "text": text(i),
                "project": "shop",
            }
        )
        + "\n"
        for i in range(count)
    )
    source = path.with_suffix(".jsonl")
    source.write_text(lines, encoding="utf-8")
    with Memory.open(path, config={"extraction": {"enabled": False}}) as memory:
        with open(source, "rb") as stream:
            assert memory.import_jsonl([("source", stream)]).new == count
        memory.store.truncate_wal()
    return path
