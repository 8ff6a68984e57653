"""Install memplug's hooks into a Claude Code settings file, and take them out again.

Merging is conservative: the file is read as JSON (a file that is not JSON is left
alone, with an error), the file as it was is kept as one backup before any change,
only hook entries whose command runs ``hook claude-code`` are added, updated or removed,
and the new file replaces the old one atomically. Installing twice changes nothing the
second time; a change that leaves an empty object removes the file.
"""

from __future__ import annotations

import copy
import json
import os
import shlex
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from msgspec import Struct, field

from memplug.base.errors import UsageError
from memplug.base.paths import default_db_path, memory_script
from memplug.hosts.claude_code import HOST
from memplug.hosts.claude_skill import (
    agent_command,
    merge_permissions,
    permission_rules,
    render_skill,
    skill_path,
    write_skill,
)

# Every hook memplug handles, with the matcher each needs (tool hooks match all tools).
HOOKS: tuple[tuple[str, str | None], ...] = (
    ("SessionStart", None),
    ("UserPromptSubmit", None),
    ("PreToolUse", "*"),
    ("PostToolUse", "*"),
    ("PostToolUseFailure", "*"),
    ("PreCompact", None),
    ("Stop", None),
    ("SubagentStop", None),
    ("SessionEnd", None),
)
MARKER = f"hook {HOST}"
PRE_TOOL = "PreToolUse"
# What an install without a precondition puts in: every hook but PreToolUse.
DEFAULT_HOOKS: tuple[tuple[str, str | None], ...] = tuple(e for e in HOOKS if e[0] != PRE_TOOL)
TIMEOUT_SECONDS = 10
# The name memplug's MCP server is registered under (`mcpServers.<name>`).
MCP_SERVER = "memplug"
PLUGIN_DIR = Path(__file__).resolve().parent / "claude_plugin"


class InstallReport(Struct):
    path: str
    command: str
    changes: dict[str, str] = field(default_factory=dict)
    backup: str | None = None
    written: bool = False
    deleted: bool = False
    dry_run: bool = False
    settings: dict[str, Any] = field(default_factory=dict)
    # What the person should know before relying on the install (one line each).
    warnings: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return any(change != "unchanged" for change in self.changes.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "command": self.command,
            "changes": self.changes,
            "changed": self.changed,
            "backup": self.backup,
            "written": self.written,
            "deleted": self.deleted,
            "dry_run": self.dry_run,
            "warnings": self.warnings,
        }


def settings_path(scope: str, project_dir: Path | None = None, home: Path | None = None) -> Path:
    """``user`` → ``~/.claude/settings.json``; ``project`` → ``<project>/.claude/settings.json``
    (committed, shared); ``local`` → ``<project>/.claude/settings.local.json`` (this
    machine's, which Claude Code keeps out of git)."""
    if scope == "user":
        return (home or Path.home()) / ".claude" / "settings.json"
    if scope == "project":
        return (project_dir or Path.cwd()) / ".claude" / "settings.json"
    if scope == "local":
        return (project_dir or Path.cwd()) / ".claude" / "settings.local.json"
    raise UsageError(f"unknown scope {scope!r} (expected user, project or local)")


def default_command(options: Sequence[str] = (), *, shared: bool = False) -> str:
    """The command the hooks run, with ``options`` (the ``--db`` and ``--config`` in
    force at install time) before the hook's name; in a ``shared`` file (committed,
    used on other machines) ``memory`` from PATH and each person's own database."""
    if shared:
        return shlex.join(["memory", *MARKER.split()])
    return shlex.join([memory_script(), *options, *MARKER.split()])


def path_warning(shared: bool) -> str | None:
    """What a shared install must say when ``memory`` is not on this machine's PATH."""
    if not shared or shutil.which("memory") is not None:
        return None
    return (
        "warning: `memory` is not on PATH, and the hooks in a shared file run it from "
        "there: `pipx ensurepath` (pipx) or add this install's bin folder to PATH, "
        "or install with --local for this machine only"
    )


def mcp_config_path(scope: str, project_dir: Path | None = None, home: Path | None = None) -> Path:
    """Where Claude Code reads MCP servers: ``~/.claude.json`` for every project (user),
    ``<project>/.mcp.json`` for one (project, meant to be shared)."""
    if scope == "user":
        return (home or Path.home()) / ".claude.json"
    if scope == "project":
        return (project_dir or Path.cwd()) / ".mcp.json"
    raise UsageError(f"unknown scope {scope!r} (expected user or project)")


