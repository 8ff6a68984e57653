"""`memory --help`, docs/cli.md and the README's command table say the same thing."""

from __future__ import annotations

import re
from pathlib import Path

import click
from conftest import REPO

from memplug.cli.app import COMMANDS
from memplug.cli.docs import help_pages, render


def _help_listing(text: str) -> list[tuple[str, str]]:
    """``(name, summary)`` rows of a help page's ``Commands:`` section."""
    section = text.split("\nCommands:\n", 1)[1]
    return [
        (match[1], match[2])
        for match in re.finditer(r"^  (\S+)\s+(.*)$", section, flags=re.MULTILINE)
    ]


def _readme_commands() -> list[str]:
    """Command names in the order of the README's `memory` table."""
    names: list[str] = []
    for line in (REPO / "README.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("| `memory "):
            for name in re.findall(r"`memory ([a-z-]+)", line.split("|")[1]):
                if name not in names:
                    names.append(name)
    return names


def test_docs_cli_md_is_generated_from_the_help() -> None:
    page = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    assert page == render(), "docs/cli.md is stale: run `make cli-docs`"


def test_memory_help_lists_every_command_in_the_readme_order(cli) -> None:
    listed = [name for name, _ in _help_listing(cli("--help").stdout)]
    assert listed == list(COMMANDS)
    assert list(COMMANDS) == _readme_commands(), (
        "memplug.cli.app.COMMANDS and README.md's command table list commands in another "
        "order (or one is missing): keep them in step, then run `make cli-docs`"
    )


def test_every_summary_is_one_whole_line(cli) -> None:
    for path, text in help_pages():
        if "\nCommands:\n" not in text:
            continue
        for name, summary in _help_listing(text):
            assert summary.endswith(".") and not summary.endswith("..."), (
                f"`{path} {name}`: the first sentence of its help is too long for a "
                f"one-line summary: {summary!r}"
            )


def _leaf_commands() -> list[list[str]]:
    from memplug.cli.app import cli

    leaves: list[list[str]] = []

    def walk(command: click.Command, ctx: click.Context, path: list[str]) -> None:
        if not isinstance(command, click.Group):
            leaves.append(path)
            return
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None
            walk(sub, click.Context(sub, info_name=name, parent=ctx), [*path, name])

    walk(cli, click.Context(cli, info_name="memory"), [])
    return leaves


def test_every_command_takes_json(cli) -> None:
    leaves = _leaf_commands()
    assert len(leaves) >= len(COMMANDS)
    for path in leaves:
        done = cli(*path, "--json", "--help")
        assert done.returncode == 0, f"memory {' '.join(path)}: {done.stderr}"
        assert "--json" in done.stdout, f"memory {' '.join(path)} --help does not show --json"


def test_the_hook_takes_json_on_its_fast_path(cli_process, tmp_path: Path) -> None:
    db = tmp_path / "memory.sqlite"
    done = cli_process("--db", str(db), "hook", "claude-code", "--json", input="{}")
    assert done.returncode == 0 and "No such option" not in done.stderr
    plain = cli_process("--db", str(db), "hook", "claude-code", input="{}")
    assert done.stdout == plain.stdout


def test_the_documented_json_error_results_are_what_the_program_prints(tmp_path: Path) -> None:
    import json
    import shlex

    from tests.installed import memory

    doc = (REPO / "docs" / "search.md").read_text(encoding="utf-8")
    examples = re.findall(r"<!-- json-error: memory (.*?) -->\n```json\n(.*?)```", doc, re.S)
    assert len(examples) == 3
    db = str(tmp_path / "m.sqlite")
    event = {"session_id": "s1", "seq": 1, "type": "user/message", "role": "user",
             "text": "hello", "time": "2026-01-01T00:00:00Z"}  # fmt: skip
    assert memory("--db", db, "import", "-", input=json.dumps(event)).returncode == 0
    for command, shown in examples:
        done = memory("--db", db, *shlex.split(command))
        assert done.returncode == 2, command
        assert json.loads(done.stdout) == json.loads(shown), command
        message = json.loads(shown)["coverage"]["error"]["message"]
        assert done.stderr == f"Error: {message}\n", command


def test_help_pages_carry_no_internal_docstring_lines() -> None:
    for path, text in help_pages():
        for marker in ("Returns ", ":func:", ":mod:", ":class:", "``", "\f"):
            assert marker not in text, f"{path} --help shows {marker!r}"


def test_the_mcp_help_names_every_tool_the_server_serves() -> None:
    from memplug.hosts.mcp import TOOLS
    from tests.installed import memory

    text = memory("mcp", "--help").stdout
    named = set(re.findall(r"memory_[a-z]+", text))
    assert named == {tool.name for tool in TOOLS}


def test_uninstall_mcp_help_says_it_takes_the_server_out() -> None:
    from tests.installed import memory

    text = " ".join(memory("uninstall", "claude-code", "--help").stdout.split())
    assert "--mcp Also take `memory mcp`, memplug's MCP server, out of" in text
    assert "register" not in text


def test_docs_cli_md_is_what_the_installed_program_prints() -> None:
    from tests.installed import memory

    page = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    sections = re.findall(r"^## `(memory[^`]*)`\n\n```text\n(.*?)\n```", page, re.M | re.S)
    assert len(sections) > 20
    # A sample across the groups (each is a fresh process): the top level, a command,
    # a host command and a group's subcommand.
    wanted = {"memory", "memory search", "memory install claude-code", "memory rules override"}
    shown = {path: text for path, text in sections if path in wanted}
    assert set(shown) == wanted
    for path, text in shown.items():
        done = memory(*path.split()[1:], "--help")
        # The page is laid out at a fixed width, a terminal at its own: words compare.
        assert done.returncode == 0 and done.stdout.split() == text.split(), path
