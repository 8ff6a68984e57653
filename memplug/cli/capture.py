"""`memory import` and `memory export`: the generic JSONL interchange format."""

from __future__ import annotations

import json
import os
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, NoReturn

import click

from memplug.capture.transfer import ImportInterrupted, ImportSummary, export_jsonl
from memplug.cli.output import CliContext, emit, fail, json_option

if TYPE_CHECKING:
    from memplug.memory import Memory
    from memplug.semantic.service import EmbedReport


@click.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(allow_dash=True))
@json_option
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.option(
    "--project",
    default=None,
    help="Store every event under this project (a folder is read as its repository), "
    "whatever their cwd says: to merge or split projects by hand.",
)
@click.pass_obj
def import_cmd(
    ctx: CliContext, files: tuple[str, ...], as_json: bool, quiet: bool, project: str | None
) -> None:
    """Import generic JSONL host events (FILE may be - for stdin).

    A Claude Code transcript (its records carry `sessionId`) is recognised and captured
    as `memory hook claude-code` would, its subagents' transcripts included. A Codex
    rollout (its first line is `session_meta`), or a folder of them read recursively
    (`memory import ~/.codex/sessions`), is captured as `memory hook codex` would.

    Exit 0 when every line was taken, 2 when any line was rejected; the good lines are
    kept either way, and importing the same events again changes nothing.
    """
    files, rollouts, transcripts = _sorted_inputs(files, project)
    with ExitStack() as stack:
        streams: list[tuple[str, BinaryIO]] = []
        total = 0
        for name in files:
            if name == "-":
                streams.append(("-", sys.stdin.buffer))
            elif name not in transcripts:
                streams.append((name, stack.enter_context(open(name, "rb"))))
                total += os.path.getsize(name)
        memory = stack.enter_context(ctx.open(create=True))
        show_bar = not quiet and not as_json and sys.stderr.isatty() and total > 0
        try:
            if show_bar:
                bar = stack.enter_context(
                    click.progressbar(length=total, label="importing", file=sys.stderr)
                )
                summary = memory.import_jsonl(
                    streams, progress=bar.update, embed=False, project=project
                )
            else:
                summary = memory.import_jsonl(streams, embed=False, project=project)
        except ImportInterrupted as interrupted:
            _interrupted(interrupted.summary, as_json)
        failed = _capture_transcripts(
            memory, transcripts, summary, not quiet and not as_json, project
        )
        failed += _capture_rollouts(memory, rollouts, summary, not quiet and not as_json)
        summary.vectors = embed_with_bar(memory, show_bar)
    data = summary.as_dict()
    if transcripts:
        data["claude_code_transcripts"] = transcripts
    if rollouts:
        data["codex_rollouts"] = rollouts
    if as_json:
        emit(data, True)
    else:
        click.echo(
            f"{summary.new} new, {summary.present} already present, "
            f"{len(summary.rejected)} rejected"
        )
        for rejected in summary.rejected[:20]:
            where = f"{rejected.file}: " if rejected.file else ""
            click.echo(f"  {where}line {rejected.line}: {rejected.error}", err=True)
        if len(summary.rejected) > 20:
            click.echo(f"  … and {len(summary.rejected) - 20} more (see --json)", err=True)
        for name in transcripts:
            click.echo(f"  {name}: a Claude Code transcript, captured as the hook does", err=True)
        if rollouts:
            click.echo(f"  {len(rollouts)} Codex rollout(s), captured as the hook does", err=True)
    for error in failed:
        click.echo(f"  {error}", err=True)
    if summary.extraction_error is not None:
        # What was kept comes first: `fail` shows only the first line of the error.
        fail(
            f"the events are kept ({summary.new} new, {summary.present} already present), "
            f"but memory extraction crashed after the import: {summary.extraction_error}",
            1,
        )
    if summary.rejected or failed:
        sys.exit(2)


def _sorted_inputs(
    names: tuple[str, ...], project: str | None
) -> tuple[tuple[str, ...], list[str], list[str]]:
    """``(files, Codex rollouts, Claude Code transcripts)``; ``files`` holds the
    transcripts and the JSONL streams. Checked before anything is opened."""
    from memplug.hosts import codex

    files, rollouts = _rollouts(names)
    for name in files:
        _check_readable(name)
    rollouts += [name for name in files if name != "-" and codex.is_rollout(name)]
    files = tuple(name for name in files if name not in rollouts)
    if project is not None and rollouts:
        raise click.UsageError("--project takes JSONL files and Claude Code transcripts")
    if project is not None and not project.strip():
        raise click.UsageError("--project is empty: give a folder or a name")
    return files, rollouts, [name for name in files if name != "-" and _is_claude_code(name)]


def _rollouts(names: tuple[str, ...]) -> tuple[tuple[str, ...], list[str]]:
    """Folders given are read for Codex rollouts, recursively; the rest stay files."""
    from memplug.hosts import codex

    files, rollouts = [], []
    for name in names:
        if name != "-" and os.path.isdir(name):
            found = codex.rollouts_in(Path(name))
            if not found:
                raise click.UsageError(
                    f"{name} is a directory with no Codex rollout in it: give JSONL files "
                    f"(memory import {name}/*.jsonl)"
                )
            rollouts += [str(path) for path in found]
        else:
            files.append(name)
    return tuple(files), rollouts