def merge_mcp(
    settings: dict[str, Any], server: dict[str, Any] | None
) -> tuple[dict[str, Any], dict[str, str]]:
    """``settings`` with memplug's MCP server set to ``server`` (None: taken out), and
    what changed; other servers and keys are left as they are."""
    merged = copy.deepcopy(settings)
    servers = merged.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise UsageError("the file's 'mcpServers' is not a JSON object; not touching it")
    key = f"mcpServers.{MCP_SERVER}"
    if server is None:
        if MCP_SERVER not in servers:
            return merged, {}
        del servers[MCP_SERVER]
        if not servers:
            merged.pop("mcpServers", None)
        return merged, {key: "removed"}
    current = servers.get(MCP_SERVER)
    merged["mcpServers"] = {**servers, MCP_SERVER: server}
    if current == server:
        return merged, {key: "unchanged"}
    return merged, {key: "added" if current is None else "updated"}


def hook_settings(
    command: str, events: tuple[tuple[str, str | None], ...] = HOOKS
) -> dict[str, list[dict[str, Any]]]:
    """The ``hooks`` mapping that runs ``command`` on every event memplug handles."""
    hooks: dict[str, list[dict[str, Any]]] = {}
    for event, matcher in events:
        group: dict[str, Any] = {}
        if matcher is not None:
            group["matcher"] = matcher
        group["hooks"] = [{"type": "command", "command": command, "timeout": TIMEOUT_SECONDS}]
        hooks[event] = [group]
    return hooks


def hook_command(command: str) -> str:
    """``--command`` as the hook runs it: ``hook claude-code`` appended when it is not the
    end already (a bare ``memory`` prints its usage, which Claude Code would add to every
    prompt); refused when it appears elsewhere or the command is empty."""
    try:
        words = shlex.split(command)
    except ValueError as error:
        raise UsageError(
            f"--command {command!r} does not parse as a shell command: {error}"
        ) from None
    if not words:
        raise UsageError("--command is empty; give the memory program to run")
    if words[-2:] == MARKER.split():
        return command
    if MARKER in " ".join(words):
        raise UsageError(f"--command must end in `{MARKER}`; got {command!r}")
    return f"{command.rstrip()} {MARKER}"


# The global options a hook command may carry before its subcommand.
_GLOBAL_OPTIONS = frozenset({"--db", "--config"})


def _is_ours(hook: Any, marker: str = MARKER) -> bool:
    if not isinstance(hook, dict):
        return False
    command = str(hook.get("command", ""))
    if marker in command:
        return True
    # A bare `memory [--db X] [--config Y]`, as an earlier `--command memory` wrote it:
    # still memplug's entry, so a reinstall replaces it and uninstall takes it out.
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    if not words or os.path.basename(words[0]) not in ("memory", "memplug"):
        return False
    options = words[1::2]
    return len(words) % 2 == 1 and all(option in _GLOBAL_OPTIONS for option in options)


def installed(settings: dict[str, Any]) -> dict[str, list[str]]:
    """``hook event → commands`` of memplug's entries in Claude Code ``settings``."""
    found: dict[str, list[str]] = {}
    hooks = settings.get("hooks")
    for event, entries in (hooks if isinstance(hooks, dict) else {}).items():
        for entry in entries if isinstance(entries, list) else ():
            inner = entry.get("hooks") if isinstance(entry, dict) else None
            for hook in inner if isinstance(inner, list) else ():
                if _is_ours(hook):
                    found.setdefault(str(event), []).append(str(hook["command"]))
    return found


def merge(
    settings: dict[str, Any],
    command: str,
    *,
    wanted_hooks: dict[str, list[dict[str, Any]]] | None = None,
    marker: str = MARKER,
) -> tuple[dict[str, Any], dict[str, str]]:
    """``settings`` with memplug's hooks in place, and what changed for each event
    (``wanted_hooks`` and ``marker``: another host's, whose settings share this shape)."""
    merged = copy.deepcopy(settings)
    hooks = merged.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise UsageError("the settings file's 'hooks' is not a JSON object; not touching it")
    changes: dict[str, str] = {}
    for event, group in (wanted_hooks or hook_settings(command)).items():
        wanted = group[0]
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise UsageError(f"the settings file's hooks.{event} is not a list; not touching it")
        found = [
            (g, h)
            for g in groups
            if isinstance(g, dict) and isinstance(g.get("hooks"), list)
            for h in g["hooks"]
            if _is_ours(h, marker)
        ]
        if not found:
            groups.append(copy.deepcopy(wanted))
            changes[event] = "added"
            continue
        status = "unchanged"
        emptied = []
        for index, (owner, hook) in enumerate(found):
            if index > 0:  # a duplicate from an earlier hand edit
                owner["hooks"].remove(hook)
                emptied += [owner] if not owner["hooks"] else []
                status = "updated"
                continue
            if hook != wanted["hooks"][0] or owner.get("matcher") != wanted.get("matcher"):
                hook.clear()
                hook.update(wanted["hooks"][0])
                if "matcher" in wanted:
                    owner["matcher"] = wanted["matcher"]
                status = "updated"
        hooks[event] = [g for g in groups if not any(g is e for e in emptied)]
        changes[event] = status
    return merged, changes


