"""docs/validation.md: its config, events and outputs are run as they are shown."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from pathlib import Path

import pytest

from memplug.base.config import load_config
from tests.conftest import CliResult
from tests.doc_examples import examples, run_transcript


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """The doc's memory.toml beside a database holding the doc's events."""
    from memplug.memory import Memory

    docs = examples("validation.md")
    (tmp_path / "memory.toml").write_text(docs["memory.toml"], encoding="utf-8")
    path = tmp_path / "memory.sqlite"
    with Memory.open(path) as memory, open(tmp_path / "e.jsonl", "w+b") as stream:
        stream.write(docs["events.jsonl"].encode())
        stream.seek(0)
        assert not memory.import_jsonl([("e.jsonl", stream)]).rejected
    return path


def test_the_documented_config_is_valid(tmp_path: Path) -> None:
    path = tmp_path / "memory.toml"
    path.write_text(examples("validation.md")["memory.toml"], encoding="utf-8")
    config = load_config(path).config.validation
    assert [c["type"] for c in config.checks][-1] == "spellcheck"
    assert config.preconditions[0].must_not_exist == ("migrations/*.sql",)


@pytest.mark.parametrize("name", ["validate", "assemble"])
def test_documented_runs_print_what_the_doc_shows(db: Path, name: str) -> None:
    if name == "assemble":
        run_transcript("$ memory validate --session s1\n", db)
    for expected, actual in run_transcript(examples("validation.md")[name], db):
        assert actual == expected


def test_documented_hook_denies_through_the_hook_command(
    db: Path, tmp_path: Path, cli: Callable[..., CliResult]
) -> None:
    block = examples("validation.md")["hook"]
    command, expected = block.rstrip("\n").split("\n")
    payload = json.loads(shlex.split(re.sub(r"\|\s*memory.*$", "", command[2:]))[1])
    shop = tmp_path / "shop"
    (shop / "migrations").mkdir(parents=True)
    (shop / "migrations" / "0001_init.sql").write_text("CREATE TABLE orders (id);\n")
    payload["cwd"] = str(shop)
    result = cli("--db", str(db), "hook", "claude-code", input=json.dumps(payload))
    assert result.returncode == 0 and result.stdout.strip() == expected
    # The same call on a path that does not exist yet is left to Claude Code.
    payload["tool_input"]["file_path"] = "migrations/0002_orders_total.sql"
    result = cli("--db", str(db), "hook", "claude-code", input=json.dumps(payload))
    assert result.returncode == 0 and result.stdout == ""
