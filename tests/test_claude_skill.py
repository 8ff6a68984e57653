"""The skill and the permission rules `memory install claude-code` writes beside the hooks,
and `uninstall` takes out: on real settings files under a temporary home."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memplug.hosts import claude_skill
from tests.conftest import CliResult

THEIRS = ["Bash(git status)", "Bash(make test:*)"]


def run(home: Path, cwd: Path, *args: str) -> CliResult:
    done = subprocess.run(
        [sys.executable, "-m", "memplug.cli", *args],
        capture_output=True, text=True, cwd=cwd, env={**os.environ, "HOME": str(home)},
        timeout=60,
    )  # fmt: skip
    return CliResult(done.returncode, done.stdout, done.stderr)


def settings(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    (folder / ".claude").mkdir(parents=True)
    (folder / ".claude" / "settings.json").write_text(
        json.dumps({"permissions": {"allow": THEIRS, "deny": ["Bash(rm:*)"]}})
    )
    return folder


def test_install_writes_the_skill_and_lets_the_agent_read_memory_unasked(
    home: Path, tmp_path: Path
) -> None:
    done = run(home, tmp_path, "install", "claude-code", "--json")
    assert done.returncode == 0, done.stderr
    changes = done.json()["changes"]
    assert (changes["permissions"], changes["skill"]) == ("added", "written")
    skill = (home / ".claude" / "skills" / "memplug" / "SKILL.md").read_text(encoding="utf-8")
    assert skill.startswith("---\nname: memplug\ndescription: ")
    allow = settings(home / ".claude" / "settings.json")["permissions"]["allow"]
    search = next(rule for rule in allow if rule.endswith(" search:*)"))
    command = search[len("Bash(") : -len(" search:*)")]
    # This install's script (with the --db in force) unless `memory` on PATH is it.
    assert command.split()[0] in ("memory", claude_skill.memory_script())
    for verb in ("search", "expand", "timeline", "core", "remember"):
        assert f"`{command} {verb}" in skill
    assert "insufficient evidence" in skill and "coverage.complete" in skill
    assert allow[:2] == THEIRS  # the person's own rules first, untouched
    assert f"Bash({command} search:*)" in allow and f"Bash({command} remember:*)" in allow
    assert "mcp__memplug__memory_search" in allow and "mcp__memplug__memory_remember" in allow
    # Write commands other than remember stay behind the host's prompt.
    assert not any(verb in rule for rule in allow for verb in ("purge", "retract", "import"))


def test_install_is_idempotent_and_uninstall_takes_out_only_what_it_added(
    home: Path, tmp_path: Path
) -> None:
    assert run(home, tmp_path, "install", "claude-code").returncode == 0
    again = run(home, tmp_path, "install", "claude-code", "--json").json()
    assert again["changed"] is False
    gone = run(home, tmp_path, "uninstall", "claude-code", "--json").json()
    assert (gone["changes"]["permissions"], gone["changes"]["skill"]) == ("removed", "removed")
    assert settings(home / ".claude" / "settings.json") == {
        "permissions": {"allow": THEIRS, "deny": ["Bash(rm:*)"]}
    }
    assert not (home / ".claude" / "skills").exists()


def test_a_project_install_names_memory_on_path_in_what_is_shared(
    home: Path, tmp_path: Path
) -> None:
    project = tmp_path / "repo"
    project.mkdir()
    done = run(home, project, "--db", str(tmp_path / "m.sqlite"), "install", "claude-code",
               "--project")  # fmt: skip
    assert done.returncode == 0, done.stderr
    skill = (project / ".claude" / "skills" / "memplug" / "SKILL.md").read_text(encoding="utf-8")
    assert '`memory search "WORDS"`' in skill and str(tmp_path) not in skill
    allow = settings(project / ".claude" / "settings.json")["permissions"]["allow"]
    assert "Bash(memory search:*)" in allow


def test_a_dry_run_writes_no_skill(home: Path, tmp_path: Path) -> None:
    done = run(home, tmp_path, "install", "claude-code", "--dry-run", "--json").json()
    assert done["changes"]["skill"] == "would write"
    assert not (home / ".claude" / "skills").exists()


def test_permissions_that_are_not_a_list_are_refused_untouched(home: Path, tmp_path: Path) -> None:
    path = home / ".claude" / "settings.json"
    path.write_text(json.dumps({"permissions": {"allow": "Bash(*)"}}))
    done = run(home, tmp_path, "install", "claude-code")
    assert done.returncode == 2
    assert done.stderr == (
        "Error: the settings file's permissions.allow is not a list; not touching it\n"
    )
    assert settings(path) == {"permissions": {"allow": "Bash(*)"}}
