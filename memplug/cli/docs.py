"""``docs/cli.md``: every command's ``--help``, generated so that it cannot drift.

``python -m memplug.cli.docs docs/cli.md`` (``make cli-docs``) writes the page; with no
argument it prints it. tests/test_cli_docs.py fails when the page differs from what
this module makes now.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import click

# Help is laid out at a fixed width: the page must not depend on the terminal.
WIDTH = 80

HEADER = """\
# The `memory` command

Generated from `memory --help` and each command's `--help`; do not edit by hand.
After changing a command, regenerate it with:

```sh
make cli-docs   # .venv/bin/python -m memplug.cli.docs docs/cli.md
```

`tests/test_cli_docs.py` fails while this page and the commands disagree.
"""


def help_pages() -> Iterator[tuple[str, str]]:
    """``(command line, help text)`` for ``memory`` and every command under it, in
    ``memory --help`` order, subcommands after their group."""
    from memplug.cli.app import cli

    root = click.Context(
        cli,
        info_name="memory",
        terminal_width=WIDTH,
        max_content_width=WIDTH,
        **cli.context_settings,
    )
    yield from _walk(cli, root)


def _walk(command: click.Command, ctx: click.Context) -> Iterator[tuple[str, str]]:
    yield ctx.command_path, command.get_help(ctx)
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None:
                yield from _walk(sub, click.Context(sub, info_name=name, parent=ctx))


def render() -> str:
    parts = [HEADER]
    for path, text in help_pages():
        parts.append(f"## `{path}`\n\n```text\n{text.rstrip()}\n```\n")
    return "\n".join(parts)


def main(argv: list[str]) -> None:
    page = render()
    if argv:
        Path(argv[0]).write_text(page, encoding="utf-8")
    else:
        sys.stdout.write(page)


if __name__ == "__main__":
    main(sys.argv[1:])