def _capture_rollouts(
    memory: Memory, names: list[str], summary: ImportSummary, show: bool
) -> list[str]:
    """Capture Codex rollouts as the hook does (same sessions, same cursors)."""
    if not names:
        return []

    from memplug.hosts import claude_hook as ch
    from memplug.hosts import codex_hook
    from memplug.plugin import Plugin

    report = ch.HookReport(event="import")
    plugin = Plugin(memory)  # the caller's database: closed by the caller
    with click.progressbar(names, label="codex rollouts", file=sys.stderr,
                           hidden=not (show and sys.stderr.isatty())) as bar:  # fmt: skip
        for name in bar:
            codex_hook.capture_rollout(plugin, Path(name), report, ch.Deadline(float("inf")))
    summary.new += report.captured
    summary.present += report.present
    return report.errors


def _check_readable(name: str) -> None:
    """A file, ``-``, or anything else that reads as a stream (``/dev/null``, a pipe)."""
    if name == "-":
        return
    if os.path.isdir(name):
        raise click.UsageError(
            f"{name} is a directory: give JSONL files (memory import {name}/*.jsonl)"
        )
    if not os.path.exists(name):
        raise click.UsageError(f"no such file: {name}")
    if not os.access(name, os.R_OK):
        raise click.UsageError(f"cannot read {name}: permission denied")


def _is_claude_code(name: str) -> bool:
    """Whether a file reads as a Claude Code transcript (camelCase ``sessionId`` on its
    records) rather than generic events (``session_id``, ``seq``); its first lines tell."""
    if not os.path.isfile(name):
        return False  # a pipe is read once: as generic events
    with open(name, "rb") as stream:
        head = [stream.readline(1 << 20) for _ in range(20)]
    for raw in head:
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        if isinstance(record, dict) and ("session_id" in record or "sessionId" in record):
            return "session_id" not in record
    return False


def _capture_transcripts(
    memory: Memory, names: list[str], summary: ImportSummary, show: bool, project: str | None
) -> list[str]:
    """Capture Claude Code transcripts as the hook does (same sessions, same cursors, so
    a later hook goes on from where this stopped), each read from its first byte so that
    a second import counts what is already present; their counts join ``summary``."""
    if not names:
        return []

    from memplug.hosts import claude_code as cc
    from memplug.hosts import claude_hook as ch
    from memplug.plugin import Plugin

    files = []
    for name in names:
        session = cc.session_id_for(name)
        files.append(ch.Transcript(Path(name), session, True, reread=True, project=project))
        files += [
            ch.Transcript(p, f"{session}/{p.stem}", True, reread=True, project=project)
            for p in cc.subagent_paths(name)
        ]
    report = ch.HookReport(event="import")
    plugin = Plugin(memory)  # the caller's database: closed by the caller
    # One file at a time, so a terminal sees the bar move (derivation runs per file too).
    hidden = len(files) < 2 or not (show and sys.stderr.isatty())
    with click.progressbar(
        files, label="claude code transcripts", file=sys.stderr, hidden=hidden
    ) as bar:
        for transcript in bar:
            ch.capture_all(plugin, [transcript], report, ch.Deadline(float("inf")))
    summary.new += report.captured
    summary.present += report.present
    return report.errors


def _interrupted(summary: ImportSummary, as_json: bool) -> NoReturn:
    """Ctrl-C: what was committed stays; say so, and how to finish."""
    if as_json:
        emit({**summary.as_dict(), "interrupted": True}, True)
    click.echo(
        f"\ninterrupted: {summary.new:,} new events committed "
        f"({summary.present:,} already present), the rest not read. Run the same import "
        "again to finish: stored events are skipped, and memory extraction catches up then.",
        err=True,
    )
    sys.exit(1)


def embed_with_bar(memory: Memory, show_bar: bool) -> EmbedReport | None:
    """Embed what the import added, with its own progress bar on a terminal."""
    if not show_bar or not memory.semantic.enabled or memory.semantic.embedder is None:
        return memory.embed_vectors()
    with click.progressbar(length=memory.semantic.lag(), label="embedding", file=sys.stderr) as bar:
        return memory.embed_vectors(progress=bar.update)


@click.command("export")
@click.option("--session", "sessions", multiple=True, help="Only this session (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Also a JSON summary on stderr.")
@click.pass_obj
def export_cmd(ctx: CliContext, sessions: tuple[str, ...], as_json: bool) -> None:
    """Write events as generic JSONL to stdout.

    In (session, seq) order. Export, import into a fresh database, export again: the
    bytes are identical. The events are the JSON on stdout; --json adds {"events": N}
    on stderr. A session that is not in the database is an error (exit 2) before
    anything is written. Only events are exported: what a person did to items
    (retract, promote, a correction in `memory ui`) is not, so a database imported from
    an export derives its items afresh, those changes undone; `memory remember` is an
    event and travels.
    """
    with ctx.read() as memory:
        memory.require_sessions(sessions)
        count = export_jsonl(memory.store, sys.stdout, list(sessions) or None)
    if as_json:
        sys.stdout.flush()
        click.echo(json.dumps({"events": count}), err=True)
