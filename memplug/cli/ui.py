"""`memory ui`: the local viewer (extra `memplug-local[ui]`; docs/ui.md)."""

from __future__ import annotations

import importlib.util
import json

import click

from memplug.base.installer import extra_command
from memplug.cli.output import CliContext, json_option

UI_MODULES = ("starlette", "jinja2", "uvicorn", "multipart")


@click.command("ui")
@click.option("--port", type=click.IntRange(0, 65535), default=0,
              help="The port on 127.0.0.1 (default: a free one).")  # fmt: skip
@click.option("--no-open", is_flag=True, help="Print the URL; do not open a browser.")
@click.option(
    "--read-only", is_flag=True, help="Browse only: no retract, promote, correct or purge."
)
@json_option
@click.pass_obj
def ui_cmd(ctx: CliContext, port: int, no_open: bool, read_only: bool, as_json: bool) -> None:
    """Browse and correct memory in a local web page.

    Projects and sessions, each session's timeline, memory items (retract, promote,
    correct), the project core, every logged injection with why, search, and purge.
    Serves 127.0.0.1 only; the first line printed is the URL, which carries this run's
    secret token (`--json`: the first line is {url, read_only}). Ctrl-C stops it.
    """
    missing = [name for name in UI_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        raise click.UsageError(
            f"the viewer needs the ui extra ({', '.join(missing)} missing): " + extra_command("ui")
        )
    from memplug.ui.app import Settings, free_port, serve

    with ctx.read():
        pass  # a missing database is the usual one-line error, before anything listens
    settings = Settings.new(ctx.db_path, ctx.config_path, port or free_port(),
                            read_only=read_only)  # fmt: skip
    if as_json:
        click.echo(json.dumps({"url": settings.url, "read_only": read_only}))
    else:
        click.echo(settings.url)
    if not no_open:
        import webbrowser

        webbrowser.open(settings.url)
    serve(settings)
