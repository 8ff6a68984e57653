"""Team memory through a real PostgreSQL server (docs/sync.md): two SQLite files, one
server; what is shared, what arrives, what is derived, conflicts, status."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from conftest import CliResult
from pg_server import PgServer, pg_server, pg_url, postgres

from memplug.memory import Memory

__all__ = ["pg_server", "pg_url"]
pytestmark = [pytest.mark.postgres, postgres]

Cli = Callable[..., CliResult]


def line(session: str, seq: int, text: str, *, project: str = "shop", **extra: object) -> str:
    event = {
        "session_id": session,
        "seq": seq,
        "type": "user/message",
        "role": "user",
        "time": f"2026-01-05T10:{seq // 60:02d}:{seq % 60:02d}Z",
        "turn": seq,
        "text": text,
        "project": project,
        **extra,
    }
    return json.dumps(event) + "\n"


class Machine:
    """One SQLite file driven through the CLI, as a person on that machine would."""

    def __init__(self, cli: Cli, path: Path, name: str) -> None:
        self.cli, self.path, self.name = cli, path, name

    def __call__(self, *args: str, input: str | None = None, ok: bool = True) -> CliResult:
        result = self.cli("--db", str(self.path), *args, input=input)
        if ok:
            assert result.returncode == 0, (args, result.stdout, result.stderr)
        return result

    def import_lines(self, *lines: str) -> None:
        self("import", "-", input="".join(lines))

    def sync(self, *args: str) -> dict[str, int]:
        return self("sync", "--json", *args).json()


@pytest.fixture
def machines(cli: Cli, pg_url: str, fresh_db: Callable[..., Path]) -> Callable[[str], Machine]:
    def make(name: str, *, share: str | None = "shop") -> Machine:
        machine = Machine(cli, fresh_db(), name)
        assert machine("sync", "init", pg_url, "--origin", name, "--json").json() == {
            "url": pg_url,
            "origin": name,
        }
        if share:
            machine("share", "--project", share)
        return machine

    return make


def _assembled(machine: Machine, session: str, query: str) -> str:
    data = machine("assemble", "--session", session, "--query", query, "--json").json()
    return str(data["text"] or "")


def test_a_decision_captured_on_a_is_injected_on_b(machines: Callable[..., Machine]) -> None:
    a, b = machines("ana"), machines("bob")
    a.import_lines(
        line("s1", 1, "Let's plan the release."),
        line("s1", 2, "Decision: we ship on Friday."),
    )
    b.import_lines(line("s1", 1, "Working on the checkout page today."))
    assert a.sync() == {
        "pushed": 2,
        "pulled": 0,
        "conflicts": 0,
        "purges_applied": 0,
        "purges_sent": 0,
    }
    assert b.sync()["pulled"] == 2
    # Both machines had a session `s1`: the origin id keeps them apart on B.
    pulled = b("export", "--session", "ana/s1").stdout
    assert "Decision: we ship on Friday." in pulled
    assert "checkout page" in b("export", "--session", "s1").stdout
    items = b("items", "--project", "shop", "--json").json()["items"]
    assert any(
        "ship on Friday" in item["content"] and item["session_id"] == "ana/s1" for item in items
    )
    b.import_lines(line("s1", 2, "When do we ship?"))
    assert "we ship on Friday" in _assembled(b, "s1", "when do we ship")
    assert b.sync() == {
        "pushed": 1,
        "pulled": 0,
        "conflicts": 0,
        "purges_applied": 0,
        "purges_sent": 0,
    }
    assert a.sync()["pulled"] == 2  # B's s1, both lines, as bob/s1
    assert "When do we ship?" in a("export", "--session", "bob/s1").stdout
    # Idempotent: a rerun on either side moves nothing.
    nothing = {"pushed": 0, "pulled": 0, "conflicts": 0, "purges_applied": 0, "purges_sent": 0}
    assert a.sync() == nothing and b.sync() == nothing


def test_both_machines_derive_the_same_items_from_the_same_events(
    machines: Callable[..., Machine], cli: Cli, fresh_db: Callable[..., Path]
) -> None:
    a, b = machines("ana"), machines("bob", share=None)
    a.import_lines(
        line("s1", 1, "Decision: we ship on Friday."),
        line("s1", 2, "We must never push directly to main."),
        line("s1", 3, "Actually, we ship on Thursday instead."),
    )
    a.sync()
    b.sync()
    # A file that imports what B holds derives what B derived.
    exported = b("export", "--session", "ana/s1").stdout
    c = Machine(cli, fresh_db(), "carol")
    c.import_lines(exported)

    def items(machine: Machine) -> list[tuple[str, str, str]]:
        data = machine("items", "--session", "ana/s1", "--json").json()["items"]
        return [(i["id"], i["content"], i["status"]) for i in data]

    assert items(b) == items(c) and len(items(b)) >= 2


def test_a_private_project_never_leaves(machines: Callable[..., Machine]) -> None:
    a, b = machines("ana"), machines("bob")
    a.import_lines(
        line("s1", 1, "shared words"),
        line("p1", 1, "secret plans", project="diary"),
    )
    assert a.sync()["pushed"] == 1
    b.sync()
    assert "secret plans" not in b("export").stdout
    a("share", "--project", "diary")
    assert a.sync()["pushed"] == 1
    assert b.sync()["pulled"] == 1
    a("unshare", "--project", "diary")
    a.import_lines(line("p1", 2, "more plans", project="diary"))
    assert a.sync()["pushed"] == 0


def test_same_key_other_content_is_a_conflict_kept_apart(
    machines: Callable[..., Machine],
) -> None:
    # Claude Code session ids are UUIDs: the same on every machine, so not namespaced.
    uuid = "0b7d2d8e-4a1c-4f43-9a51-6f1e7b6c2a10"
    a, b = machines("ana"), machines("bob")
    a.import_lines(line(uuid, 1, "we use port 8080"), line(uuid, 2, "same on both"))
    b.import_lines(line(uuid, 1, "we use port 9090"), line(uuid, 2, "same on both"))
    assert a.sync()["pushed"] == 2
    pulled = b.sync()
    # B's own seq 1 differs from the server's: reported on both the pull and the push.
    assert pulled["conflicts"] == 2 and pulled["pushed"] == 0
    assert "9090" in b("export", "--session", uuid).stdout
    status = b("status", "--json").json()["sync"]
    assert status["conflicts"] == 1
    with psycopg.connect(a("status", "--json").json()["sync"]["url"]) as conn:
        kept = conn.execute("SELECT body FROM memplug_conflicts").fetchall()
        held = conn.execute("SELECT body FROM memplug_events WHERE seq = 1").fetchall()
    assert len(kept) == 1 and "9090" in kept[0][0]
    assert len(held) == 1 and "8080" in held[0][0]
    assert b.sync()["conflicts"] == 0  # reported once


def test_status_says_what_is_shared_and_where(
    machines: Callable[..., Machine], pg_url: str
) -> None:
    a = machines("ana")
    a.import_lines(line("s1", 1, "hello"))
    data = a("status", "--json").json()["sync"]
    assert data["url"] == pg_url and data["origin"] == "ana"
    assert data["projects"] == [{"project": "shop", "unpushed": 1}]
    assert data["last_sync_at"] is None
    a.sync()
    text = a("status").stdout
    assert f"sync       {pg_url} as ana" in text
    assert "shared     shop\n" in text


def test_the_password_is_stored_nowhere(
    machines: Callable[..., Machine], pg_server: PgServer
) -> None:
    from pg_server import PASSWORD

    a = machines("ana")
    a.import_lines(line("s1", 1, "hello"))
    a.sync()
    for path in a.path.parent.iterdir():
        assert PASSWORD.encode() not in path.read_bytes(), path
    with Memory.open(a.path) as memory:
        remote = memory.store.sync.remote()
    assert remote is not None and "password" not in remote.url


def test_init_again_keeps_the_origin_and_moves_nothing_twice(
    machines: Callable[..., Machine], pg_url: str
) -> None:
    a, b = machines("ana"), machines("bob")
    a.import_lines(line("s1", 1, "Decision: we ship on Friday."))
    b.import_lines(line("s1", 1, "hello from bob"))
    a.sync(), b.sync(), a.sync()
    assert a("sync", "init", pg_url, "--json").json()["origin"] == "ana"
    nothing = {"pushed": 0, "pulled": 0, "conflicts": 0, "purges_applied": 0, "purges_sent": 0}
    assert a.sync() == nothing
    assert a("status", "--json").json()["counts"]["events"] == 2
