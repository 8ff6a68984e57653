"""`memory sync` before any server is involved: bad URLs, no init, no driver. These
need no PostgreSQL server."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from conftest import CliResult

URL = "host=127.0.0.1 port=5999 user=ana dbname=team"


def test_init_refuses_a_password_in_the_url(cli: Callable[..., CliResult], db_path: Path) -> None:
    for url in (URL + " password=hunter2", "postgresql://ana:hunter2@127.0.0.1/team"):
        result = cli("--db", str(db_path), "sync", "init", url)
        assert result.returncode == 2, result
        assert result.stderr.startswith("Error: the URL holds a password"), result.stderr
        assert "hunter2" not in result.stderr
    assert not db_path.exists() or b"hunter2" not in db_path.read_bytes()


def test_a_url_that_is_not_one_is_a_usage_error(
    cli: Callable[..., CliResult], db_path: Path
) -> None:
    result = cli("--db", str(db_path), "sync", "init", "host=127.0.0.1 nonsense")
    assert result.returncode == 2
    assert result.stderr.startswith("Error: not a PostgreSQL connection string:")


def test_sync_and_share_before_init_are_usage_errors(
    cli: Callable[..., CliResult], db_path: Path
) -> None:
    # No database yet: only `sync init` makes one (a mistyped --db stays a mistake).
    result = cli("--db", str(db_path), "sync")
    assert result.returncode == 2
    assert result.stderr == f"Error: no memplug database at {db_path}\n"
    assert not db_path.exists()
    assert cli("--db", str(db_path), "import", "/dev/null").returncode == 0
    result = cli("--db", str(db_path), "sync")
    assert result.returncode == 2
    assert result.stderr == "Error: no sync server: run `memory sync init URL` first\n"
    result = cli("--db", str(db_path), "share", "--project", "shop")
    assert result.returncode == 2 and result.stderr.startswith("Error: no sync server")


def test_without_the_driver_the_error_names_the_extra(db_path: Path) -> None:
    # psycopg made unimportable, as on an install without memplug[sync].
    code = (
        "import sys; sys.modules['psycopg'] = None; from memplug.cli import main; "
        f"main(['--db', {str(db_path)!r}, 'sync', 'init', {URL!r}])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr == (
        "Error: sync needs the PostgreSQL driver: pip install 'memplug-local[sync]'\n"
    )
