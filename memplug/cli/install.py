"""`memory install <host>` / `memory uninstall <host>`: memplug in a harness's settings.

One command per registered host with an installer (:mod:`memplug.hosts`); the merging
is in the host's module (for Claude Code, :mod:`memplug.hosts.claude_install`).
"""

from __future__ import annotations

import importlib.util
import json
from typing import Any

import click

from memplug.base.installer import extra_command
from memplug.cli.hosts import HostGroup
from memplug.cli.output import CliContext, emit, json_option
from memplug.hosts import HostSpec

_user = click.option(
    "--user", is_flag=True, help="The user's settings: every project (the default)."
)
_project = click.option(
    "--project", is_flag=True, help="This project's settings only (the shared file)."
)
_local = click.option(
    "--local",
    is_flag=True,
    help="This project's settings on this machine only (hosts that have such a file).",
)


def _scope(user: bool, project: bool, local: bool = False) -> str:
    if user + project + local > 1:
        raise click.UsageError("--user, --project and --local exclude each other; give one")
    return "project" if project else "local" if local else "user"


_dry_run = click.option("--dry-run", is_flag=True, help="Show what would change; write nothing.")
_mcp = click.option(
    "--mcp",
    is_flag=True,
    help="Also register `memory mcp`, memplug's MCP server, in the harness (hosts that take one).",
)
_mcp_out = click.option(
    "--mcp",
    is_flag=True,
    help="Also take `memory mcp`, memplug's MCP server, out of the harness's settings.",
)


def _render(data: dict[str, Any]) -> str:
    text = _render_one(data)
    for part in ("mcp", "agents_md"):
        if data.get(part):
            text += "\n" + _render_one(data[part])
    return text


def _render_one(data: dict[str, Any]) -> str:
    verb = "would change" if data["dry_run"] else "changed"
    if not data["changed"]:
        return f"{data['path']}: already as wanted, nothing {verb}"
    lines = [
        f"{data['path']}: {verb}"
        + (" (removed: nothing else was in it)" if data["deleted"] else "")
    ]
    lines += [f"  {event}: {change}" for event, change in data["changes"].items()]
    if data["command"]:
        lines.append(f"command: {data['command']}")
    if data["backup"]:
        lines.append(f"backup: {data['backup']}")
    if data["dry_run"] and data.get("settings") is not None:
        lines += ["", json.dumps(data["settings"], indent=2, ensure_ascii=False)]
    return "\n".join(lines)


def _install_command(spec: HostSpec) -> click.Command:
    install = spec.load("install")

    @click.command(spec.name, help=install.__doc__)
    @_user
    @_project
    @_local
    @_dry_run
    @click.option(
        "--command",
        "command",
        default=None,
        help="The memory program the hook runs (default: this install's script); "
        "`hook claude-code` is appended when it does not end in it.",
    )
    @_mcp
    @click.option(
        "--agents-md",
        is_flag=True,
        help="Also write a short section on searching memory into AGENTS.md (hosts that load it).",
    )
    @json_option
    @click.pass_obj
    def run(
        ctx: CliContext,
        user: bool,
        project: bool,
        local: bool,
        dry_run: bool,
        command: str | None,
        mcp: bool,
        agents_md: bool,
        as_json: bool,
    ) -> None:
        scope = _scope(user, project, local)
        if mcp and scope == "local":
            raise click.UsageError("--mcp takes --user or --project (the MCP server's files)")
        options = ctx.global_options()
        report = install(scope, command, dry_run=dry_run, options=options)
        for warning in report.warnings:
            click.echo(warning, err=True)
        data = _data(report)
        if mcp:
            from memplug.hosts.mcp import server_entry

            shared = scope == "project"
            server = server_entry(options, shared=shared)
            if shared and options:
                click.echo(
                    "warning: .mcp.json is shared, so it names no path of this machine: "
                    "the server uses `memory` from PATH and each person's default "
                    f"database, not {' '.join(options)}",
                    err=True,
                )
            data["mcp"] = _data(_mcp_part(spec)(scope, server, dry_run=dry_run))
            if importlib.util.find_spec("mcp") is None:
                # Registered anyway (the extra may come next), but said now, not when
                # the harness starts a server that exits for lack of it.
                click.echo(
                    "warning: the MCP server needs the mcp extra, which this install lacks: "
                    + extra_command("mcp"),
                    err=True,
                )
        if agents_md:
            if spec.instructions is None:
                raise click.UsageError(f"{spec.name} takes no --agents-md")
            write = spec.load("instructions")
            data["agents_md"] = _data(write(scope, dry_run=dry_run, options=options))
        emit(data, as_json, _render)

    return run


def _uninstall_command(spec: HostSpec) -> click.Command:
    uninstall = spec.load("uninstall")

    @click.command(spec.name, help=uninstall.__doc__)
    @_user
    @_project
    @_local
    @_dry_run
    @_mcp_out
    @json_option
    def run(
        user: bool, project: bool, local: bool, dry_run: bool, mcp: bool, as_json: bool
    ) -> None:
        scope = _scope(user, project, local)
        if mcp and scope == "local":
            raise click.UsageError("--mcp takes --user or --project (the MCP server's files)")
        data = _data(uninstall(scope, dry_run=dry_run))
        if mcp:
            data["mcp"] = _data(_mcp_part(spec)(scope, None, dry_run=dry_run))
        emit(data, as_json, _render)

    return run


def _mcp_part(spec: HostSpec) -> Any:
    if spec.mcp is None:
        raise click.UsageError(f"{spec.name} takes no MCP server (no --mcp)")
    return spec.load("mcp")


def _data(report: Any) -> dict[str, Any]:
    data: dict[str, Any] = report.as_dict()
    if report.dry_run:
        data["settings"] = report.settings
    return data


@click.group("install", cls=HostGroup, part="install", make=_install_command)
def install_group() -> None:
    """Install memplug into an agent harness."""


@click.group("uninstall", cls=HostGroup, part="uninstall", make=_uninstall_command)
def uninstall_group() -> None:
    """Remove memplug from an agent harness."""
