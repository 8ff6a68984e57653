"""`memory purge`: the one command that deletes captured data."""

from __future__ import annotations

import sys
from typing import Any

import click

from memplug.cli.output import CliContext, emit, fail, json_option, terminal_progress


def _describe(plan: dict[str, Any]) -> str:
    sessions = plan["sessions"]
    partial = plan["partial_sessions"]
    parts = [f"{plan['events']:,} events"]
    if sessions:
        shown = ", ".join(sessions[:5]) + (
            f" and {len(sessions) - 5} more" if len(sessions) > 5 else ""
        )
        parts.append(f"{len(sessions)} whole session{'s' if len(sessions) != 1 else ''} ({shown})")
    if partial:
        parts.append(f"part of {len(partial)} more session{'s' if len(partial) != 1 else ''}")
    return ", ".join(parts)


def _render(data: dict[str, Any]) -> str:
    deleted = ", ".join(f"{table} {n:,}" for table, n in data["deleted"].items()) or "nothing"
    lines = [f"purged: {deleted}"]
    if data["missing_sessions"]:
        lines.append(f"not in the database: {', '.join(data['missing_sessions'])}")
    if data["rederived_sessions"]:
        lines.append(f"derived again: {', '.join(data['rederived_sessions'])}")
    if data["undated_kept"]:
        lines.append(f"kept {data['undated_kept']:,} events that carry no time")
    indexes = ", ".join(f"{name} {state}" for name, state in data["indexes"].items())
    lines.append(f"indexes: {indexes} (merged)")
    if data["vacuumed"]:
        lines.append("file vacuumed")
    checkpoint = data["checkpoint"]
    lines.append("write-ahead log: " + ("truncated" if checkpoint["complete"] else "NOT truncated"))
    lines += [f"warning: {w}" for w in data["warnings"]]
    return "\n".join(lines)


@click.command("purge")
@click.option("--session", "sessions", multiple=True, help="Purge this session (repeatable).")
@click.option("--before", metavar="DATE", help="Purge events whose own time is before DATE.")
@click.option("--all", "everything", is_flag=True, help="Purge every captured event.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@click.option("--vacuum", is_flag=True, help="Also rewrite the file (clears all free space).")
@json_option
@click.pass_obj
def purge_cmd(
    ctx: CliContext,
    sessions: tuple[str, ...],
    before: str | None,
    everything: bool,
    yes: bool,
    vacuum: bool,
    as_json: bool,
) -> None:
    """Delete events and everything derived from them, for good.

    Rows leave every table, the full-text indexes are merged so no segment keeps the
    text, freed pages are zeroed and the write-ahead log is truncated. Asks first
    unless --yes; without a terminal, --yes is required.
    """
    from memplug.reports.purge import plan_purge, purge

    if sum((bool(sessions), before is not None, everything)) != 1:
        raise click.UsageError("give exactly one of --session, --before or --all")
    # Deleting comes first: an upgrade's re-derivation waits for the next command.
    with ctx.open(create=False, upgrade=False) as memory:
        plan = plan_purge(memory, sessions=sessions, before=before, everything=everything)
        # Nothing to delete needs no confirmation: the run only merges the indexes and
        # truncates the WAL, which also finishes a purge that was interrupted.
        if not yes and not plan.empty:
            if not sys.stdin.isatty():
                fail("purge deletes data for good: pass --yes to confirm when not at a terminal", 2)
            question = f"Delete {_describe(plan.as_dict())} for good?"
            if not click.confirm(question, default=False, err=True):
                fail("purge cancelled; nothing was deleted", 1)
        report = purge(
            memory,
            sessions=sessions,
            before=before,
            everything=everything,
            vacuum=vacuum,
            progress=terminal_progress("purge step", quiet=as_json),
        )
    emit(report.as_dict(), as_json, _render)
