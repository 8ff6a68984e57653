"""What the `memory` command does for a person at a terminal, through the installed
script: tables that fit its width, values spelled as in the config file, shell
completion as documented, a progress bar on a long import."""

from __future__ import annotations

import json
import os
import pty
import subprocess
from pathlib import Path

import pytest
from conftest import SESSIONS

from tests.installed import MEMORY, memory

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "claude_code"
SID = "5e1f0c2a-7b3d-4e8f-9a10-c0ffee000001"


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    db = tmp_path / "memory.sqlite"
    assert memory("--db", str(db), "import", str(SESSIONS / "shop.jsonl")).returncode == 0
    return db


def test_tables_fit_the_width_and_keep_ids_whole(shop: Path) -> None:
    wide = memory("--db", str(shop), "items").stdout.splitlines()
    narrow = memory("--db", str(shop), "items", env={"COLUMNS": "80"}).stdout.splitlines()
    assert max(map(len, wide)) > 80  # piped: every character, for scripts
    assert max(map(len, narrow)) <= 80
    ids = [line.split()[0] for line in wide[3:]]
    assert [line.split()[0] for line in narrow[3:]] == ids and all("…" not in i for i in ids)
    assert any(line.rstrip().endswith("…") for line in narrow[3:])


def test_config_show_spells_values_as_the_config_file_does(shop: Path) -> None:
    shown = memory("--db", str(shop), "config", "show").stdout
    rows = {
        line.split()[0]: line.split(None, 1)[1].rsplit(None, 1)[0]
        for line in shown.splitlines()[2:]
    }
    assert rows["assembly.evidenceTypes"] == '["user/message", "assistant/message"]'
    assert rows["assembly.focusedQuotes"] == "true" and rows["assembly.locale"] == '"en"'
    assert "(" not in shown and "True" not in shown


def test_the_documented_completion_command_prints_a_script() -> None:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    assert 'eval "$(_MEMORY_COMPLETE=bash_source memory)"' in readme
    done = subprocess.run(
        [str(MEMORY)], env={**os.environ, "_MEMORY_COMPLETE": "bash_source"},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0 and "complete -o nosort -F" in done.stdout


def test_an_import_of_many_transcripts_shows_a_bar_on_a_terminal(tmp_path: Path) -> None:
    names = []
    for n in range(3):
        copy = tmp_path / f"t{n}.jsonl"
        copy.write_text((FIXTURES / f"{SID}.jsonl").read_text().replace(SID, f"{SID[:-1]}{n}"))
        names.append(str(copy))
    leader, follower = pty.openpty()
    done = subprocess.run(
        [str(MEMORY), "--db", str(tmp_path / "m.sqlite"), "import", *names],
        stderr=follower, stdout=subprocess.PIPE, text=True, timeout=120,
    )  # fmt: skip
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    assert done.returncode == 0 and "new" in done.stdout
    assert b"claude code transcripts" in seen and b"100%" in seen
    piped = memory("--db", str(tmp_path / "n.sqlite"), "import", *names)
    assert "claude code transcripts" not in piped.stderr
    assert (
        json.loads(memory("--db", str(tmp_path / "m.sqlite"), "status", "--json").stdout)["counts"][
            "events"
        ]
        > 0
    )
