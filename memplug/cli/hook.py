"""`memory hook <host>`: run a harness hook (payload on stdin, the host's answer out).

One command per registered host with a hook (:mod:`memplug.hosts`); the work is in the
host's module. Whatever happens it exits 0: Claude Code, for one, reads exit code 2 as
"block". A host shipped with memplug is run before click is even imported
(:func:`memplug.cli.main`); this group serves ``--help`` and plugin hosts.
"""

from __future__ import annotations

import sys

import click

from memplug.cli.hosts import HostGroup
from memplug.cli.output import CliContext
from memplug.hosts import HostSpec


def _hook_command(spec: HostSpec) -> click.Command:
    hook = spec.load("hook")

    @click.command(spec.name, help=hook.__doc__)
    @click.option("--json", "as_json", is_flag=True, help="Accepted: the answer is JSON anyway.")
    @click.pass_obj
    def run(ctx: CliContext, as_json: bool) -> None:
        out = hook(sys.stdin.buffer.read(), db_path=ctx.db_path, config_path=ctx.config_path)
        if out:
            click.echo(out)

    return run


@click.group("hook", cls=HostGroup, part="hook", make=_hook_command)
def hook_group() -> None:
    """Run as a harness hook: read the hook's JSON payload on stdin."""
