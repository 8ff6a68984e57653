"""`memory assemble` (what a pre-step would inject now, logged like one) and `memory explain`."""

from __future__ import annotations

from typing import Any

import click

from memplug.base.errors import UsageError
from memplug.cli.output import CliContext, emit, fail, json_option


def _render_assembly(data: dict[str, Any]) -> str:
    if data["injected"]:
        tail = (
            f"assembly {data['assembly_id']}: {data['used_tokens']} of {data['budget']} tokens "
            f"({data['token_source']}), {len(data['included'])} included, "
            f"{len(data['omitted'])} omitted; details: memory explain --assembly "
            f"{data['assembly_id']}"
        )
        return f"{data['text']}\n\n{tail}"
    why = "; ".join(data["errors"]) or data.get("why_not") or "nothing relevant"
    return (
        f"nothing to inject ({why}); assembly {data['assembly_id']}, "
        f"{len(data['omitted'])} omitted; details: memory explain --assembly "
        f"{data['assembly_id']}"
    )


@click.command("assemble")
@click.option("--session", "session_id", required=True, help="Session to assemble for.")
@click.option(
    "--query",
    default=None,
    help="Task text (default: the session's latest real user message).",
)
@click.option("--turn", type=int, default=None, help="Turn to record in the log.")
@json_option
@click.pass_obj
def assemble_cmd(
    ctx: CliContext, session_id: str, query: str | None, turn: int | None, as_json: bool
) -> None:
    """Build what a pre-step would inject now, and log it like one."""
    from memplug.recall.assemble import AssemblyRequest

    with ctx.open(create=False) as memory:
        memory.require_sessions([session_id])
        result = memory.assemble(
            AssemblyRequest(session_id=session_id, query=query, turn=turn, trigger="cli")
        )
        emit(result.as_dict(), as_json, _render_assembly)
        if result.errors:
            # The message was built but something around it failed (its log row):
            # the command did not do all it says.
            fail("; ".join(result.errors), 1)


@click.command("explain")
@click.option("--assembly", "assembly_id", type=int, default=None, help="A logged assembly id.")
@click.option("--session", "session_id", default=None, help="Newest assembly of this session.")
@click.option("--turn", type=int, default=None, help="With --session: newest of this turn.")
@json_option
@click.pass_obj
def explain_cmd(
    ctx: CliContext,
    assembly_id: int | None,
    session_id: str | None,
    turn: int | None,
    as_json: bool,
) -> None:
    """Why a logged assembly included and omitted what it did.

    The newest by default: budget, sections, every omission."""
    from memplug.reports.diagnostics import latest_validation
    from memplug.reports.explain import explain, find_assembly, render_explain

    if assembly_id is not None and (session_id is not None or turn is not None):
        raise UsageError("give either --assembly or --session [--turn], not both")
    if turn is not None and session_id is None:
        raise UsageError("--turn needs --session")
    with ctx.read() as memory:
        record = find_assembly(
            memory.store, assembly_id=assembly_id, session_id=session_id, turn=turn
        )
        validation = latest_validation(memory, record.session_id)
        emit(explain(record, validation), as_json, render_explain)