def unmerge(
    settings: dict[str, Any], *, marker: str = MARKER
) -> tuple[dict[str, Any], dict[str, str]]:
    """``settings`` without memplug's hooks; groups and events it emptied go too."""
    result = copy.deepcopy(settings)
    hooks = result.get("hooks")
    changes: dict[str, str] = {}
    if not isinstance(hooks, dict):
        return result, changes
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        removed = 0
        kept_groups = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                before = len(group["hooks"])
                group["hooks"] = [h for h in group["hooks"] if not _is_ours(h, marker)]
                removed += before - len(group["hooks"])
                if before and not group["hooks"]:
                    continue
            kept_groups.append(group)
        if removed:
            changes[event] = "removed"
            if kept_groups:
                hooks[event] = kept_groups
            else:
                del hooks[event]
    if not hooks and changes:
        del result["hooks"]
    return result, changes


def read_settings(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (UnicodeDecodeError, ValueError) as error:
        raise UsageError(
            f"{path} is not valid JSON ({error}); fix it first, nothing changed"
        ) from None
    if not isinstance(data, dict):
        raise UsageError(f"{path} does not hold a JSON object; nothing changed")
    return data


def holds_others(path: Path) -> bool:
    """Whether ``path`` holds anything memplug did not write (what a backup is for):
    a file memplug created and alone changed needs none."""
    if not path.exists():
        return False
    try:
        rest, _ = unmerge(read_settings(path))
        rest, _ = merge_permissions(rest, None)
        rest, _ = merge_mcp(rest, None)
    except UsageError:
        return True  # not JSON memplug can read: keep what is there
    return bool(rest)


def write_settings(
    path: Path, settings: dict[str, Any] | None, *, backup: bool = True
) -> str | None:
    """Back up the current file (when there is one and ``backup``), then replace it
    atomically, or with ``settings`` None remove it."""
    saved = None
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = 0o600
    if path.exists():
        mode = path.stat().st_mode & 0o777
    if path.exists() and backup:
        backup_path = backup_name(path)
        backup_path.write_bytes(path.read_bytes())
        os.chmod(backup_path, mode)
        saved = str(backup_path)
    if settings is None:
        path.unlink(missing_ok=True)
        return saved
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as stream:
            json.dump(settings, stream, indent=2, ensure_ascii=False)
            stream.write("\n")
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return saved


def has_preconditions(options: Sequence[str]) -> bool:
    """Whether the config the hooks will run with (``--db``/``--config`` in ``options``,
    else the defaults) configures a precondition (``validation.preconditions``)."""
    from memplug.base.config import load_for_database

    given = dict(zip(options[::2], options[1::2], strict=False))
    database = default_db_path(given.get("--db"))
    loaded = load_for_database(database, given.get("--config"))
    return bool(loaded.config.validation.preconditions)


def drop_event(settings: dict[str, Any], event: str) -> tuple[dict[str, Any], bool]:
    """``settings`` without memplug's hooks on ``event`` alone; whether any was there."""
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict) or event not in hooks:
        return settings, False
    result, changes = unmerge({"hooks": {event: hooks[event]}})
    if event not in changes:
        return settings, False
    merged = copy.deepcopy(settings)
    kept = result.get("hooks", {}).get(event)
    if kept:
        merged["hooks"][event] = kept
    else:
        del merged["hooks"][event]
    return merged, True


def backup_name(path: Path) -> Path:
    """The one backup: the file as it was before memplug last changed it."""
    return path.with_name(path.name + ".memplug-backup")


