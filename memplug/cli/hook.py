"""`memory hook claude-code`: a Claude Code hook (payload on stdin, JSON or nothing out).

The work is in :mod:`memplug.hosts.claude_hook`; this is only its place in the CLI.
Whatever happens it exits 0: Claude Code reads exit code 2 as "block".
"""

from __future__ import annotations

import sys

import click

from memplug.cli.output import CliContext


@click.group("hook")
def hook_group() -> None:
    """Run as a harness hook: read the hook's JSON payload on stdin."""


@hook_group.command("claude-code")
@click.pass_obj
def claude_code_cmd(ctx: CliContext) -> None:
    """Capture the session's transcript; on UserPromptSubmit and SessionStart (compact,
    resume) print the memory as additionalContext. Never fails: errors go to `memory status`."""
    from memplug.hosts.claude_hook import main

    out = main(sys.stdin.buffer.read(), db_path=ctx.db_path, config_path=ctx.config_path)
    if out:
        click.echo(out)
