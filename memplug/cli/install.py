"""`memory install claude-code` / `memory uninstall claude-code`: hooks in settings files.

The merging is in :mod:`memplug.hosts.claude_install`; this is its place in the CLI.
"""

from __future__ import annotations

from typing import Any

import click

from memplug.cli.output import emit, json_option

_scope = click.option(
    "--user",
    "scope",
    flag_value="user",
    default=True,
    help="~/.claude/settings.json: every project (the default).",
)
_project = click.option(
    "--project",
    "scope",
    flag_value="project",
    help="./.claude/settings.json: this project only.",
)
_dry_run = click.option("--dry-run", is_flag=True, help="Show what would change; write nothing.")


def _render(data: dict[str, Any]) -> str:
    verb = "would change" if data["dry_run"] else "changed"
    if not data["changed"]:
        return f"{data['path']}: already as wanted, nothing {verb}"
    lines = [f"{data['path']}: {verb}"]
    lines += [f"  {event}: {change}" for event, change in data["changes"].items()]
    if data["backup"]:
        lines.append(f"backup: {data['backup']}")
    if data["dry_run"] and data.get("settings") is not None:
        import json

        lines += ["", json.dumps(data["settings"], indent=2, ensure_ascii=False)]
    return "\n".join(lines)


@click.group("install")
def install_group() -> None:
    """Install memplug into an agent harness."""


@install_group.command("claude-code")
@_scope
@_project
@_dry_run
@click.option("--command", "command", default=None, help="Hook command (default: this install).")
@json_option
def install_claude_code(scope: str, dry_run: bool, command: str | None, as_json: bool) -> None:
    """Merge memplug's hooks into a Claude Code settings file (backup first; idempotent;
    other hooks untouched)."""
    from memplug.hosts.claude_install import install, settings_path

    report = install(settings_path(scope), command, dry_run=dry_run)
    data = report.as_dict()
    if dry_run:
        data["settings"] = report.settings
    emit(data, as_json, _render)


@click.group("uninstall")
def uninstall_group() -> None:
    """Remove memplug from an agent harness."""


@uninstall_group.command("claude-code")
@_scope
@_project
@_dry_run
@json_option
def uninstall_claude_code(scope: str, dry_run: bool, as_json: bool) -> None:
    """Remove memplug's hooks from a Claude Code settings file; other hooks stay."""
    from memplug.hosts.claude_install import settings_path, uninstall

    report = uninstall(settings_path(scope), dry_run=dry_run)
    data = report.as_dict()
    if dry_run:
        data["settings"] = report.settings
    emit(data, as_json, _render)