def install(
    path: Path,
    command: str | None = None,
    *,
    dry_run: bool = False,
    options: Sequence[str] = (),
    shared: bool = False,
) -> InstallReport:
    """The hooks, the permission rules for memory's read commands and the skill
    (:mod:`memplug.hosts.claude_skill`) in ``path``; ``shared``: a file others use too,
    so the agent's commands name ``memory`` on PATH."""
    command = default_command(options, shared=shared) if command is None else hook_command(command)
    # PreToolUse runs only to answer a precondition: with none configured, every tool
    # call would pay a hook for nothing (an older install's entry is taken out).
    events = HOOKS if has_preconditions(options) else DEFAULT_HOOKS
    merged, changes = merge(
        read_settings(path), command, wanted_hooks=hook_settings(command, events)
    )
    if len(events) < len(HOOKS):
        merged, dropped = drop_event(merged, PRE_TOOL)
        if dropped:
            changes[PRE_TOOL] = "removed"
    agent = agent_command(options, shared=shared)
    merged, changes["permissions"] = merge_permissions(merged, permission_rules(agent))
    report = write_report(path, command, merged, changes, dry_run)
    report.changes["skill"] = write_skill(skill_path(path), render_skill(agent), dry_run=dry_run)
    if shared and options and command == default_command(options, shared=True):
        report.warnings.append(
            f"warning: {path.name} is shared, so its hooks name no path of this machine: "
            f"they use each person's default database, not {' '.join(options)}"
        )
    report.warnings += [w for w in [path_warning(shared)] if w]
    return report


def install_mcp(path: Path, server: dict[str, Any], *, dry_run: bool = False) -> InstallReport:
    """Register memplug's MCP server in ``path`` (backup first; idempotent)."""
    merged, changes = merge_mcp(read_settings(path), server)
    command = shlex.join([server["command"], *server["args"]])
    return write_report(path, command, merged, changes, dry_run)


def uninstall(path: Path, *, dry_run: bool = False) -> InstallReport:
    result, changes = unmerge(read_settings(path))
    result, permissions = merge_permissions(result, None)
    if permissions != "unchanged":
        changes["permissions"] = permissions
    report = write_report(path, "", result, changes, dry_run)
    skill = write_skill(skill_path(path), None, dry_run=dry_run)
    if skill != "unchanged":
        report.changes["skill"] = skill
    return report


def uninstall_mcp(path: Path, *, dry_run: bool = False) -> InstallReport:
    """Take memplug's MCP server out of ``path``; other servers stay."""
    result, changes = merge_mcp(read_settings(path), None)
    return write_report(path, "", result, changes, dry_run)


def write_report(
    path: Path, command: str, settings: dict[str, Any], changes: dict[str, str], dry_run: bool
) -> InstallReport:
    """The report of a change, written (backup first) unless nothing changed or dry."""
    report = InstallReport(str(path), command, changes, dry_run=dry_run, settings=settings)
    if report.changed and not dry_run:
        # Nothing left is the same to Claude Code as no file: do not leave a `{}` behind.
        report.backup = write_settings(path, settings or None, backup=holds_others(path))
        report.written = True
        report.deleted = not settings
    return report


def install_scope(
    scope: str,
    command: str | None = None,
    *,
    dry_run: bool = False,
    options: Sequence[str] = (),
) -> InstallReport:
    """Merge memplug's hooks into Claude Code's settings.

    Idempotent; other hooks untouched; a backup first of a file that holds more than
    memplug's. --user: ~/.claude/settings.json; --project: ./.claude/settings.json,
    committed and shared, so its hooks run `memory` from PATH with each person's own
    database; --local: ./.claude/settings.local.json, this machine's. Outside --project
    the --db and --config in force (or MEMPLUG_DB, MEMPLUG_HOME, MEMPLUG_CONFIG) are
    written into the hook command. Also the skill
    (.claude/skills/memplug/SKILL.md: when and how the agent searches memory) and
    permission rules that let it run memory search, expand, timeline, core and
    remember, and the MCP tools, without asking each time."""
    path = settings_path(scope)
    return install(path, command, dry_run=dry_run, options=options, shared=scope == "project")


def uninstall_scope(scope: str, *, dry_run: bool = False) -> InstallReport:
    """Remove memplug's hooks from Claude Code's settings.

    Other hooks stay. The skill and memplug's permission rules go too."""
    return uninstall(settings_path(scope), dry_run=dry_run)


def mcp_scope(scope: str, server: dict[str, Any] | None, *, dry_run: bool = False) -> InstallReport:
    """Register memplug's MCP server with Claude Code (None: take it out). --user:
    ~/.claude.json; --project: ./.mcp.json."""
    path = mcp_config_path(scope)
    if server is None:
        return uninstall_mcp(path, dry_run=dry_run)
    return install_mcp(path, server, dry_run=dry_run)
