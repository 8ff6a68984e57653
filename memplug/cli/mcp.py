"""`memory mcp`: memplug's memory as MCP tools on stdio (extra `memplug-local[mcp]`)."""

from __future__ import annotations

import importlib.util

import click

from memplug.base.installer import extra_command
from memplug.cli.output import CliContext, json_option


@click.command("mcp")
@json_option
@click.pass_obj
def mcp_cmd(ctx: CliContext, as_json: bool) -> None:
    """Serve memory to an MCP client on stdin/stdout.

    The read-only tools memory_search, memory_expand, memory_timeline,
    memory_neighbors and memory_core, and memory_remember, which keeps one lasting
    item; secrets redacted. Claude Code starts it itself once
    `memory install claude-code --mcp` registered it.

    `--json` is accepted for symmetry: the protocol on stdout is JSON-RPC either way.
    """
    if importlib.util.find_spec("mcp") is None:
        raise click.UsageError("the MCP server needs the mcp extra: " + extra_command("mcp"))
    from memplug.hosts.mcp import serve

    serve(ctx.db_path, ctx.config_path)
