"""`memory graph neighbors` and `memory graph export`: the entity graph."""

from __future__ import annotations

from typing import Any

import click

from memplug.base.refs import event_ref
from memplug.cli.output import CliContext, emit, json_option, table
from memplug.derive.graph import EXPORT_FORMATS, MAX_HOPS

_scope_options = [
    click.option("--project", help="Only this project (default: the current context)."),
    click.option("--session", help="The session whose project is the context."),
    click.option("--scope", help="global, project:<key>, session:<id> or agent:<id>."),
]


def _with_scope(command: Any) -> Any:
    for option in reversed(_scope_options):
        command = option(command)
    return command


def _render_neighbors(data: dict[str, Any]) -> str:
    lines = [f"{data['entity']}  (scope: {data['scope']})"]
    rows = []
    for near in data["neighbors"]:
        arrow = "->" if near["direction"] == "out" else "<-"
        stale = " (superseded)" if near.get("superseded_by") else ""
        refs = ", ".join(event_ref(s["session_id"], s["seq"]) for s in near["sources"])
        rows.append([str(near["hops"]), f"{arrow} {near['relation']}{stale}", near["entity"], refs])
    lines.append(table(rows, ["hops", "relation", "entity", "sources"]) if rows else "no neighbors")
    if not data["coverage"]["complete"]:
        lines.append("coverage: INCOMPLETE (" + ", ".join(data["coverage"]["reasons"]) + ")")
    return "\n".join(lines)


@click.group("graph")
def graph_group() -> None:
    """The entity graph: files, hosts, ports, packages, identifiers.

    And how they relate."""


@graph_group.command("neighbors")
@click.argument("entity")
@click.option("--hops", type=click.IntRange(1, MAX_HOPS), default=2, show_default=True)
@_with_scope
@json_option
@click.pass_obj
def neighbors_cmd(
    ctx: CliContext,
    entity: str,
    hops: int,
    project: str | None,
    session: str | None,
    scope: str | None,
    as_json: bool,
) -> None:
    """Entities within --hops edges of ENTITY.

    ENTITY is an id such as port:8080, or a name.

    `--json` gives {entity, scope, hops, neighbors: [{entity, relation, direction,
    via, hops, sources, superseded_by?}], coverage}.
    """
    with ctx.read() as memory:
        where = memory.scope(scope=scope, project=project, session=session)
        data = memory.graph.neighbors(entity, where, hops=hops)
    emit(data, as_json, _render_neighbors)


@graph_group.command("export")
@click.option(
    "--format", "fmt", type=click.Choice(EXPORT_FORMATS), default="dot", show_default=True
)
@_with_scope
@json_option
@click.pass_obj
def export_cmd(
    ctx: CliContext,
    fmt: str,
    project: str | None,
    session: str | None,
    scope: str | None,
    as_json: bool,
) -> None:
    """The graph as Graphviz dot or a Mermaid flowchart.

    Superseded edges are dashed.

    `--json` wraps it: {scope, format, text}.
    """
    with ctx.read() as memory:
        where = memory.scope(scope=scope, project=project, session=session)
        text = memory.graph.export(where, fmt)
    emit({"scope": where.name, "format": fmt, "text": text}, as_json, lambda d: d["text"])
