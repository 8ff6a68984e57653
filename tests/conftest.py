"""Test isolation: no test may read or write the user's real memplug data."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memplug.base.events import parse_event
from memplug.memory import Memory
from memplug.store.db import Database

# msgspec reads an event's field types on its first conversion, from the module's names:
# under freezegun that would be its FakeDatetime (which rejects real times) for the rest
# of the process, so a test file run alone (tests/test_plugin.py) would depend on which
# test converted first. Converting one here, outside any frozen clock, fixes the types.
parse_event({"session_id": "s", "seq": 1, "type": "user/message", "time": "2026-01-01T00:00:00Z"})

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
SESSIONS = FIXTURES / "sessions"


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    home = tmp_path_factory.mktemp("memplug-home")
    monkeypatch.setenv("MEMPLUG_HOME", str(home / "data"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / "state"))  # the hooks' told failures
    monkeypatch.delenv("COLUMNS", raising=False)  # tables fit it; piped output is whole
    for name in ("MEMPLUG_DB", "MEMPLUG_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    for name in list(os.environ):
        if name.startswith("MEMPLUG_") and "__" in name:
            monkeypatch.delenv(name, raising=False)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "db" / "memory.sqlite"


_TEMPLATE: list[Path] = []


def new_db(path: Path | str) -> Path:
    """A migrated, empty database at ``path``, made as :meth:`Database.open` makes one
    (a 0600 file in a 0700 directory) by copying one migrated once per test process —
    sqlite-utils' ``fresh_db`` idea. Migrating itself is tested in tests/test_db.py."""
    if not _TEMPLATE:
        directory = Path(tempfile.mkdtemp(prefix="memplug-template-"))
        atexit.register(shutil.rmtree, directory, ignore_errors=True)
        Database.open(directory / "memory.sqlite").close()
        _TEMPLATE.append(directory / "memory.sqlite")
    target = Path(path)
    if target.exists():
        raise FileExistsError(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(target.parent, 0o700)
    shutil.copyfile(_TEMPLATE[0], target)
    os.chmod(target, 0o600)
    return target


@pytest.fixture
def fresh_db(tmp_path: Path) -> Callable[..., Path]:
    """``fresh_db(path=None)``: :func:`new_db` at ``path``, or at a new file under the
    test's temp dir."""
    made = iter(range(1_000_000))

    def make(path: Path | str | None = None) -> Path:
        return new_db(path if path is not None else tmp_path / f"fresh{next(made)}" / "m.sqlite")

    return make


@pytest.fixture
def memory(db_path: Path, fresh_db: Callable[..., Path]) -> Iterator[Memory]:
    with Memory.open(fresh_db(db_path)) as opened:
        yield opened


@pytest.fixture
def shop_memory(memory: Memory) -> Memory:
    """A database holding the bundled fixture session ``shop-1``."""
    with open(SESSIONS / "shop.jsonl", "rb") as stream:
        summary = memory.import_jsonl([("shop.jsonl", stream)])
    assert summary.new > 60 and not summary.rejected
    return memory


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def run_cli(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> CliResult:
    """Run the installed CLI in a fresh process, exactly as a user or a hook would.

    For what only a process boundary shows: the hook's import diet, signals, exit on a
    crash, the installed entry points. Everything else uses :func:`run_cli_here`."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    completed = subprocess.run(
        [sys.executable, "-m", "memplug.cli", *args],
        input=input,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=120,
    )
    return CliResult(completed.returncode, completed.stdout, completed.stderr)


def run_cli_here(
    *args: str, input: str | None = None, env: dict[str, str] | None = None
) -> CliResult:
    """The same entry point (``memplug.cli.main``) run in this process under click's
    CliRunner isolation: the same stdout, stderr and exit code, without paying an
    interpreter start and the imports (~0.3 s) for every call."""
    from memplug.cli import main

    with CliRunner().isolation(input=input, env=env) as (out, err, _):
        try:
            main(list(args))
            code = 0
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 0 if exit_.code is None else 1
        finally:
            # What was written straight to the streams (export) is still in their buffers.
            sys.stdout.flush()
            sys.stderr.flush()
        stdout, stderr = out.getvalue(), err.getvalue()
    return CliResult(code, stdout.decode(), stderr.decode())


@pytest.fixture
def cli() -> Callable[..., CliResult]:
    """The CLI, in process (see :func:`run_cli_here`)."""
    return run_cli_here


@pytest.fixture
def cli_process() -> Callable[..., CliResult]:
    """The CLI in a fresh process (see :func:`run_cli`)."""
    return run_cli


def lock_requests(conn: Any) -> list[tuple[str, int]]:
    """Each statement that asks ``conn``'s database for the write lock, as it runs, with
    the lock wait (``PRAGMA busy_timeout``, ms) in force for it: the events to count
    where timing the waits would depend on the machine's load."""
    asked: list[tuple[str, int]] = []

    def trace(cursor: Any, sql: str, bindings: object) -> bool:
        if sql.lstrip().upper().startswith("BEGIN"):
            wait = cursor.connection.execute("PRAGMA busy_timeout").fetchone()[0]
            asked.append((sql.strip(), int(wait)))
        return True

    conn.exec_trace = trace
    return asked
