"""A throwaway PostgreSQL server for the sync tests and `python -m bench.sync`: Debian's
binaries, started with initdb/pg_ctl in a temp dir, on a loopback port, as an
unprivileged user (PostgreSQL refuses to run as root, and CI runs as root).

The superuser's password is given to libpq through PGPASSWORD, never in a URL.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

USER = "memplug"
PASSWORD = "sync-test-pw"
SYSTEM_USER = "memplug-pg"


def server_bin() -> Path | None:
    """The newest Debian PostgreSQL bin dir, or None when none is installed."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: p.split("/")[4])
    return Path(found[-1]).parent if found else None


BIN = server_bin()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _runner() -> list[str]:
    """Run as an unprivileged system user when we are root, else as ourselves."""
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        # Two test processes may both get here: the loser's useradd fails, and the
        # user exists all the same.
        subprocess.run(
            [
                "useradd",
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                SYSTEM_USER,
            ],
            capture_output=True,
        )
        pwd.getpwnam(SYSTEM_USER)
    return ["runuser", "-u", SYSTEM_USER, "--"]


class PgServer:
    def __init__(self, root: Path, port: int) -> None:
        self.root = root
        self.port = port
        self.data = root / "data"

    def url(self, dbname: str = "postgres", port: int | None = None) -> str:
        return f"host=127.0.0.1 port={port or self.port} user={USER} dbname={dbname}"

    def run(self, *args: str) -> None:
        subprocess.run([*_runner(), *args], check=True, capture_output=True, cwd=self.root)

    def start(self) -> None:
        assert BIN is not None
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
            "-c max_connections=40"
        )
        self.run(
            str(BIN / "pg_ctl"),
            "-D",
            str(self.data),
            "-w",
            "-t",
            "60",
            "-l",
            str(self.root / "log"),
            "-o",
            options,
            "start",
        )

    def stop(self) -> None:
        assert BIN is not None
        with contextlib.suppress(subprocess.CalledProcessError):
            self.run(str(BIN / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")

    def create_database(self) -> str:
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return name

    def dump(self, dbname: str) -> str:
        assert BIN is not None
        done = subprocess.run(
            [str(BIN / "pg_dump"), "-h", "127.0.0.1", "-p", str(self.port), "-U", USER, dbname],
            check=True,
            capture_output=True,
            text=True,
            env={**os.environ, "PGPASSWORD": PASSWORD},
        )
        return done.stdout


@contextlib.contextmanager
def running_server() -> Iterator[PgServer]:
    if BIN is None:
        raise RuntimeError(
            "no PostgreSQL server binaries: apt-get install postgresql (make test does, as root)"
        )
    # /tmp, whatever TMPDIR says: the server's user must be able to reach the directory.
    root = Path(tempfile.mkdtemp(prefix="memplug-pg-", dir="/tmp" if os.geteuid() == 0 else None))
    os.chmod(root, 0o700)
    if os.geteuid() == 0:
        _runner()
        shutil.chown(root, SYSTEM_USER)
    server = PgServer(root, free_port())
    (root / "pw").write_text(PASSWORD + "\n")
    if os.geteuid() == 0:
        shutil.chown(root / "pw", SYSTEM_USER)
    server.run(
        str(BIN / "initdb"),
        "-D",
        str(server.data),
        "-U",
        USER,
        "--pwfile",
        str(root / "pw"),
        "--auth-host=scram-sha-256",
        "--auth-local=trust",
        "-E",
        "UTF8",
        "--no-sync",
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
