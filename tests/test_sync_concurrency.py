"""Never miss a row (docs/sync.md "The pull cursor"): pulls follow commit order, so a
row whose transaction started early and committed late is still read, once."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from pg_server import pg_server, pg_url, postgres, shop_database

from memplug.memory import Memory
from memplug.sync import exchange
from memplug.sync.postgres import Server, ServerEvent

__all__ = ["pg_server", "pg_url"]
pytestmark = [pytest.mark.postgres, postgres]

PUSHERS = 4
EVENTS = 10_000


def _event(key: str, seq: int, origin: str) -> ServerEvent:
    body = json.dumps({"session_id": key, "seq": seq, "type": "user/message", "text": "x"})
    return ServerEvent(key, seq, origin, "shop", None, f"h{seq}", body + "\n")


def test_a_row_that_commits_late_is_read_after_it_commits(pg_url: str) -> None:
    early, late = Server.connect(pg_url), Server.connect(pg_url)
    reader = Server.connect(pg_url)
    try:
        reader.ensure_schema()
        # A slow writer takes its transaction id (and the smaller serial id) first ...
        with early.conn.transaction():
            early.conn.execute(
                "INSERT INTO memplug_events (session_key, seq, origin, content_hash, body) "
                "VALUES ('slow/s', 1, 'slow', 'h', '{}')"
            )
            # ... a fast one commits meanwhile.
            late.push([_event("fast/s", 1, "fast")])
            horizon = reader.horizon()
            seen = reader.pull_events("0:0", horizon, "me", 100)
            # A serial-id cursor would read the fast row now and move past the slow
            # one's id; the horizon holds the fast row back until the slow one is done.
            assert seen == []
        horizon = reader.horizon()
        seen = reader.pull_events("0:0", horizon, "me", 100)
        assert [(e.session_key, e.seq) for e in seen] == [("slow/s", 1), ("fast/s", 1)]
        assert reader.pull_events(seen[-1].cursor, reader.horizon(), "me", 100) == []
    finally:
        for server in (early, late, reader):
            server.close()


def _pusher_file(directory: Path) -> Path:
    """One file of EVENTS events in project `shop`, copied for every pusher (their origin
    ids keep the generic session ids apart on the server)."""
    return shop_database(
        directory / "template.sqlite", EVENTS, lambda i: f"event {i} of the checkout service"
    )


@pytest.mark.slow
def test_four_pushers_and_a_puller_throughout(
    pg_url: str, tmp_path: Path, fresh_db: Callable[..., Path]
) -> None:
    template = _pusher_file(tmp_path)
    pushers = []
    for n in range(PUSHERS):
        path = tmp_path / f"pusher{n}" / "m.sqlite"
        path.parent.mkdir()
        shutil.copyfile(template, path)
        with Memory.open(path) as memory:
            exchange.init(memory, pg_url, f"pusher{n}")
            exchange.share(memory, "shop")
        pushers.append(path)
    with Memory.open(fresh_db()) as puller:
        exchange.init(puller, pg_url, "puller")
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "memplug.cli", "--db", str(p), "sync", "--push", "--json"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for p in pushers
        ]
        pulled = held = rounds = 0
        while any(proc.poll() is None for proc in procs) or rounds == 0:
            report = exchange.run(puller, push=False)
            pulled, held, rounds = pulled + report.pulled, held + report.already_held, rounds + 1
        outputs = [proc.communicate(timeout=60) for proc in procs]
        report = exchange.run(puller, push=False)
        pulled, held = pulled + report.pulled, held + report.already_held
        assert [json.loads(out)["pushed"] for out, _ in outputs] == [EVENTS] * PUSHERS
        assert pulled == PUSHERS * EVENTS and held == 0
        assert puller.store.counts()["events"] == PUSHERS * EVENTS
        assert rounds > 1  # the puller really ran while the pushers did
    with psycopg.connect(pg_url) as conn:
        row = conn.execute(
            "SELECT count(*), count(DISTINCT (session_key, seq)) FROM memplug_events"
        )
        assert row.fetchone() == (PUSHERS * EVENTS, PUSHERS * EVENTS)
