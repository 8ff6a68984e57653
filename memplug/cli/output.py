"""Shared CLI plumbing: opening the database, JSON vs text output, one-line errors."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

import click
from msgspec import Struct

from memplug.base.config import LoadedConfig
from memplug.base.paths import default_db_path
from memplug.base.text import clip
from memplug.memory import Memory

json_option = click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")


class CliContext(Struct):
    db_path: str | None
    config_path: str | None

    def open(self, *, create: bool, upgrade: bool = True) -> Memory:
        """Only the commands that capture (``import``, ``skills ingest``; the hook opens
        its own) create the database; every other one, writing (``rebuild``,
        ``assemble``, ``purge``) or reading, refuses a path that holds none, so a
        mistyped ``--db`` is never a new, empty database. Each first re-derives what
        older rules derived (docs/storage.md, "Upgrades") unless told not to."""
        memory = Memory.open(
            self.db_path,
            config_path=self.config_path,
            create=create,
            upgrade=upgrade,
            progress=terminal_progress("re-deriving memory for this memplug: session"),
        )
        warn_clamped(memory.loaded)
        return memory

    def read(self, *, upgrade: bool = True) -> Memory:
        """Reading commands open read-only: they work on a file the user cannot write."""
        memory = Memory.open(
            self.db_path,
            config_path=self.config_path,
            create=False,
            readonly=True,
            upgrade=upgrade,
            progress=terminal_progress("re-deriving memory for this memplug: session"),
        )
        warn_clamped(memory.loaded)
        return memory

    def resolved_path(self) -> Any:
        return default_db_path(self.db_path)

    def global_options(self) -> list[str]:
        """``--db``/``--config`` naming, as absolute paths, the database and config file
        this command line points at when anything but the defaults does (an option,
        MEMPLUG_DB, MEMPLUG_HOME, MEMPLUG_CONFIG): a hook installed from here must use
        them, whatever its own environment holds."""
        options: list[str] = []
        if self.db_path or os.environ.get("MEMPLUG_HOME"):
            options += ["--db", str(Path(self.resolved_path()).expanduser().resolve())]
        if self.config_path:
            options += ["--config", str(Path(self.config_path).expanduser().resolve())]
        return options


def warn_clamped(loaded: LoadedConfig) -> None:
    """A value capped into its bounds is said once per command, on stderr."""
    for line in loaded.clamp_warnings():
        click.echo(f"warning: {line}", err=True)


def terminal_progress(label: str, quiet: bool = False) -> Callable[[int, int, str], None] | None:
    """``progress(done, total, what)`` drawing one self-erasing line on stderr, or None
    when stderr is not a terminal (a log or a pipe gets no control characters)."""
    if quiet or not sys.stderr.isatty():
        return None

    def show(done: int, total: int, what: str) -> None:
        line = f"{label} {done + 1}/{total}: {what}"[:79]
        end = "\n" if done + 1 == total else ""
        sys.stderr.write(f"\r\x1b[K{line}{end}")
        sys.stderr.flush()

    return show


def fail(message: str, exit_code: int = 2) -> NoReturn:
    first_line = message.strip().splitlines()[0] if message.strip() else "unknown error"
    click.echo(f"Error: {first_line}", err=True)
    sys.exit(exit_code)


def emit(data: Any, as_json: bool, render: Callable[[Any], str] | None = None) -> None:
    """Print ``data`` as stable JSON, or through ``render`` for people."""
    if as_json or render is None:
        click.echo(json.dumps(data, ensure_ascii=False, indent=2, sort_keys=False, default=str))
    else:
        click.echo(render(data))


def output_width() -> int | None:
    """The columns output must fit: ``COLUMNS`` when set, else the terminal's when
    stdout is one; None (no limit) when piped, so scripts get every character."""
    import shutil

    given = os.environ.get("COLUMNS", "")
    if given.isdigit() and int(given) > 0:
        return int(given)
    if sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return None


def _fit(widths: list[int], flexible: list[int], limit: int | None) -> list[int]:
    """The ``flexible`` columns narrowed, widest first, until a row fits ``limit``
    (none below 12 characters); ids and refs stay whole, to be copied."""
    fitted = list(widths)
    if limit is None or not flexible:
        return fitted
    while sum(fitted) + 2 * (len(fitted) - 1) > limit:
        widest = max(flexible, key=lambda i: fitted[i])
        if fitted[widest] <= 12:
            break
        fitted[widest] -= 1
    return fitted


def table(rows: list[list[str]], headers: list[str], fit: Sequence[str] = ()) -> str:
    """A plain, aligned text table (no colours: output is often piped). The columns
    named in ``fit`` (free text) narrow to the terminal's width (``output_width``), a
    cell too long for its column ending in "…"."""
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    flexible = [i for i, h in enumerate(headers) if h in fit]
    fitted = _fit(widths, flexible, output_width())
    if fitted != widths:
        widths = fitted
        headers = [clip(h, widths[i]) for i, h in enumerate(headers)]
        rows = [[clip(c, widths[i]) for i, c in enumerate(r)] for r in rows]
    lines = ["  ".join(h.ljust(widths[i]) for i, h in enumerate(headers)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines.extend("  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip() for r in rows)
    return "\n".join(lines)
