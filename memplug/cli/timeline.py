"""`memory timeline`: what happened and when, paged like search."""

from __future__ import annotations

from typing import Any

import click

from memplug.base.refs import event_ref
from memplug.base.text import clip
from memplug.cli.output import CliContext, emit, json_option, table
from memplug.derive.timeline import DEFAULT_LIMIT, ENTRY_KINDS


def _render(data: dict[str, Any]) -> str:
    lines = [f"scope: {data['scope']}"]
    if data["entries"]:
        rows = [
            [
                entry["event_time"] or "",
                event_ref(entry["session_id"], entry["seq_from"])
                + (f"-{entry['seq_to']}" if entry["seq_to"] != entry["seq_from"] else ""),
                entry["kind"] + (f" ({entry['status']})" if entry.get("status") else ""),
                clip(entry["text"], 80),
            ]
            for entry in data["entries"]
        ]
        lines.append(table(rows, ["time", "events", "kind", "what"], fit=("what",)))
        lines.append(f"{len(data['entries'])} of {data['total']} entries")
    else:
        lines.append("no entries")
    coverage = data["coverage"]
    if not coverage["complete"]:
        lines.append("coverage: INCOMPLETE (" + ", ".join(coverage["reasons"]) + ")")
    if data.get("next"):
        lines.append(f"next page: memory timeline --next {data['next']}")
    return "\n".join(lines)


@click.command("timeline")
@click.option("--project", help="Only this project (default: the current context).")
@click.option("--session", help="The session whose project is the context.")
@click.option("--scope", help="global, project:<key>, session:<id> or agent:<id>.")
@click.option("--since", help="Only entries at or after this ISO-8601 date/time.")
@click.option("--until", help="Only entries before this ISO-8601 date/time.")
@click.option("--entity", help="Only entries naming this entity (id or name).")
@click.option(
    "--kind", "kinds", multiple=True, type=click.Choice(ENTRY_KINDS), help="Only this kind."
)
@click.option("--limit", type=int, default=DEFAULT_LIMIT, show_default=True, help="Page size.")
@click.option("--next", "next_token", help="Continue a previous timeline with its next token.")
@json_option
@click.pass_obj
def timeline_cmd(
    ctx: CliContext,
    project: str | None,
    session: str | None,
    scope: str | None,
    since: str | None,
    until: str | None,
    entity: str | None,
    kinds: tuple[str, ...],
    limit: int,
    next_token: str | None,
    as_json: bool,
) -> None:
    """What happened, in time order, pointing back to the events.

    Decisions, constraints, tool outcomes, files touched, compactions and sessions.

    Filters by the current context unless told otherwise (--project, --session,
    --scope) and says which scope it read; `--json` gives
    {scope, total, entries, next, coverage}.
    """
    with ctx.read() as memory:
        if next_token is not None:
            data = memory.timeline.page(next_token)
        else:
            data = memory.timeline.query(
                scope=scope,
                project=project,
                session=session,
                since=since,
                until=until,
                entity=entity,
                kinds=kinds,
                limit=limit,
            )
    emit(data, as_json, _render)
