"""`memory core`: the resident project core, with why each line is there."""

from __future__ import annotations

import os
from typing import Any

import click

from memplug.base.errors import UsageError
from memplug.cli.output import CliContext, emit, json_option


def _render_core(data: dict[str, Any]) -> str:
    where = f"project {data['project']}" if data["project"] else "global (every session)"
    head = (
        f"core of {where}: {len(data['lines'])} lines, {data['tokens']} of {data['budget']} tokens"
    )
    if not data["lines"]:
        return (
            head
            + "\n(nothing standing: no active constraint, decision, open question or task state)"
        )
    lines = [head, ""]
    lines += [
        f"{line['ref']}  {line['kind']}  {line['text']}  ({line['why']})" for line in data["lines"]
    ]
    if data["omitted"]:
        lines.append("")
        lines += [f"- {o['ref']}  {o['kind']}  {o['reason']}" for o in data["omitted"]]
    return "\n".join(lines)


@click.command("core")
@click.option(
    "--project",
    default=None,
    help="A project (its cwd); default: the current one, else the global core.",
)
@click.option("--global", "everywhere", is_flag=True, help="The global core (every session).")
@json_option
@click.pass_obj
def core_cmd(ctx: CliContext, project: str | None, everywhere: bool, as_json: bool) -> None:
    """The resident project core, and why each line is there.

    Of the working directory's project unless told otherwise (--project, --global);
    `--json` gives {project, scope, lines, tokens, budget, omitted, version}."""
    if everywhere and project is not None:
        raise UsageError("give --project or --global, not both")
    with ctx.read() as memory:
        cwd = None if everywhere else os.getcwd()
        emit(memory.core(project, cwd=cwd), as_json, _render_core)
