"""`memory doctor`: check the database, the install and the extras; repair what is safe."""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import tempfile
from pathlib import Path

import click

from memplug.base.errors import MemplugError
from memplug.base.installer import extra_command
from memplug.base.paths import default_db_path, project_root, writable
from memplug.capture.transfer import export_readable
from memplug.cli.output import CliContext, emit, json_option, table
from memplug.memory import Memory
from memplug.reports.doctor import Check, database_checks, file_checks, repair, salvage_name, worst
from memplug.store.db import engine_error

# Each extra and a module that tells it is installed.
EXTRAS: tuple[tuple[str, str], ...] = (
    ("mcp", "mcp"),
    ("semantic", "tokenizers"),
    ("sync", "psycopg"),
    ("ui", "starlette"),
)


def _resolves(command: str) -> bool:
    """Whether a hook's command starts with a program that exists for this user."""
    try:
        program = shlex.split(command)[0]
    except (ValueError, IndexError):
        return False
    if os.sep in program:
        return os.access(program, os.X_OK)
    return shutil.which(program) is not None


def install_checks(cwd: Path, home: Path | None = None) -> list[Check]:
    """memplug's Claude Code hooks in each settings file, and whether their command runs."""
    from memplug.hosts import claude_install as ci

    root = Path(project_root(str(cwd)) or cwd)
    files = {
        "user": ci.settings_path("user", home=home),
        "project": ci.settings_path("project", root),
        "local": root / ".claude" / "settings.local.json",
    }
    checks = []
    for scope, path in files.items():
        hooks = ci.installed(ci.read_settings(path)) if path.is_file() else {}
        if not hooks:
            continue
        commands = sorted({c for cs in hooks.values() for c in cs})
        broken = [c for c in commands if not _resolves(c)]
        detail = f"{path}: {', '.join(sorted(hooks))}"
        if broken:
            fix = "memory install claude-code" + {"user": "", "project": " --project"}.get(
                scope, " --local"
            )
            checks.append(
                Check(f"claude-code ({scope})", "fail", f"{detail}; not found: {broken[0]}", fix)
            )
        else:
            checks.append(Check(f"claude-code ({scope})", "ok", detail))
    if not checks:
        checks.append(
            Check("claude-code", "info", "no hooks installed", "memory install claude-code")
        )
    return checks


def extra_checks() -> list[Check]:
    checks = []
    for extra, module in EXTRAS:
        if importlib.util.find_spec(module) is not None:
            checks.append(Check(f"extra {extra}", "ok", "installed"))
        else:
            checks.append(Check(f"extra {extra}", "info", "not installed", extra_command(extra)))
    return checks


def _database(path: Path, config: str | None, fix: bool) -> list[Check]:
    checks = file_checks(path)
    if worst(checks) == "fail":
        return checks
    can_write = writable(path)
    try:
        memory = Memory.open(path, config_path=config, create=False, readonly=not can_write)
    except MemplugError as error:
        checks.append(Check("open", "fail", str(error), "memory doctor --repair (a salvage copy)"))
        return checks + ([_salvage(path, config)] if fix else [])
    with memory:
        try:
            found = database_checks(memory, writable=can_write)
            if fix and can_write:
                found = repair(memory, found)
        except Exception as error:  # a damaged page met by a check itself
            failure = engine_error(error, path) or error
            if not isinstance(failure, MemplugError):
                raise
            fix_it = "memory doctor --repair (a salvage copy)"
            found = [Check("integrity", "fail", str(failure), fix_it)]
        checks += found
        if fix and any(c.name == "integrity" and c.state == "fail" for c in found):
            checks.append(_salvage_from(memory, path))
    return checks


def _salvage(path: Path, config: str | None) -> Check:
    """A salvage of a file that does not open: read-only, as immutable, if at all."""
    try:
        memory = Memory.open(path, config_path=config, create=False, readonly=True)
    except MemplugError as error:
        return Check("salvage", "fail", f"nothing can be read from the file ({error})")
    with memory:
        return _salvage_from(memory, path)


def salvage_to(memory: Memory, target: Path) -> dict[str, int]:
    """Copy every event ``memory`` still yields into a new database at ``target``,
    derived there. Like export, only events travel; a person's retractions and
    promotions are derived state of the old file. Returns the counts: events copied,
    sessions, sessions cut short."""
    with tempfile.TemporaryFile() as spool:
        sessions, damaged = export_readable(memory.store, spool)
        spool.seek(0)
        with Memory.open(target, create=True) as copy:
            summary = copy.import_jsonl([("salvage", spool)])
    return {"events": summary.new, "sessions": sessions, "damaged": damaged}


def _salvage_from(memory: Memory, path: Path) -> Check:
    target = salvage_name(path)
    copied = salvage_to(memory, target)
    detail = (
        f"{copied['events']:,} events of {copied['sessions']:,} sessions copied to {target}"
        + (f" ({copied['damaged']} cut short)" if copied["damaged"] else "")
        + f"; {path} is untouched"
    )
    return Check("salvage", "fixed" if copied["events"] else "fail", detail, f"mv {target} {path}")


def _render(path: Path, checks: list[Check]) -> str:
    rows = [[c.state.upper(), c.name, c.detail, c.fix or ""] for c in checks]
    verdict = {"ok": "nothing wrong", "warn": "works, with warnings", "fail": "needs attention"}
    return "\n".join(
        [
            f"database {path}",
            table(rows, ["state", "check", "found", "next"], fit=("found",)),
            verdict[worst(checks)],
        ]
    )


@click.command("doctor")
@click.option(
    "--repair",
    "fix",
    is_flag=True,
    help="Repair what is safe: indexes, derivation, a salvage copy.",
)
@json_option
@click.pass_obj
def doctor_cmd(ctx: CliContext, fix: bool, as_json: bool) -> None:
    """Check the database, hooks and extras; repair what is safe.

    Checks the file (there, private, writable), SQLite's integrity, the full-text
    indexes, the schema and the derivation state, memplug's hooks in Claude Code's
    settings (user, project, local) and whether their command runs, and the extras.
    `--repair` rebuilds a broken index, derives memory again, and copies what a corrupt
    file still holds into NAME.salvaged.sqlite beside it, never writing the original.
    Exit 1 when something still needs attention.
    """
    path = default_db_path(ctx.db_path)
    checks = _database(path, ctx.config_path, fix) + install_checks(Path.cwd()) + extra_checks()
    data = {
        "database": str(path),
        "state": worst(checks),
        "checks": [
            {"name": c.name, "state": c.state, "detail": c.detail, "fix": c.fix} for c in checks
        ],
    }
    emit(data, as_json, lambda d: _render(path, checks))
    if worst(checks) == "fail":
        raise SystemExit(1)
