"""`memory doctor` through the CLI, on real files: what it finds, what --repair fixes,
and that a salvage never writes the original."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import pytest
from conftest import SESSIONS, CliResult

from memplug.base.installer import extra_command, installer
from memplug.memory import Memory


@pytest.fixture
def shop(cli: Callable[..., CliResult], tmp_path: Path) -> Path:
    db = tmp_path / "data" / "memory.sqlite"
    assert cli("--db", str(db), "import", str(SESSIONS / "shop.jsonl")).returncode == 0
    return db


def doctor(cli: Callable[..., CliResult], db: Path, *more: str) -> tuple[int, dict[str, Any]]:
    done = cli("--db", str(db), "doctor", "--json", *more)
    data = json.loads(done.stdout)
    return done.returncode, {c["name"]: c for c in data["checks"]} | {"_state": data["state"]}


def test_a_healthy_database_passes_every_check(cli, shop: Path, monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(shop.parent))  # no Claude Code settings there
    code, checks = doctor(cli, shop)
    assert code == 0 and checks["_state"] == "ok"
    for name in ("file", "modes", "integrity", "index events_fts", "derivation"):
        assert checks[name]["state"] == "ok", checks[name]
    assert checks["claude-code"]["state"] == "info"
    text = cli("--db", str(shop), "doctor").stdout
    assert text.splitlines()[0] == f"database {shop}" and text.rstrip().endswith("nothing wrong")


def test_modes_others_can_read_are_a_warning_with_the_command(cli, shop: Path) -> None:
    shop.chmod(0o644)
    code, checks = doctor(cli, shop)
    assert code == 0 and checks["modes"]["state"] == "warn"
    assert checks["modes"]["fix"].startswith(f"chmod 600 {shop}")


def test_a_broken_index_is_rebuilt_by_repair(cli, shop: Path) -> None:
    conn = apsw.Connection(str(shop))
    conn.execute("INSERT INTO events_fts (events_fts) VALUES ('delete-all')")
    conn.close()
    code, checks = doctor(cli, shop)
    assert code == 1 and checks["index events_fts"]["state"] == "fail"
    assert "missing documents" in checks["index events_fts"]["detail"]
    unindexed = hits(cli, shop, "card")
    code, checks = doctor(cli, shop, "--repair")
    assert code == 0 and checks["index events_fts"]["state"] == "fixed"
    assert doctor(cli, shop)[1]["index events_fts"]["state"] == "ok"
    assert hits(cli, shop, "card") > unindexed  # the events are found again


def hits(cli: Callable[..., CliResult], db: Path, query: str) -> int:
    return int(json.loads(cli("--db", str(db), "search", query, "--json").stdout)["total"])


def test_derivation_that_lags_is_caught_up_by_repair(cli, shop: Path) -> None:
    from memplug.base.models import parse_event

    with Memory.open(shop) as memory, memory.store.write_transaction():
        event = {"session_id": "late", "seq": 0, "type": "user/message", "role": "user"}
        memory.store_events([parse_event({**event, "text": "We use port 5433."})], origin="test")
    code, checks = doctor(cli, shop)
    assert code == 0 and checks["derivation"]["state"] == "warn"
    assert "1 session(s) not derived" in checks["derivation"]["detail"]
    assert doctor(cli, shop, "--repair")[1]["derivation"]["state"] == "fixed"
    assert doctor(cli, shop)[1]["derivation"]["state"] == "ok"


def _damage(db: Path) -> None:
    """Overwrite a page in the middle of the file (the header stays readable)."""
    size = db.stat().st_size
    with db.open("r+b") as stream:
        stream.seek((size // 4096 // 2) * 4096)
        stream.write(b"\xff" * 4096)


def test_a_corrupt_file_is_salvaged_into_a_new_one_never_written(cli, shop: Path) -> None:
    _damage(shop)
    before = shop.read_bytes()
    code, checks = doctor(cli, shop)
    assert code == 1 and checks["integrity"]["state"] == "fail"
    assert "--repair" in checks["integrity"]["fix"]
    code, checks = doctor(cli, shop, "--repair")
    salvaged = shop.with_name("memory.salvaged.sqlite")
    assert checks["salvage"]["state"] == "fixed", checks["salvage"]
    assert str(salvaged) in checks["salvage"]["detail"]
    assert checks["salvage"]["fix"] == f"mv {salvaged} {shop}"
    assert shop.read_bytes() == before
    assert doctor(cli, salvaged)[1]["integrity"]["state"] == "ok"
    exported = cli("--db", str(salvaged), "export").stdout.splitlines()
    assert (
        0
        < len(exported)
        <= sum(1 for line in SESSIONS.joinpath("shop.jsonl").open() if line.strip())
    )
    # A second salvage takes the next name.
    doctor(cli, shop, "--repair")
    assert shop.with_name("memory.salvaged-2.sqlite").exists()


def test_a_file_that_is_no_database_says_nothing_can_be_read(cli, tmp_path: Path) -> None:
    db = tmp_path / "memory.sqlite"
    db.write_bytes(b"not a database " * 400)
    code, checks = doctor(cli, db, "--repair")
    assert code == 1
    assert checks["open"]["state"] == "fail"
    assert checks["salvage"]["detail"].startswith("nothing can be read from the file")
    missing = cli("--db", str(tmp_path / "none.sqlite"), "doctor", "--json")
    assert missing.returncode == 1
    assert json.loads(missing.stdout)["checks"][0]["detail"].startswith("no database at")
    assert not (tmp_path / "none.sqlite").exists()


def test_an_installed_hook_whose_command_is_gone_is_a_failure(cli, shop: Path, monkeypatch) -> None:
    home = shop.parent / "home"
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    command = "/nowhere/venv/bin/memory hook claude-code"
    entry = {"hooks": [{"type": "command", "command": command}]}
    settings.write_text(json.dumps({"hooks": {"UserPromptSubmit": [entry], "Stop": [entry]}}))
    monkeypatch.setenv("HOME", str(home))
    code, checks = doctor(cli, shop)
    assert code == 1
    found = checks["claude-code (user)"]
    assert found["state"] == "fail" and "Stop, UserPromptSubmit" in found["detail"]
    assert "not found: /nowhere/venv/bin/memory" in found["detail"]
    assert found["fix"] == "memory install claude-code"
    script = shop.parent / "memory"
    script.write_text("#!/bin/sh\n")
    os.chmod(script, 0o755)
    settings.write_text(settings.read_text().replace("/nowhere/venv/bin/memory", str(script)))
    assert doctor(cli, shop)[1]["claude-code (user)"]["state"] == "ok"


@pytest.mark.parametrize(
    ("prefix", "tool", "command"),
    [
        ("/home/ana/.local/share/pipx/venvs/memplug-local", "pipx", "pipx install --force"),
        ("/home/ana/.local/share/uv/tools/memplug-local", "uv", "uv tool install --force"),
        ("/home/ana/src/memplug/.venv", "pip", "pip install"),
    ],
)
def test_the_hint_for_an_extra_fits_the_installer(prefix: str, tool: str, command: str) -> None:
    assert installer(prefix) == tool
    assert extra_command("mcp", prefix) == f"{command} 'memplug-local[mcp]'"
