"""`memory install <host>` / `memory uninstall <host>`: memplug in a harness's settings.

One command per registered host with an installer (:mod:`memplug.hosts`); the merging
is in the host's module (for Claude Code, :mod:`memplug.hosts.claude_install`).
"""

from __future__ import annotations

from typing import Any

import click

from memplug.cli.hosts import HostGroup
from memplug.cli.output import emit, json_option
from memplug.hosts import HostSpec

_scope = click.option(
    "--user",
    "scope",
    flag_value="user",
    default=True,
    help="The user's settings: every project (the default).",
)
_project = click.option(
    "--project",
    "scope",
    flag_value="project",
    help="This project's settings only.",
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


def _install_command(spec: HostSpec) -> click.Command:
    install = spec.load("install")

    @click.command(spec.name, help=install.__doc__)
    @_scope
    @_project
    @_dry_run
    @click.option(
        "--command", "command", default=None, help="Hook command (default: this install)."
    )
    @json_option
    def run(scope: str, dry_run: bool, command: str | None, as_json: bool) -> None:
        _emit_report(install(scope, command, dry_run=dry_run), dry_run, as_json)

    return run


def _uninstall_command(spec: HostSpec) -> click.Command:
    uninstall = spec.load("uninstall")

    @click.command(spec.name, help=uninstall.__doc__)
    @_scope
    @_project
    @_dry_run
    @json_option
    def run(scope: str, dry_run: bool, as_json: bool) -> None:
        _emit_report(uninstall(scope, dry_run=dry_run), dry_run, as_json)

    return run


def _emit_report(report: Any, dry_run: bool, as_json: bool) -> None:
    data = report.as_dict()
    if dry_run:
        data["settings"] = report.settings
    emit(data, as_json, _render)


@click.group("install", cls=HostGroup, part="install", make=_install_command)
def install_group() -> None:
    """Install memplug into an agent harness."""


@click.group("uninstall", cls=HostGroup, part="uninstall", make=_uninstall_command)
def uninstall_group() -> None:
    """Remove memplug from an agent harness."""
