"""The click group behind ``memory``: commands are imported only when invoked."""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from memplug.base.errors import MemplugError
from memplug.base.paths import DISTRIBUTION, default_db_path
from memplug.cli.output import CliContext, fail
from memplug.store.db import engine_error

# command name → "module:attribute"; each module holds one group of commands. The order
# is `memory --help`'s and the README table's (tests/test_cli_docs.py keeps them equal).
COMMANDS: dict[str, str] = {
    "import": "memplug.cli.capture:import_cmd",
    "export": "memplug.cli.capture:export_cmd",
    "status": "memplug.cli.status:status_cmd",
    "items": "memplug.cli.items:items_cmd",
    "inspect": "memplug.cli.items:inspect_cmd",
    "search": "memplug.cli.search:search_cmd",
    "expand": "memplug.cli.search:expand_cmd",
    "assemble": "memplug.cli.assembly:assemble_cmd",
    "explain": "memplug.cli.assembly:explain_cmd",
    "core": "memplug.cli.core:core_cmd",
    "remember": "memplug.cli.items:remember_cmd",
    "retract": "memplug.cli.items:retract_cmd",
    "promote": "memplug.cli.items:promote_cmd",
    "rebuild": "memplug.cli.items:rebuild_cmd",
    "purge": "memplug.cli.admin:purge_cmd",
    "config": "memplug.cli.status:config_group",
    "doctor": "memplug.cli.doctor:doctor_cmd",
    "hook": "memplug.cli.hook:hook_group",
    "skills": "memplug.cli.skills:skills_group",
    "rules": "memplug.cli.skills:rules_group",
    "validate": "memplug.cli.skills:validate_cmd",
    "install": "memplug.cli.install:install_group",
    "uninstall": "memplug.cli.install:uninstall_group",
    "timeline": "memplug.cli.timeline:timeline_cmd",
    "graph": "memplug.cli.graph:graph_group",
    "mcp": "memplug.cli.mcp:mcp_cmd",
    "ui": "memplug.cli.ui:ui_cmd",
    "sync": "memplug.cli.sync:sync_group",
    "share": "memplug.cli.sync:share_cmd",
    "unshare": "memplug.cli.sync:unshare_cmd",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attribute = target.split(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name == module_name:
                return None
            raise
        command: click.Command = getattr(module, attribute)
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """As click's, with the nearest command names when a name is mistyped."""
        name = click.utils.make_str(args[0])
        if self.get_command(ctx, name) is None and not name.startswith("-"):
            import difflib

            near = difflib.get_close_matches(name, list(COMMANDS), n=3, cutoff=0.6)
            if near:
                ctx.fail(f"No such command '{name}'. Did you mean {' or '.join(map(repr, near))}?")
        return super().resolve_command(ctx, args)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--db",
    "db_path",
    type=click.Path(dir_okay=False),
    envvar="MEMPLUG_DB",
    help="Database file (default: $MEMPLUG_HOME/memory.sqlite).",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    envvar="MEMPLUG_CONFIG",
    help="Config file (default: memory.toml beside the database).",
)
@click.version_option(package_name=DISTRIBUTION)
@click.pass_context
def cli(ctx: click.Context, db_path: str | None, config_path: str | None) -> None:
    """memplug: local long-term memory for LLM agents, in one SQLite file."""
    ctx.obj = CliContext(db_path=db_path, config_path=config_path)


def run(argv: list[str] | None) -> Any:
    """Run the click group; every memplug error becomes one ``Error: …`` line."""
    try:
        # Bare `memory` shows the help, not a one-line usage error.
        return cli.main(args=argv or ["--help"], prog_name="memory", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(1)
    except click.ClickException as error:
        fail(error.format_message(), error.exit_code)
    except click.exceptions.Exit as error:
        sys.exit(error.exit_code)
    except MemplugError as error:
        fail(str(error), error.exit_code)
    except BrokenPipeError:
        sys.exit(1)
    except Exception as error:
        # A database that breaks after it opened (a corrupt page met mid-query) raises
        # from the engine outside any write; it still gets its one line.
        translated = engine_error(error, _db_path(argv))
        if translated is None:
            raise
        fail(str(translated), translated.exit_code)


def _db_path(argv: list[str] | None) -> Any:
    """The database the command line names (parsed again: the failed context is gone)."""
    try:
        ctx = cli.make_context(
            "memory", list(sys.argv[1:] if argv is None else argv), resilient_parsing=True
        )
        return default_db_path(ctx.params.get("db_path"))
    except (click.ClickException, click.exceptions.Exit):
        return default_db_path()
