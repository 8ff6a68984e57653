"""Test isolation: no test may read or write the user's real memplug data."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memplug.memory import Memory

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
SESSIONS = FIXTURES / "sessions"


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    home = tmp_path_factory.mktemp("memplug-home")
    monkeypatch.setenv("MEMPLUG_HOME", str(home / "data"))
    for name in ("MEMPLUG_DB", "MEMPLUG_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    for name in list(os.environ):
        if name.startswith("MEMPLUG_") and "__" in name:
            monkeypatch.delenv(name, raising=False)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "db" / "memory.sqlite"


@pytest.fixture
def memory(db_path: Path) -> Iterator[Memory]:
    with Memory.open(db_path) as opened:
        yield opened


@pytest.fixture
def shop_memory(memory: Memory) -> Memory:
    """A database holding the bundled fixture session ``shop-1``."""
    with open(SESSIONS / "shop.jsonl", "rb") as stream:
        summary = memory.import_jsonl([("shop.jsonl", stream)])
    assert summary.new > 60 and not summary.rejected
    return memory


class CliResult:
    def __init__(self, completed: subprocess.CompletedProcess[str]) -> None:
        self.returncode = completed.returncode
        self.stdout = completed.stdout
        self.stderr = completed.stderr

    def json(self) -> Any:
        return json.loads(self.stdout)


def run_cli(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> CliResult:
    """Run the installed CLI in a fresh process, exactly as a user or a hook would."""
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
    return CliResult(completed)


@pytest.fixture
def cli() -> Callable[..., CliResult]:
    return run_cli
