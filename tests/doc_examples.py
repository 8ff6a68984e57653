"""Examples in docs/ that tests run: ``<!-- example: NAME -->`` before a fenced block.

A block of ``$ memory …`` lines, each followed by its expected output, is a transcript:
:func:`run_transcript` runs every command through click's CliRunner against one
database and compares what it prints.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from click.testing import CliRunner

from memplug.cli.app import cli

REPO = Path(__file__).resolve().parent.parent


def examples(page: str) -> dict[str, str]:
    text = (REPO / "docs" / page).read_text(encoding="utf-8")
    found = re.findall(r"<!-- example: (\S+) -->\n(`{3,4})\w*\n(.*?)\2\n", text, re.S)
    return {name: body for name, _, body in found}


def transcript(block: str) -> list[tuple[list[str], str]]:
    """``[(argv after "memory", expected stdout)]`` from a ``$ memory …`` block."""
    steps: list[tuple[list[str], list[str]]] = []
    for line in block.rstrip("\n").split("\n"):
        if line.startswith("$ memory "):
            steps.append((shlex.split(line[len("$ memory ") :]), []))
        else:
            steps[-1][1].append(line)
    return [(argv, "\n".join(out)) for argv, out in steps]


def run_transcript(block: str, db: Path) -> list[tuple[str, str]]:
    """``[(expected, actual)]`` for each command of the block, run in order."""
    runner = CliRunner()
    pairs = []
    for argv, expected in transcript(block):
        result = runner.invoke(cli, ["--db", str(db), *argv], catch_exceptions=False)
        pairs.append((expected, result.stdout.rstrip("\n")))
    return pairs
