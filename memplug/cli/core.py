"""`memory core`: the resident project core, with why each line is there."""

from __future__ import annotations

from typing import Any

import click

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
@click.option("--project", default=None, help="A project (its cwd); default: the global core.")
@json_option
@click.pass_obj
def core_cmd(ctx: CliContext, project: str | None, as_json: bool) -> None:
    """The resident project core, and why each line is there."""
    with ctx.read() as memory:
        emit(memory.core(project), as_json, _render_core)
