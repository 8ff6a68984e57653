"""`memory install claude-code` / `memory uninstall claude-code` on real settings files."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import memplug
from memplug.hosts import claude_install as ci
from tests.conftest import CliResult

OTHER_HOOKS = {
    "PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh"}]},
    ],
    "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
}
SETTINGS = {"permissions": {"allow": ["Bash(git status)"]}, "hooks": OTHER_HOOKS, "model": "opus"}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def install(cli: Callable[..., CliResult], home: Path) -> Callable[..., CliResult]:
    def run(*args: str, cwd: Path | None = None) -> CliResult:
        return cli(*args, env={"HOME": str(home)}) if cwd is None else _in(cwd, home, *args)

    return run


def _in(cwd: Path, home: Path, *args: str) -> CliResult:
    import os
    import sys

    completed = subprocess.run(
        [sys.executable, "-m", "memplug.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "HOME": str(home)},
        timeout=60,
    )
    return CliResult(completed.returncode, completed.stdout, completed.stderr)


def user_settings(home: Path) -> Path:
    return home / ".claude" / "settings.json"


def ours(settings: dict[str, Any], event: str) -> list[dict[str, Any]]:
    return [
        h
        for group in settings["hooks"].get(event, [])
        for h in group["hooks"]
        if ci.MARKER in h["command"]
    ]


def test_install_into_a_new_user_settings_file(
    install: Callable[..., CliResult], home: Path
) -> None:
    result = install("install", "claude-code", "--json")
    assert result.returncode == 0, result.stderr
    data = result.json()
    assert data["changed"] and data["written"] and data["backup"] is None
    settings = json.loads(user_settings(home).read_text())
    assert sorted(settings["hooks"]) == sorted(event for event, _ in ci.DEFAULT_HOOKS)
    for event, matcher in ci.DEFAULT_HOOKS:
        (hook,) = ours(settings, event)
        assert hook["command"] == data["command"] and hook["command"].endswith("hook claude-code")
        assert settings["hooks"][event][0].get("matcher") == matcher
    assert user_settings(home).stat().st_mode & 0o777 == 0o600


def test_install_keeps_other_hooks_and_keys_and_backs_up_first(
    install: Callable[..., CliResult], home: Path
) -> None:
    path = user_settings(home)
    path.parent.mkdir(parents=True)
    original = json.dumps(SETTINGS, indent=4)
    path.write_text(original)
    data = install("install", "claude-code", "--json").json()
    assert Path(data["backup"]).read_text() == original
    settings = json.loads(path.read_text())
    # The person's own permission rules first, then memplug's (tests/test_claude_skill.py).
    assert settings["permissions"]["allow"][0] == "Bash(git status)"
    assert settings["model"] == "opus"
    assert settings["hooks"]["PreToolUse"][0] == OTHER_HOOKS["PreToolUse"][0]
    assert settings["hooks"]["Stop"][0] == OTHER_HOOKS["Stop"][0]
    assert len(ours(settings, "Stop")) == 1
    # No precondition is configured, so no PreToolUse hook of memplug's.
    assert len(ours(settings, "PreToolUse")) == 0


def test_installing_twice_changes_nothing(install: Callable[..., CliResult], home: Path) -> None:
    install("install", "claude-code")
    before = user_settings(home).read_bytes()
    data = install("install", "claude-code", "--json").json()
    assert not data["changed"] and not data["written"] and data["backup"] is None
    assert set(data["changes"].values()) == {"unchanged"}
    assert user_settings(home).read_bytes() == before
    assert not list(user_settings(home).parent.glob("*memplug-backup*"))


def test_an_old_command_is_updated_and_duplicates_collapse(home: Path) -> None:
    stale = {"type": "command", "command": "/old/venv/bin/memory hook claude-code"}
    settings = {"hooks": {"Stop": [{"hooks": [stale, dict(stale)]}, {"hooks": [dict(stale)]}]}}
    merged, changes = ci.merge(settings, "memory hook claude-code")
    assert changes["Stop"] == "updated"
    assert merged["hooks"]["Stop"] == [
        {"hooks": [{"type": "command", "command": "memory hook claude-code", "timeout": 10}]}
    ]
    assert settings["hooks"]["Stop"][1] == {"hooks": [stale]}  # the input is not touched


def test_dry_run_writes_nothing_and_shows_the_result(
    install: Callable[..., CliResult], home: Path
) -> None:
    data = install("install", "claude-code", "--dry-run", "--json").json()
    assert data["dry_run"] and data["changed"] and not data["written"]
    assert not user_settings(home).exists()
    assert len(ours(data["settings"], "UserPromptSubmit")) == 1


def test_uninstall_takes_out_only_memplug(install: Callable[..., CliResult], home: Path) -> None:
    path = user_settings(home)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(SETTINGS))
    install("install", "claude-code")
    data = install("uninstall", "claude-code", "--json").json()
    assert data["written"] and set(data["changes"].values()) == {"removed"}
    assert json.loads(path.read_text()) == SETTINGS
    again = install("uninstall", "claude-code", "--json").json()
    assert not again["changed"] and not again["written"]


def test_uninstall_of_a_memplug_only_file_removes_the_file_it_made(
    install: Callable[..., CliResult], home: Path
) -> None:
    install("install", "claude-code")
    done = install("uninstall", "claude-code")
    assert done.returncode == 0
    assert not user_settings(home).exists()
    assert "(removed: nothing else was in it)" in done.stdout.splitlines()[0]
    # A file memplug made and alone changed needs no backup, at install or uninstall.
    assert not list(user_settings(home).parent.glob("*memplug-backup*"))


def test_an_empty_file_of_the_users_comes_back_the_same_to_claude_code(
    install: Callable[..., CliResult], home: Path
) -> None:
    path = user_settings(home)
    path.parent.mkdir(parents=True)
    path.write_text("{}\n")
    install("install", "claude-code")
    assert install("uninstall", "claude-code", "--json").json()["backup"] is None
    assert not path.exists()  # no file and `{}` are the same settings to Claude Code
    assert not (home / ".claude" / "settings.json.memplug-backup").exists()


def test_repeated_installs_keep_one_backup(
    install: Callable[..., CliResult], home: Path, tmp_path: Path
) -> None:
    path = user_settings(home)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(SETTINGS))
    for n in range(3):
        # A different database each time changes the hook command, so each run writes.
        data = install("--db", str(tmp_path / f"m{n}.sqlite"), "install", "claude-code", "--json")
        assert data.json()["written"]
    backups = sorted(
        p.name for p in path.parent.iterdir() if p.name not in ("settings.json", "skills")
    )
    assert backups == ["settings.json.memplug-backup"]
    last = json.loads((path.parent / backups[0]).read_text())
    assert str(tmp_path / "m1.sqlite") in ours(last, "Stop")[0]["command"]


def test_a_settings_file_that_is_not_json_is_left_alone(
    install: Callable[..., CliResult], home: Path
) -> None:
    path = user_settings(home)
    path.parent.mkdir(parents=True)
    path.write_text('{"hooks": {,}')
    result = install("install", "claude-code")
    assert result.returncode == 2
    assert result.stderr.startswith("Error: ") and "not valid JSON" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert path.read_text() == '{"hooks": {,}'


def test_project_scope_writes_the_project_settings(
    install: Callable[..., CliResult], home: Path, tmp_path: Path
) -> None:
    project = tmp_path / "shop"
    project.mkdir()
    result = install("install", "claude-code", "--project", cwd=project)
    assert result.returncode == 0, result.stderr
    assert len(ours(json.loads((project / ".claude" / "settings.json").read_text()), "Stop")) == 1
    assert not user_settings(home).exists()


def _with_path(cwd: Path, home: Path, path: str, *args: str) -> CliResult:
    import os
    import sys

    completed = subprocess.run(
        [sys.executable, "-m", "memplug.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "HOME": str(home), "PATH": path},
        timeout=60,
    )
    return CliResult(completed.returncode, completed.stdout, completed.stderr)


def test_the_shared_project_file_runs_memory_from_path_and_says_when_it_is_not_there(
    home: Path, tmp_path: Path
) -> None:
    import sys

    project = tmp_path / "shop"
    project.mkdir()
    venv_bin = str(Path(sys.executable).parent)
    done = _with_path(project, home, "/usr/bin:/bin", "--db", str(tmp_path / "m.sqlite"),
                      "install", "claude-code", "--project")  # fmt: skip
    assert done.returncode == 0, done.stderr
    shared = json.loads((project / ".claude" / "settings.json").read_text())
    assert {h["command"] for h in ours(shared, "Stop")} == {"memory hook claude-code"}
    assert str(tmp_path) not in json.dumps(shared)  # no path of this machine
    assert "warning: `memory` is not on PATH" in done.stderr
    on_path = _with_path(project, home, f"{venv_bin}:/usr/bin:/bin", "install", "claude-code",
                         "--project")  # fmt: skip
    assert on_path.returncode == 0 and "not on PATH" not in on_path.stderr


def test_local_scope_writes_this_machines_project_file(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "shop"
    project.mkdir()
    db = tmp_path / "m.sqlite"
    done = _in(project, home, "--db", str(db), "install", "claude-code", "--local", "--json")
    assert done.returncode == 0, done.stderr
    local = json.loads((project / ".claude" / "settings.local.json").read_text())
    assert str(db) in ours(local, "Stop")[0]["command"]
    assert not (project / ".claude" / "settings.json").exists() and not user_settings(home).exists()
    gone = _in(project, home, "uninstall", "claude-code", "--local", "--json")
    assert gone.returncode == 0 and not (project / ".claude" / "settings.local.json").exists()
    refused = _in(project, home, "install", "claude-code", "--local", "--mcp")
    assert refused.returncode == 2 and "--mcp takes --user or --project" in refused.stderr


def _run_hook(command: str, home: Path, env: dict[str, str]) -> None:
    payload = {"session_id": "s", "hook_event_name": "UserPromptSubmit", "prompt": "hello"}
    completed = subprocess.run(
        command,
        shell=True,
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(home), **env},
        timeout=60,
    )
    assert completed.returncode == 0, completed.stderr


def test_the_installed_command_runs_as_a_hook(
    install: Callable[..., CliResult], home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMPLUG_HOME")  # the defaults: the hook command names no database
    install("install", "claude-code")
    (hook,) = ours(json.loads(user_settings(home).read_text()), "UserPromptSubmit")
    assert hook["command"].split()[1:] == ["hook", "claude-code"]
    db = tmp_path / "m.sqlite"
    _run_hook(hook["command"], home, {"MEMPLUG_DB": str(db)})
    assert db.exists()


@pytest.mark.parametrize("pointer", ["--db", "MEMPLUG_DB", "MEMPLUG_HOME"])
def test_the_hook_uses_the_database_in_force_at_install(
    install: Callable[..., CliResult], home: Path, tmp_path: Path, pointer: str
) -> None:
    db = tmp_path / "chosen" / "memory.sqlite"
    if pointer == "--db":
        done = install("--db", str(db), "install", "claude-code", "--dry-run")
    else:
        value = str(db if pointer == "MEMPLUG_DB" else db.parent)
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(pointer, value)
            done = install("install", "claude-code", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert f"--db {db} hook claude-code" in done.stdout  # --dry-run shows the command
    assert not user_settings(home).exists()
    install(*(["--db", str(db)] if pointer == "--db" else []), "install", "claude-code")
    if pointer != "--db":
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(pointer, value)
            install("install", "claude-code")
    (hook,) = ours(json.loads(user_settings(home).read_text()), "UserPromptSubmit")
    # Whatever the hook's own environment says, it fills the database chosen at install.
    _run_hook(hook["command"], home, {"MEMPLUG_DB": str(tmp_path / "other.sqlite")})
    assert db.exists() and not (tmp_path / "other.sqlite").exists()


def test_the_config_in_force_at_install_goes_into_the_hook(
    install: Callable[..., CliResult], home: Path, tmp_path: Path
) -> None:
    config = tmp_path / "conf" / "memplug.toml"
    config.parent.mkdir()
    config.write_text("[hook]\nmaxContextChars = 1000\n")
    data = install("--config", str(config), "install", "claude-code", "--json").json()
    assert data["command"].endswith(f"--config {config} hook claude-code")
    install("uninstall", "claude-code")
    assert not user_settings(home).exists()


def test_the_plugin_directory_matches_what_install_writes() -> None:
    manifest = json.loads((ci.PLUGIN_DIR / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "memplug" and manifest["version"] == memplug.__version__
    hooks = json.loads((ci.PLUGIN_DIR / "hooks" / "hooks.json").read_text())
    assert hooks["hooks"] == ci.hook_settings("memory hook claude-code")


def _memory(home: Path, *args: str, cwd: Path | None = None) -> CliResult:
    from tests.installed import memory

    return memory(*args, env={"HOME": str(home)}, cwd=cwd)


def test_a_command_without_the_hook_gets_it_appended(home: Path) -> None:
    done = _memory(home, "install", "claude-code", "--command", "memory", "--json")
    assert done.returncode == 0, done.stderr
    assert done.json()["command"] == "memory hook claude-code"
    for event, _ in ci.DEFAULT_HOOKS:
        (hook,) = ours(json.loads(user_settings(home).read_text()), event)
        assert hook["command"] == "memory hook claude-code"


@pytest.mark.parametrize("command", ["memory hook claude-code --verbose", "", "'unclosed"])
def test_a_command_that_cannot_run_the_hook_is_refused(home: Path, command: str) -> None:
    done = _memory(home, "install", "claude-code", "--command", command)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("Error: --command ") and len(done.stderr.splitlines()) == 1
    assert not user_settings(home).exists()


def test_reinstalling_with_another_command_keeps_one_entry_and_uninstall_takes_all(
    home: Path,
) -> None:
    # What `--command memory` wrote before it was fixed: a bare `memory`.
    path = user_settings(home)
    path.parent.mkdir(parents=True)
    bare = {"hooks": [{"type": "command", "command": "memory --db /x/m.sqlite", "timeout": 10}]}
    path.write_text(json.dumps({"hooks": {**OTHER_HOOKS, "Stop": [bare, *OTHER_HOOKS["Stop"]]}}))
    for command in ("/opt/a/memory", "/opt/b/memory hook claude-code"):
        assert _memory(home, "install", "claude-code", "--command", command).returncode == 0
        settings = json.loads(path.read_text())
        commands = [h["command"] for g in settings["hooks"]["Stop"] for h in g["hooks"]]
        assert commands == [
            f"{command.removesuffix(' hook claude-code')} hook claude-code",
            "notify-send done",
        ]
    done = _memory(home, "uninstall", "claude-code", "--json")
    assert done.json()["changed"]
    assert json.loads(path.read_text())["hooks"] == OTHER_HOOKS


def test_user_and_project_together_are_refused(home: Path, tmp_path: Path) -> None:
    for verb in ("install", "uninstall"):
        done = _memory(home, verb, "claude-code", "--user", "--project", cwd=tmp_path)
        assert done.returncode == 2
        assert done.stderr == (
            "Error: --user, --project and --local exclude each other; give one\n"
        )
    assert not user_settings(home).exists() and not (tmp_path / ".claude").exists()


def test_the_shared_mcp_json_names_no_path_of_this_machine(home: Path, tmp_path: Path) -> None:
    import sys

    from tests.installed import memory

    project = tmp_path / "shop"
    project.mkdir()
    done = memory(
        "--db",
        str(tmp_path / "mine.sqlite"),
        "install",
        "claude-code",
        "--project",
        "--mcp",
        env={"HOME": str(home)},
        cwd=project,
    )
    assert done.returncode == 0, done.stderr
    text = (project / ".mcp.json").read_text()
    assert json.loads(text)["mcpServers"]["memplug"] == {
        "type": "stdio",
        "command": "memory",
        "args": ["mcp"],
        "env": {},
    }
    assert sys.prefix not in text and str(tmp_path) not in text
    assert "warning: .mcp.json is shared, so it names no path" in done.stderr
    # The user's own ~/.claude.json still gets this installation's script and database.
    user = memory("--db", str(tmp_path / "mine.sqlite"), "install", "claude-code", "--mcp",
                  env={"HOME": str(home)})  # fmt: skip
    entry = json.loads((home / ".claude.json").read_text())["mcpServers"]["memplug"]
    assert user.returncode == 0 and entry["command"].startswith(sys.prefix)
    assert entry["args"] == ["--db", str(tmp_path / "mine.sqlite"), "mcp"]


def test_pre_tool_use_is_installed_only_with_a_precondition(
    install: Callable[..., CliResult], home: Path, tmp_path: Path
) -> None:
    config = tmp_path / "memory.toml"
    config.write_text('[[validation.preconditions]]\nname = "x"\ntools = ["Write"]\n'
                      'mustNotExist = ["migrations/*.sql"]\n')  # fmt: skip
    with_pre = install("--config", str(config), "install", "claude-code", "--json").json()
    assert with_pre["changes"]["PreToolUse"] == "added"
    assert len(ours(json.loads(user_settings(home).read_text()), "PreToolUse")) == 1
    # Reinstalled without it, an older install's PreToolUse entry is taken out.
    again = install("install", "claude-code", "--json").json()
    assert again["changes"]["PreToolUse"] == "removed"
    settings = json.loads(user_settings(home).read_text())
    assert "PreToolUse" not in settings["hooks"] and len(ours(settings, "PostToolUse")) == 1
