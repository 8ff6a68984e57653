"""The real PostgreSQL server of the sync tests (``bench.postgres``), started once per
test process; each test gets a database of its own on it (``pg_url``). No mock of
PostgreSQL and no skip: `make test` installs Debian's server when it is missing, and
without it these tests fail saying what to install.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from bench.postgres import PASSWORD, PgServer, free_port, running_server

__all__ = ["PASSWORD", "PgServer", "free_port", "pg_server", "pg_url", "postgres"]

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
