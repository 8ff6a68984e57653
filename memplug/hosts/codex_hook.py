"""`memory hook codex`: Codex CLI's hooks (docs/codex.md).

Codex runs its hooks as Claude Code does (JSON on stdin: ``session_id``,
``transcript_path`` — the rollout —, ``cwd``, ``hook_event_name``, and ``prompt`` on
``UserPromptSubmit``) and reads the same answer
(``hookSpecificOutput.additionalContext`` on ``UserPromptSubmit`` and ``SessionStart``).
So only the reading differs: the rollout is captured from its cursor by
:mod:`memplug.hosts.codex`; injection, error recording and the deadline are the Claude
Code hook's. Never fails the host: on any error it prints nothing, exits 0 and records
the error for `memory status`.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memplug.base.errors import DatabaseBusy, ValidationError
from memplug.hosts import claude_hook as ch
from memplug.hosts import codex

if TYPE_CHECKING:
    from memplug.plugin import Plugin

HOOK_EVENTS: frozenset[str] = frozenset({
    "SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PermissionRequest",
    "PreCompact", "PostCompact", "SubagentStart", "SubagentStop", "Stop", "SessionEnd",
})  # fmt: skip
INJECTING = ("UserPromptSubmit", "SessionStart")


def main(stdin: bytes, *, db_path: str | None = None, config_path: str | None = None) -> str:
    """Capture the Codex rollout; inject memory before each prompt.

    On UserPromptSubmit and SessionStart print the memory as additionalContext. Never
    fails: errors go to `memory status`.

    \f
    Returns what to print (possibly nothing).
    """
    try:
        payload = json.loads(stdin.decode("utf-8"))
        if not isinstance(payload, dict):
            raise ValidationError("the hook payload is not a JSON object")
        report = handle(payload, db_path=db_path, config_path=config_path)
    except BaseException as error:  # the host must go on, whatever happened here
        ch._pending_error(db_path, f"codex hook: {type(error).__name__}: {error}")
        return ""
    return "" if report.output is None else json.dumps(report.output, ensure_ascii=False)


def run_from_stdin() -> None:
    out = main(sys.stdin.buffer.read(), db_path=os.environ.get("MEMPLUG_DB") or None)
    if out:
        sys.stdout.write(out + "\n")
        sys.stdout.flush()


def handle(
    payload: Mapping[str, Any], *, db_path: str | None = None, config_path: str | None = None
) -> ch.HookReport:
    event, session_id = ch._str(payload.get("hook_event_name")), ch._str(payload.get("session_id"))
    report = ch.HookReport(event=event, session_id=session_id)
    plugin = None
    try:
        if event not in HOOK_EVENTS:
            raise ValidationError(f"unknown hook_event_name {event!r}")
        from memplug.plugin import open_plugin

        plugin = open_plugin(db_path, config_path=config_path, errors=ch._error_sink(db_path))
        memory = plugin.memory
        deadline = ch.Deadline(memory.config.hook.deadline_ms)
        memory.set_lock_wait(ch.LOG_WAIT_MS)
        path = ch._str(payload.get("transcript_path"))
        if path and Path(path).is_file():
            session_id = capture_rollout(plugin, Path(path), report, deadline) or session_id
            report.session_id = session_id
        if event in INJECTING and session_id:
            prompt, cwd = ch._str(payload.get("prompt")), ch._str(payload.get("cwd"))
            report.output = ch.inject(
                plugin, report, prompt, deadline, project=cwd, mcp=_mcp_registered(cwd)
            )
    except Exception as error:
        report.errors.append(f"{type(error).__name__}: {error}")
    finally:
        if report.errors or report.skipped:
            ch._record(plugin, db_path, config_path, report)
        if plugin is not None:
            plugin.close()
    return report


def capture_rollout(
    plugin: Plugin, path: Path, report: ch.HookReport, deadline: ch.Deadline
) -> str | None:
    """Read a rollout from its cursor and store what is new, each read in one write
    transaction with the moved cursor; derive what it added. The rollout's session id."""
    session_id = codex.session_id_of(path)
    if session_id is None:
        report.errors.append(f"{path.name} is not a Codex rollout (no session_meta first)")
        return None
    new = 0
    while True:
        saved = plugin.saved_cursor(session_id)
        if saved is not None and int(saved.get("offset", 0)) >= path.stat().st_size:
            break
        # Imported once there is something to validate: pydantic is most of a hook's
        # import time, and a prompt hook usually finds the rollout already read.
        from memplug.base.events import parse_event

        try:
            wait = int(min(ch.LOCK_WAIT_MS, deadline.left_ms() / 2)) or 1
            with plugin.session_writes(session_id, lock_wait_ms=wait) as writes:
                state = codex.RolloutCursor.from_dict(writes.cursor)
                read = codex.read_rollout(path, state)
                events = []
                for event in read.events:
                    try:
                        events.append(parse_event(event))
                    except ValidationError as error:
                        report.errors.append(f"{session_id}:{event.get('seq')}: {error}")
                inserted = writes.store(events, origin=codex.HOST)
                writes.move_cursor(codex.HOST, str(path), read.cursor.offset, read.cursor.to_dict())
        except DatabaseBusy:
            report.skipped = "capture skipped: the database was busy; the next hook catches up"
            break
        new += inserted.new
        report.present += inserted.present
        if read.malformed:
            report.errors.append(f"{path.name}: {read.malformed} malformed line(s) skipped")
        if not read.more:
            break
    report.captured += new
    report.transcripts += 1
    if new:
        plugin.memory.derive([session_id], upgrade_ms=deadline.left_ms() / 2)
    return session_id


def _mcp_registered(cwd: str | None) -> bool:
    """Whether Codex starts memplug's MCP server: its table in the user's or the
    project's config.toml (a byte search; the prompt path parses no TOML)."""
    from memplug.hosts.codex_install import codex_home

    folders = [codex_home()] + ([Path(cwd) / ".codex"] if cwd else [])
    for folder in folders:
        try:
            if b"[mcp_servers.memplug]" in (folder / "config.toml").read_bytes():
                return True
        except OSError:
            continue
    return False
