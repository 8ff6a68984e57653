"""Faults (docs/sync.md "When the server is away"): server down, a wrong password, the
network cut mid-transfer, kill -9 mid-push and mid-pull. `memory sync` exits 1 with one
line; a rerun completes; nothing is lost or duplicated. Hooks never touch the network."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from conftest import CliResult, run_cli
from pg_server import PgServer, free_port, pg_server, pg_url, postgres, shop_database

from memplug.memory import Memory
from memplug.sync import exchange

__all__ = ["pg_server", "pg_url"]
pytestmark = [pytest.mark.postgres, postgres]

EVENTS = 10_000


class Proxy:
    """A loopback TCP relay in front of the server: it can be stopped (the server is
    down) or cut the connection after ``limit`` bytes in one direction (the network
    breaks mid-transfer)."""

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.port = free_port()
        self.limit: dict[str, int | None] = {"up": None, "down": None}
        self.listener = socket.create_server(("127.0.0.1", self.port))
        self.sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.upstream))
            self.sockets += [client, server]
            for src, dst, way in ((client, server, "up"), (server, client, "down")):
                threading.Thread(target=self._relay, args=(src, dst, way), daemon=True).start()

    def _relay(self, src: socket.socket, dst: socket.socket, way: str) -> None:
        sent = 0
        try:
            while data := src.recv(65536):
                dst.sendall(data)
                sent += len(data)
                limit = self.limit[way]
                if limit is not None and sent > limit:
                    break
        except OSError:
            pass
        for sock in (src, dst):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def url(self, server: PgServer, dbname: str) -> str:
        return server.url(dbname, port=self.port)

    def stop_listening(self) -> None:
        # shutdown wakes the thread blocked in accept(); close alone would not.
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()

    def close(self) -> None:
        self.stop_listening()
        for sock in self.sockets:
            with contextlib.suppress(OSError):
                sock.close()


@pytest.fixture
def proxy(pg_server: PgServer) -> Iterator[Proxy]:
    relay = Proxy(pg_server.port)
    yield relay
    relay.close()


_TEMPLATE: list[Path] = []


def _events_file(directory: Path) -> Path:
    """A file of EVENTS events in project `shop` (made once, copied per test)."""
    if not _TEMPLATE:
        made = directory / "template"
        made.mkdir()
        _TEMPLATE.append(
            shop_database(
                made / "m.sqlite",
                EVENTS,
                lambda i: f"event {i}: the checkout service listens on port {8000 + i % 100}",
            )
        )
    path = directory / "a" / "m.sqlite"
    path.parent.mkdir()
    shutil.copyfile(_TEMPLATE[0], path)
    return path


def _sync(path: Path, *args: str, env: dict[str, str] | None = None) -> CliResult:
    return run_cli("--db", str(path), "sync", "--json", *args, env=env)


def _server_count(url: str) -> tuple[int, int]:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT count(*), count(DISTINCT (session_key, seq)) FROM memplug_events"
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def _one_error_line(result: CliResult, *fragments: str) -> None:
    assert result.returncode == 1, result
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def _machine(path: Path, url: str, origin: str, share: bool = True) -> None:
    with Memory.open(path) as memory:
        exchange.init(memory, url, origin)
        if share:
            exchange.share(memory, "shop")


def test_server_down_is_one_line_and_a_rerun_completes(
    proxy: Proxy, pg_server: PgServer, pg_url: str, tmp_path: Path
) -> None:
    dbname = pg_url.rsplit("dbname=", 1)[1]
    path = _events_file(tmp_path)
    _machine(path, proxy.url(pg_server, dbname), "ana")
    proxy.stop_listening()  # the server is down: nothing listens there any more
    _one_error_line(_sync(path), "cannot connect to 127.0.0.1:", "Connection refused")
    restarted = Proxy(pg_server.port)
    try:
        with Memory.open(path) as memory:
            exchange.init(memory, restarted.url(pg_server, dbname), "ana")
        assert _sync(path).json()["pushed"] == EVENTS
    finally:
        restarted.close()
    assert _server_count(pg_url) == (EVENTS, EVENTS)


def test_init_against_a_server_that_is_down(db_path: Path, cli: Callable[..., CliResult]) -> None:
    url = f"host=127.0.0.1 port={free_port()} user=memplug dbname=x"
    _one_error_line(cli("--db", str(db_path), "sync", "init", url), "cannot connect")


def test_a_wrong_password_is_one_line(pg_url: str, tmp_path: Path) -> None:
    path = _events_file(tmp_path)
    _machine(path, pg_url, "ana")
    result = _sync(path, env={"PGPASSWORD": "not-the-password"})
    _one_error_line(result, "password authentication failed")
    assert "not-the-password" not in result.stderr
    assert _sync(path).json()["pushed"] == EVENTS


@pytest.mark.slow
def test_the_network_cut_mid_push_and_mid_pull(
    proxy: Proxy, pg_server: PgServer, pg_url: str, tmp_path: Path, fresh_db: Callable[..., Path]
) -> None:
    dbname = pg_url.rsplit("dbname=", 1)[1]
    path = _events_file(tmp_path)
    _machine(path, proxy.url(pg_server, dbname), "ana")
    proxy.limit["up"] = 600_000  # about a third of the events
    _one_error_line(_sync(path), "the sync server")
    pushed_before = _server_count(pg_url)[0]
    assert 0 < pushed_before < EVENTS
    proxy.limit["up"] = None
    assert _sync(path).json()["pushed"] == EVENTS - pushed_before
    assert _server_count(pg_url) == (EVENTS, EVENTS)

    puller = fresh_db()
    _machine(puller, proxy.url(pg_server, dbname), "bob", share=False)
    proxy.limit["down"] = 800_000
    _one_error_line(_sync(puller), "the sync server")
    with Memory.open(puller) as memory:
        held = memory.store.counts()["events"]
    assert 0 < held < EVENTS
    proxy.limit["down"] = None
    assert _sync(puller).json()["pulled"] == EVENTS - held
    with Memory.open(puller) as memory:
        assert memory.store.counts()["events"] == EVENTS


def _kill_when(proc: subprocess.Popen[str], ready: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 60
    while not ready():
        assert proc.poll() is None, "the sync finished before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def _start_sync(path: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "memplug.cli", "--db", str(path), "sync", "--json", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
def test_kill_9_mid_push_and_mid_pull(
    pg_url: str, tmp_path: Path, fresh_db: Callable[..., Path]
) -> None:
    path = _events_file(tmp_path)
    _machine(path, pg_url, "ana")
    proc = _start_sync(path, "--push")
    _kill_when(proc, lambda: _server_count(pg_url)[0] > 0)
    # Killed while running (checked above); rarely after its last commit, which the
    # rerun then finds on the server.
    on_server = _server_count(pg_url)[0]
    assert 0 < on_server <= EVENTS
    assert _sync(path).json()["pushed"] == EVENTS - on_server
    assert _sync(path).json()["pushed"] == 0
    assert _server_count(pg_url) == (EVENTS, EVENTS)

    puller = fresh_db()
    _machine(puller, pg_url, "bob", share=False)

    def pulled_some() -> bool:
        if not puller.with_name(puller.name + "-wal").exists():
            return False
        with Memory.open(puller, readonly=True) as memory:
            return memory.store.counts()["events"] > 0

    proc = _start_sync(puller, "--pull")
    _kill_when(proc, pulled_some)
    with Memory.open(puller) as memory:
        held = memory.store.counts()["events"]
    assert 0 < held <= EVENTS
    assert _sync(puller).json()["pulled"] == EVENTS - held
    with Memory.open(puller) as memory:
        assert memory.store.counts()["events"] == EVENTS


def test_a_hook_with_the_server_down_never_waits_for_it(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite"
    with Memory.open(path) as memory, memory.store.write_transaction():
        # A server nobody listens for: a hook that tried it would fail or wait.
        memory.store.sync.set_remote(f"host=192.0.2.1 port={free_port()} user=x", "ana")
        memory.store.sync.share("shop")
    payload = json.dumps(
        {
            "session_id": "h1",
            "hook_event_name": "UserPromptSubmit",
            "prompt": "hello",
            "cwd": "shop",
        }
    )
    started = time.monotonic()
    result = run_cli("--db", str(path), "hook", "claude-code", input=payload)
    assert result.returncode == 0 and result.stderr == ""
    assert time.monotonic() - started < 10
