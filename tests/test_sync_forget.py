"""What leaves a machine and what is forgotten everywhere (docs/sync.md): purges travel
as tombstones and are never undone; secrets and `<private>` spans never reach the
server. Checked by grepping the SQLite files and a pg_dump of the server."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pg_server import PgServer, pg_server, pg_url, postgres
from test_sync import Machine, line, machines

__all__ = ["machines", "pg_server", "pg_url"]
pytestmark = [pytest.mark.postgres, postgres]

PLANTED = "zebra-lantern-7731"
UUID = "5f0c8a52-1d3e-4b7a-9c11-2e6f4d8b9a07"


def _file_bytes(machine: Machine) -> bytes:
    """The database file with its write-ahead log and shared memory, as a grep sees it."""
    return b"".join(
        path.read_bytes()
        for path in machine.path.parent.iterdir()
        if path.name.startswith(machine.path.name)
    )


def _dbname(url: str) -> str:
    return url.rsplit("dbname=", 1)[1]


def test_a_purged_session_is_gone_from_every_machine_and_the_server(
    machines: Callable[..., Machine], pg_server: PgServer, pg_url: str
) -> None:
    a, b = machines("ana"), machines("bob")
    a.import_lines(line("s1", 1, f"the code word is {PLANTED}"), line("s2", 1, "keep me"))
    a.sync()
    assert b.sync()["pulled"] == 2
    assert PLANTED.encode() in _file_bytes(b)
    a("purge", "--session", "s1", "--yes")
    assert a("status", "--json").json()["sync"]["tombstones_to_send"] == 1
    assert a.sync()["purges_sent"] == 1
    assert b.sync()["purges_applied"] == 1
    assert PLANTED.encode() not in _file_bytes(a)
    assert PLANTED.encode() not in _file_bytes(b)
    dump = pg_server.dump(_dbname(pg_url))
    assert PLANTED not in dump and "keep me" in dump
    assert "keep me" in b("export").stdout
    # Applied once: later syncs carry out nothing more.
    assert a.sync()["purges_applied"] == 0 and b.sync()["purges_applied"] == 0


def test_a_machine_still_holding_purged_data_never_pushes_it_back(
    machines: Callable[..., Machine], pg_server: PgServer, pg_url: str
) -> None:
    # A Claude Code session (a UUID) that C holds too: it is the same key on both.
    a, c = machines("ana"), machines("carol")
    a.import_lines(line(UUID, 1, f"remember {PLANTED}"))
    a.sync()
    a("purge", "--session", UUID, "--yes")
    a.sync()
    c.import_lines(line(UUID, 1, f"remember {PLANTED}"), line(UUID, 2, "later words"))
    # Pushing alone, before C has read the tombstone: the server refuses the key.
    assert c.sync("--push")["pushed"] == 0
    assert PLANTED not in pg_server.dump(_dbname(pg_url))
    # Its next full sync carries the purge out on C as well.
    assert c.sync()["purges_applied"] == 1
    assert PLANTED.encode() not in _file_bytes(c)


def test_a_purge_before_a_date_travels_as_a_range(
    machines: Callable[..., Machine], pg_server: PgServer, pg_url: str
) -> None:
    a, b = machines("ana"), machines("bob")
    a.import_lines(
        line("s1", 1, f"early {PLANTED}", time="2026-01-01T09:00:00Z"),
        line("s1", 2, "late words stay", time="2026-02-01T09:00:00Z"),
    )
    a.sync()
    b.sync()
    a("purge", "--before", "2026-01-15", "--yes")
    a.sync()
    assert b.sync()["purges_applied"] == 1
    assert "late words stay" in b("export").stdout
    assert PLANTED.encode() not in _file_bytes(b)
    dump = pg_server.dump(_dbname(pg_url))
    assert PLANTED not in dump and "late words stay" in dump


GITHUB = "ghp_" + "Zq8RkW3mXy7TnV2bLp5sJd9Fh4Gc6Ae1Ku0M"
AWS_ID = "AKIA" + "QX7R2M5T8W3Y6B9D"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY"  # 40 characters, as AWS's


def test_secrets_and_private_spans_never_reach_the_server(
    machines: Callable[..., Machine], pg_server: PgServer, pg_url: str
) -> None:
    a, b = machines("ana"), machines("bob")
    a.import_lines(
        line("s1", 1, f"use the token {GITHUB} for the CI"),
        line(
            "s1",
            2,
            f"aws_access_key_id = {AWS_ID}\naws_secret_access_key = {AWS_SECRET}",
        ),
        line("s1", 3, f"my diary <private>{PLANTED}</private> ends"),
        line(
            "s1",
            4,
            "tool output",
            type="tool/result",
            role="tool",
            content=[{"type": "text", "text": f"export GH={GITHUB}"}],
        ),
    )
    assert len(GITHUB) == 40 and len(AWS_SECRET) == 40
    assert a.sync()["pushed"] == 4
    b.sync()
    dump = pg_server.dump(_dbname(pg_url))
    for secret in (GITHUB, AWS_ID, AWS_SECRET, PLANTED):
        assert secret not in dump, secret
        assert secret.encode() not in _file_bytes(b), secret
    assert "[redacted:" in dump and "use the token" in dump
    # The person at A still sees their own text (only <private> was never stored).
    assert GITHUB in a("export").stdout and PLANTED not in a("export").stdout
