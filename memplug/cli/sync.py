"""`memory sync`, `memory share`, `memory unshare`: team memory through PostgreSQL
(docs/sync.md)."""

from __future__ import annotations

import sys
from typing import Any

import click

from memplug.cli.output import CliContext, emit, json_option


def _render_sync(data: dict[str, Any]) -> str:
    line = (
        f"pushed {data['pushed']:,}, pulled {data['pulled']:,}, "
        f"conflicts {data['conflicts']:,}, purges applied {data['purges_applied']:,}"
    )
    if data["purges_sent"]:
        line += f", purges sent {data['purges_sent']:,}"
    return line


def _progress(what: str, done: int, total: int | None) -> None:
    """One self-erasing line on a terminal's stderr; nothing on a pipe or a log."""
    if not sys.stderr.isatty():
        return
    count = f"{done:,}" if total is None else f"{done:,}/{total:,}"
    sys.stderr.write(f"\r\x1b[K{what}: {count} events")
    sys.stderr.flush()


@click.group("sync", invoke_without_command=True)
@click.option("--push", "push_only", is_flag=True, help="Only push this machine's events.")
@click.option("--pull", "pull_only", is_flag=True, help="Only pull other machines' events.")
@json_option
@click.pass_context
def sync_group(click_ctx: click.Context, push_only: bool, pull_only: bool, as_json: bool) -> None:
    """Push shared projects' events, pull other machines'.

    This machine's new events of shared projects go to the server; every other
    machine's come back, and are captured and derived here like any import. A rerun
    does nothing. Prints `{pushed, pulled, conflicts, purges_applied, purges_sent}`;
    exits 1 with one line when the server cannot be reached or the connection breaks
    (run it again to finish)."""
    if click_ctx.invoked_subcommand is not None:
        return
    from memplug.sync import exchange

    ctx: CliContext = click_ctx.obj
    both = not (push_only or pull_only)
    # `sync init` makes the database on a new machine; a sync before it is a mistake.
    with ctx.open(create=False) as memory:
        report = exchange.run(
            memory, push=both or push_only, pull=both or pull_only, progress=_progress
        )
    if sys.stderr.isatty():
        sys.stderr.write("\r\x1b[K")
    emit(report.as_dict(), as_json, _render_sync)


@sync_group.command("init")
@click.argument("url")
@click.option("--origin", help="This machine's id on the server (default: host name + random).")
@json_option
@click.pass_obj
def sync_init(ctx: CliContext, url: str, origin: str | None, as_json: bool) -> None:
    """Connect this database to a PostgreSQL server.

    URL is a libpq connection string. It must hold no password: libpq reads it from
    PGPASSWORD, ~/.pgpass or a service file. The server's tables are created when
    missing."""
    from memplug.sync import exchange

    with ctx.open(create=True) as memory:
        data = exchange.init(memory, url, origin)
    emit(data, as_json, lambda d: f"syncing with {d['url']} as origin {d['origin']}")


def _render_share(data: dict[str, Any]) -> str:
    verb = "shared" if data["shared"] else "not shared"
    line = f"project {data['project']} is {verb}" + ("" if data["changed"] else " (already)")
    if data["shared"] and not data["known"]:
        line += "; no session of it is in this database yet"
    return line


@click.command("share")
@click.option("--project", required=True, help="The project (as `memory status` names it).")
@json_option
@click.pass_obj
def share_cmd(ctx: CliContext, project: str, as_json: bool) -> None:
    """Share a project's events through the sync server.

    From the next `memory sync` on, its events (earlier ones too) are pushed."""
    from memplug.sync import exchange

    with ctx.open(create=False) as memory:
        emit(exchange.share(memory, project), as_json, _render_share)


@click.command("unshare")
@click.option("--project", required=True, help="The project to stop sharing.")
@json_option
@click.pass_obj
def unshare_cmd(ctx: CliContext, project: str, as_json: bool) -> None:
    """Stop pushing a project's events.

    What the server already has stays there (`memory purge` removes it)."""
    from memplug.sync import exchange

    with ctx.open(create=False) as memory:
        emit(exchange.share(memory, project, shared=False), as_json, _render_share)
