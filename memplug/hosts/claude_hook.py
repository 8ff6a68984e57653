"""The Claude Code hook: one payload in on stdin, the transcript captured, maybe context out.

Every hook is a fresh process, so this module imports nothing heavy until it needs it,
and it never fails the host: whatever goes wrong, it prints nothing, exits 0 and
records the error (``memory status`` shows it). Claude Code reads exit code 2 as
"block" — a UserPromptSubmit hook that exited 2 would erase the user's prompt.

On every event the transcript at ``transcript_path`` (and, outside tool hooks, its
subagents' transcripts) is captured from where the last hook stopped reading. A hook
that finds nothing appended and has nothing to answer returns before opening the
database for writing or loading the configuration. ``UserPromptSubmit`` and
``SessionStart`` (source ``startup``, ``resume`` or ``compact``) answer with the assembled
memory as ``hookSpecificOutput.additionalContext``, kept under ``hook.maxContextChars``:
a new session starts with its project's resident core even before it has events.

If another process holds the write lock longer than the hook can wait, capture is
skipped (the next hook catches up from the same cursor) and the hook still injects
from what is there. That note, like any error a locked or missing database cannot
take, waits in ``<database>.hook-pending.jsonl`` until a later hook writes it to
``error_log``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msgspec import Struct, field

from memplug.base.errors import (
    DatabaseBusy,
    DatabaseError,
    DatabaseReadOnly,
    SchemaTooNew,
    ValidationError,
)
from memplug.base.paths import config_file, default_db_path, hook_pending_file, project_of
from memplug.base.vocab import COMPACT_SUMMARY_FORM, MEMPLUG_SOURCE_KIND
from memplug.hosts import claude_code as cc
from memplug.hosts.claude_idle import TOOL_EVENTS, due

if TYPE_CHECKING:
    from memplug.base.messages import Message
    from memplug.memory import Memory
    from memplug.plugin import AssemblyResult, ErrorSink, Plugin

HOST = cc.HOST
HOOK_EVENTS: frozenset[str] = frozenset(
    {
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "PreCompact",
        "Stop",
        "SubagentStop",
        "SessionEnd",
    }
)
# After these the main agent is between model calls, so an assistant message that
# looks unfinished in the transcript is complete: flush it.
FLUSHING_EVENTS: frozenset[str] = frozenset(
    {"SessionStart", "UserPromptSubmit", "PreCompact", "Stop", "SessionEnd"}
)
REINJECT_SOURCES: frozenset[str] = frozenset({"startup", "compact", "resume"})
# The most text a model context holds (≈200k tokens); older text was compacted away.
VISIBLE_CHARS = 800_000
# The compaction summary too: what it says of the work before it is not said again.
VISIBLE_TYPES: frozenset[str] = frozenset(
    {"user/message", "assistant/message", "command", "compaction/summary"}
)
LOCK_WAIT_MS = 1_000
LOG_WAIT_MS = 250
# The part of a compaction summary a SessionStart(compact) query is built from: its
# numbered parts on the work at hand, at most SUMMARY_CHARS of them (a whole summary is
# thousands of words of history, and a query that long is capped).
SUMMARY_CHARS = 1_500
_SUMMARY_PART = re.compile(r"^(\d+\. \**[^\n]{3,60}?:\**)", re.M)
_AT_HAND = re.compile(r"current work|pending|next step", re.I)
_SUMMARY_TAIL = "If you need specific details from before compaction"
# How many of a session's newest assembly logs the fallback reads back (a context that
# held more injections than this has long been compacted).
LOGGED_INJECTIONS = 64


class HookReport(Struct):
    """What one hook did; the CLI prints ``output`` and nothing else."""

    event: str | None = None
    session_id: str | None = None
    captured: int = 0
    present: int = 0
    transcripts: int = 0
    opened: bool = False
    skipped: str | None = None
    output: dict[str, Any] | None = None
    errors: list[str] = field(default_factory=list)
    # The database's failure this hook met (told once, see memplug.hosts.notice), and
    # whether memory could still be read for the answer.
    trouble: str | None = None
    read_only: bool = False


class Deadline:
    def __init__(self, ms: float) -> None:
        self.end = time.monotonic() + ms / 1000

    def left_ms(self) -> float:
        return max(0.0, (self.end - time.monotonic()) * 1000)


class Transcript(Struct, frozen=True):
    """A transcript file, the memplug session it feeds, and whether its writer is known
    to be between model calls (an unfinished-looking message is then complete)."""

    path: Path
    session_id: str
    final: bool
    # Read whole from the first byte, not from the saved cursor (`memory import`: the
    # same file gives the same counts and the same malformed lines each time).
    reread: bool = False
    # The project its events are stored under, whatever their cwd (`import --project`).
    project: str | None = None


# -- entry points -------------------------------------------------------------------


def main(stdin: bytes, *, db_path: str | None = None, config_path: str | None = None) -> str:
    """Capture the transcript; inject memory before each prompt.

    On UserPromptSubmit and SessionStart (startup, compact, resume) print the memory as
    additionalContext. Never fails: errors go to `memory status`.

    \f
    (click's help ends at the form feed: what follows is for code, not for --help.)
    Returns what to print (possibly nothing); this is the host's registered hook.
    """
    try:
        report = handle_bytes(stdin, db_path=db_path, config_path=config_path)
    except BaseException as error:  # the host must go on, whatever happened here
        _pending_error(db_path, f"hook crashed: {type(error).__name__}: {error}")
        return ""
    if report.output is None:
        return ""
    return json.dumps(report.output, ensure_ascii=False)


def run_from_stdin() -> None:
    """Read a payload on stdin, print the answer if any, exit 0."""
    out = main(sys.stdin.buffer.read(), db_path=os.environ.get("MEMPLUG_DB") or None)
    if out:
        sys.stdout.write(out + "\n")
        sys.stdout.flush()


def handle_bytes(
    stdin: bytes, *, db_path: str | None = None, config_path: str | None = None
) -> HookReport:
    try:
        payload = json.loads(stdin.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        payload = f"the hook payload is not JSON ({type(error).__name__})"
    if not isinstance(payload, dict):
        report = HookReport()
        if not isinstance(payload, str):
            payload = f"the hook payload is a JSON {type(payload).__name__}, not an object"
        report.errors.append(payload)
        _record(None, db_path, config_path, report)
        return report
    return handle(payload, db_path=db_path, config_path=config_path)


def handle(
    payload: Mapping[str, Any], *, db_path: str | None = None, config_path: str | None = None
) -> HookReport:
    """Capture what the payload's transcripts gained and answer the hook. Never raises."""
    report = HookReport(
        event=_str(payload.get("hook_event_name")), session_id=_str(payload.get("session_id"))
    )
    plugin = None
    decision = None
    try:
        if report.event not in HOOK_EVENTS:
            raise ValidationError(f"unknown hook_event_name {report.event!r}")
        if report.session_id is None:
            raise ValidationError("the payload has no session_id")
        transcripts = plan(payload, report.event, report.session_id)
        if report.event == "PreToolUse":
            report.output = decision = precondition_output(payload, db_path, config_path)
        answers = report.event == "UserPromptSubmit" or (
            report.event == "SessionStart" and payload.get("source") in REINJECT_SOURCES
        )
        if not answers and not has_work(db_path, transcripts, report.event):
            return report
        plugin = open_hook_plugin(db_path, config_path, report)
        memory = plugin.memory
        report.opened = True
        deadline = Deadline(memory.config.hook.deadline_ms)
        memory.set_lock_wait(LOG_WAIT_MS)
        if not report.read_only:
            try:
                _drain_pending(plugin)
                capture_all(plugin, transcripts, report, deadline)
            except DatabaseReadOnly as error:  # found at the first write: still answer
                report.trouble, report.read_only = str(error), True
        if report.event not in TOOL_EVENTS and not report.read_only:
            # New events are embedded within a budget (a provider being on); the rest is
            # caught up by later hooks, and until then searches say `vectors_incomplete`.
            memory.embed_vectors(
                budget_ms=min(memory.config.semantic.capture_budget_ms, deadline.left_ms())
            )
        if answers:
            prompt = _str(payload.get("prompt"))
            cwd = _str(payload.get("cwd"))
            report.output = inject(plugin, report, prompt, deadline, project=cwd)
    except Exception as error:
        report.output = decision  # a broken precondition denies even if capture failed
        report.errors.append(f"{type(error).__name__}: {error}")
        if isinstance(error, DatabaseError | SchemaTooNew) and not isinstance(error, DatabaseBusy):
            report.trouble = report.trouble or str(error)
    finally:
        if report.errors or report.skipped:
            _record(plugin, db_path, config_path, report)
        if plugin is not None:
            plugin.close()
    return told(report, db_path)


def open_hook_plugin(db_path: str | None, config_path: str | None, report: HookReport) -> Plugin:
    """The database opened for writing; for reading only when writing fails and reading
    works (a file this user cannot write is still memory to inject from). Its errors go
    to the error log, or beside the database when the log cannot take them."""
    from memplug.plugin import open_plugin

    errors = _error_sink(db_path)
    try:
        return open_plugin(db_path, config_path=config_path, errors=errors)
    except DatabaseReadOnly as error:
        report.trouble = str(error)
    plugin = open_plugin(
        db_path, config_path=config_path, create=False, readonly=True, errors=errors
    )
    report.read_only = True
    return plugin


def told(report: HookReport, db_path: str | None) -> HookReport:
    """The report with the person told of a database failure, once (``notice``)."""
    if report.trouble is None:
        return report
    from memplug.hosts import notice  # the failure path only

    try:
        text = notice.notice_text(report.trouble, report.read_only)
        message = notice.tell_once(default_db_path(db_path), text)
    except Exception:  # telling is a courtesy; the host must go on
        return report
    if message is not None:
        report.output = {**(report.output or {}), "systemMessage": message}
    return report


# -- capture --------------------------------------------------------------------------


def plan(payload: Mapping[str, Any], event: str, session_id: str) -> list[Transcript]:
    """The payload's transcript and, outside tool hooks, its subagents' transcripts."""
    main_path = _str(payload.get("transcript_path"))
    if main_path is None:
        return []
    path = Path(main_path)
    final = event in FLUSHING_EVENTS
    files = [Transcript(path, session_id, final)]
    agent = _str(payload.get("agent_transcript_path"))
    if event == "SubagentStop" and agent is not None:
        files.append(Transcript(Path(agent), f"{session_id}/{Path(agent).stem}", True))
    elif event not in TOOL_EVENTS:  # tool hooks run on the agent's hot loop
        for sub in cc.subagent_paths(path):
            files.append(Transcript(sub, f"{session_id}/{sub.stem}", final))
    return files


def has_work(db_path: str | None, transcripts: list[Transcript], event: str) -> bool:
    """Whether any transcript grew (or holds a message to flush) since it was read, or,
    outside tool hooks, what a tool hook captured still waits to be derived."""
    if not transcripts:
        return False
    from memplug.memory import Memory

    sessions = [t.session_id for t in transcripts]
    saved = Memory.saved_cursors(db_path, sessions)
    if any(_grew(t, saved.get(t.session_id), event) for t in transcripts):
        return True
    return event not in TOOL_EVENTS and Memory.derivation_lags(db_path, sessions)


def _grew(
    transcript: Transcript, saved: Mapping[str, Any] | None, event: str | None = None
) -> bool:
    """Whether the file has bytes not read yet, or a held message to flush; for a tool
    hook (``event``), more than it leaves to the turn's end (``claude_idle.due``)."""
    try:
        size = transcript.path.stat().st_size
    except OSError:
        return True
    return due(size, saved, transcript.final, event)


def capture_all(
    plugin: Plugin, transcripts: list[Transcript], report: HookReport, deadline: Deadline
) -> None:
    memory = plugin.memory
    sessions: set[str] = set()
    for transcript in transcripts:
        if report.skipped:
            break
        if not transcript.path.is_file():
            report.errors.append(f"transcript {transcript.path} does not exist")
            continue
        new, present = capture_transcript(plugin, transcript, report, deadline)
        report.captured += new
        report.present += present
        report.transcripts += 1
        if new:
            sessions.add(transcript.session_id)
    if report.event in TOOL_EVENTS:
        # Derivation (its rules cost a tool hook most of its time) waits for the next
        # prompt or Stop: derive() takes up every session whose extraction lags.
        return
    # Nothing new and nothing a tool hook left: a prompt pays for no derivation check.
    if sessions or memory.derivation_waits():
        from memplug.memory import UPGRADE_STEP_MS  # loaded with the open database

        # Re-deriving what older rules made is paced to the deadline (docs/storage.md).
        memory.derive(sessions, upgrade_ms=min(UPGRADE_STEP_MS, deadline.left_ms() / 2))
    if report.event in FLUSHING_EVENTS:
        # Between model calls the main agent's latest assistant message is its reply,
        # not the text before a tool call: that is the one the checks are for.
        try:
            memory.validate_new([str(report.session_id)], trigger=HOST)
        except Exception as error:
            report.errors.append(f"validation: {type(error).__name__}: {error}")


def capture_transcript(
    plugin: Plugin, transcript: Transcript, report: HookReport, deadline: Deadline
) -> tuple[int, int]:
    """Read one transcript from its cursor and store what is new; ``(new, present)``.

    Each read is one write transaction holding the events, their links and the moved
    cursor, so a crash never moves the cursor past uncaptured events, and two hooks
    running at once take turns. Reads are bounded, so a long first capture stops at
    the deadline and resumes with the next hook.
    """
    session_id, path = transcript.session_id, transcript.path
    if transcript.reread:
        return reread_transcript(plugin, transcript, report)
    new = present = 0
    while True:
        if not _grew(transcript, plugin.saved_cursor(session_id)):
            return new, present  # checked without the write lock another hook may hold
        wait = int(min(LOCK_WAIT_MS, deadline.left_ms() / 2))
        if wait <= 0:
            report.errors.append(f"capture of {path.name} stopped at the deadline; resumes later")
            return new, present
        # Imported once there is something to validate: pydantic is most of a hook's
        # import time, and a prompt hook usually finds the transcript already read.
        from memplug.base.events import parse_event

        try:
            with plugin.session_writes(session_id, lock_wait_ms=wait) as writes:
                state = cc.CursorState.from_dict(writes.cursor)
                result = cc.read_transcript(
                    path,
                    state,
                    session_id=session_id,
                    resolve=writes.resolve,
                    final=transcript.final,
                )
                events = []
                for event in result.events:
                    try:
                        events.append(parse_event(event))
                    except ValidationError as error:
                        report.errors.append(f"{session_id}:{event.get('seq')}: {error}")
                inserted = writes.store(events, origin=HOST)
                writes.link(result.links)
                writes.move_cursor(HOST, str(path), result.state.offset, result.state.to_dict())
        except DatabaseBusy:
            report.skipped = (
                "capture skipped: another process held the database's write lock; "
                "the next hook catches up"
            )
            return new, present
        new += inserted.new
        present += inserted.present
        if result.errors:
            report.errors.append(f"{path.name}: {len(result.errors)} malformed line(s) skipped")
        if not result.more:
            return new, present


def reread_transcript(
    plugin: Plugin, transcript: Transcript, report: HookReport
) -> tuple[int, int]:
    """The whole file read again, without the database's links: the same events and
    seqs an incremental read gives (tests/test_hook.py), so what is stored already is
    counted present and each malformed line is reported again. The saved cursor only
    moves forward, so a hook reading on from it never goes back."""
    from memplug.base.events import parse_event

    session_id = transcript.session_id
    result = cc.read_all(transcript.path, session_id=session_id)
    events = []
    for event in result.events:
        if transcript.project is not None:
            event["project"] = transcript.project
        try:
            events.append(parse_event(event))
        except ValidationError as error:
            report.errors.append(f"{session_id}:{event.get('seq')}: {error}")
    with plugin.session_writes(session_id) as writes:
        inserted = writes.store(events, origin=HOST)
        writes.link(result.links)
        saved = writes.cursor
        if saved is None or int(saved.get("offset", 0)) <= result.state.offset:
            state = result.state
            writes.move_cursor(HOST, str(transcript.path), state.offset, state.to_dict())
    if result.errors:
        name = transcript.path.name
        report.errors.append(f"{name}: {len(result.errors)} malformed line(s) skipped")
    return inserted.new, inserted.present


# -- preconditions ----------------------------------------------------------------------


def precondition_output(
    payload: Mapping[str, Any], db_path: str | None, config_path: str | None
) -> dict[str, Any] | None:
    """A ``deny`` for a tool call that breaks a ``validation.preconditions`` entry; None
    lets Claude Code's own permission flow decide. Needs the config only, no database."""
    database = default_db_path(db_path)
    if not _may_name_preconditions(database, config_path):
        return None
    from memplug.base.config import load_for_database

    config = load_for_database(database, config_path).config
    if not config.validation.preconditions:
        return None
    from memplug.base.preconditions import check_preconditions

    tool_input = payload.get("tool_input")
    found = check_preconditions(
        config.validation.preconditions,
        _str(payload.get("tool_name")) or "",
        tool_input if isinstance(tool_input, Mapping) else {},
        _str(payload.get("cwd")),
    )
    if found.allow:
        return None
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": found.reason,
        }
    }


def _may_name_preconditions(database: Path, config_path: str | None) -> bool:
    """A cheap look before the config is validated (which builds its models, a cost
    every tool call would pay): False when neither the file's ``[validation]`` table
    nor a variable sets preconditions. What cannot be read is left to the loader."""
    if any(name.startswith("MEMPLUG_VALIDATION__") for name in os.environ):
        return True
    import tomllib

    path, named = config_file(database, config_path)
    try:
        validation = tomllib.loads(path.read_text(encoding="utf-8")).get("validation")
    except OSError:
        return named  # a missing --config file is an error the loader reports
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return True
    return validation is not None and (
        not isinstance(validation, dict) or "preconditions" in validation
    )


# -- injection ------------------------------------------------------------------------


def inject(
    plugin: Plugin,
    report: HookReport,
    prompt: str | None,
    deadline: Deadline,
    *,
    project: str | None = None,
    mcp: bool | None = None,
) -> dict[str, Any] | None:
    """Assemble for this step and wrap it as the hook's documented JSON output
    (``project``: the payload's cwd, whose core a session with no events yet gets;
    ``mcp``: whether memplug's MCP tools are the agent's, None to read Claude Code's
    settings)."""
    from memplug.base.messages import Message, Source
    from memplug.hosts.claude_skill import MCP_SERVER
    from memplug.plugin import HostStep

    memory = plugin.memory
    session_id, event = str(report.session_id), str(report.event)
    project = project_of(project)  # a worktree or a subfolder: its repository's project
    cap = memory.config.hook.max_context_chars
    # Only text that items are extracted from or that may be quoted can make a
    # candidate "visible"; long tool output would only slow the comparison down.
    sources = VISIBLE_TYPES | set(memory.config.assembly.evidence_types)
    visible = visible_events(plugin, session_id)
    messages = tuple(_visible_message(e) for e in visible if e["type"] in sources)
    if event == "UserPromptSubmit":
        own = Source(kind=MEMPLUG_SOURCE_KIND)
        logged = logged_injections(plugin, session_id, visible)
        messages += tuple(Message(role="user", text=text, source=own) for text in logged)
    result = plugin.step(
        HostStep(
            session_id=session_id,
            trigger=f"{HOST}:{event}",
            query=prompt,
            messages=messages,
            turn=_turn(plugin, session_id, event),
            project=project,
            summary=work_at_hand(visible) if event == "SessionStart" else None,
            standing=cc.standing_files(project),
            mcp=cc.mcp_registered(project, MCP_SERVER) if mcp is None else mcp,
            max_chars=cap,
            # A write lock held elsewhere must not stall the prompt: the log waits briefly.
            lock_wait_ms=int(min(LOG_WAIT_MS, deadline.left_ms())) or 1,
        )
    )
    report.errors.extend(f"assembly: {e}" for e in result.errors)
    return hook_output(result, event, cap, report)


def hook_output(
    result: AssemblyResult, event: str, cap: int, report: HookReport
) -> dict[str, Any] | None:
    if not result.injected or not result.text:
        return None
    text = result.text
    if len(text) > cap:
        # The budget keeps the text under the cap; this only guards the promise.
        text = text[: max(0, text.rfind("\n", 0, cap))]
        report.errors.append(
            f"additionalContext of assembly {result.assembly_id} cut to {len(text)} characters"
        )
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}


def logged_injections(
    plugin: Plugin, session_id: str, visible: list[Mapping[str, Any]]
) -> list[str]:
    """memplug's injections still in the model's context when the transcript does not
    record them (it holds neither an attachment nor a reminder of memplug's): this
    session's logged prompt injections since its context began — the latest
    SessionStart (every source starts a context) or the latest compaction, whichever
    came last. A SessionStart's own injection is not counted: without a record of it
    nothing says the host kept it, and the next prompt may need what it restored."""
    if any(e.get("source_kind") == MEMPLUG_SOURCE_KIND for e in visible):
        return []  # the host keeps its own record: that one is the truth
    memory = plugin.memory
    since = None
    if visible and visible[0]["type"] == "compaction/start":
        start = memory.session_events(
            session_id, after_seq=int(visible[0]["seq"]) - 1, types=["compaction/start"]
        )
        since = start[0].turn if start else None
    texts: list[str] = []
    for row in memory.assembly_summaries(session_id, LOGGED_INJECTIONS):
        started = str(row["trigger"]).endswith(":SessionStart")
        turn = row["turn"]
        if since is not None and (turn is None or turn < since or (turn == since and not started)):
            break  # before the compaction: no longer in the context
        wanted = row["injected"] and not started
        record = memory.assembly_log(int(row["id"])) if wanted else None
        if record is not None and record.text:
            texts.append(record.text)
        if started:
            break
    return texts


def work_at_hand(visible: list[Mapping[str, Any]]) -> str | None:
    """What the compaction summary in the context says the work at hand is: its
    current-work, pending and next-step parts (Claude Code numbers them), else its end;
    without the boilerplate around them. None when the context holds no summary."""
    summary = next(
        (str(e["text"]) for e in reversed(visible) if e["type"] == "compaction/summary"), None
    )
    if not summary:
        return None
    summary = summary.split(_SUMMARY_TAIL, 1)[0]
    parts = _SUMMARY_PART.split(summary)
    wanted = [
        parts[i] + parts[i + 1] for i in range(1, len(parts) - 1, 2) if _AT_HAND.search(parts[i])
    ]
    focus = "\n".join(wanted) if wanted else summary[-SUMMARY_CHARS:]
    return focus[:SUMMARY_CHARS]


def _visible_message(event: Mapping[str, Any]) -> Message:
    from memplug.base.messages import Message, Source

    form = COMPACT_SUMMARY_FORM if event["type"] == "compaction/summary" else None
    kind = event.get("source_kind") or None
    source = Source(kind=kind, form=form) if kind or form else None
    return Message(role=event["role"] or "user", text=event["text"], source=source)


def visible_events(plugin: Plugin, session_id: str) -> list[Mapping[str, Any]]:
    """What the model still sees: the active path since the latest compaction."""
    events = plugin.context_events(session_id, VISIBLE_CHARS)
    return cc.model_context(events)


def _turn(plugin: Plugin, session_id: str, event: str) -> int | None:
    saved = plugin.saved_cursor(session_id)
    if saved is None:
        return None
    turn = int(saved.get("turn") or 0)
    # The prompt being submitted is not in the transcript yet: it opens the next turn.
    return turn + 1 if event == "UserPromptSubmit" else turn


# -- errors that must not be lost -------------------------------------------------------


def _record(
    plugin: Plugin | None, db_path: str | None, config_path: str | None, report: HookReport
) -> None:
    """File the report's errors through the plugin (the error log, else beside the
    database); with no plugin open, through one opened for them."""
    # The stage ("hook") is logged beside the line: the prefix names the hook event only.
    prefix = f"[{report.event}] " if report.event else ""
    lines = [prefix + e for e in report.errors]
    if report.skipped:
        lines.append(prefix + report.skipped)
    if plugin is None:
        from memplug.plugin import open_plugin

        try:
            plugin = open_plugin(db_path, config_path=config_path, errors=_error_sink(db_path))
        except Exception:
            for line in lines:
                _pending_error(db_path, line, report.session_id)
            return
        with plugin:
            _record(plugin, db_path, config_path, report)
        return
    # A failing database: the sink keeps each line beside it.
    with contextlib.suppress(Exception):
        plugin.memory.set_lock_wait(LOG_WAIT_MS)
    for line in lines:
        plugin.record("hook", line, report.session_id)


def _error_sink(db_path: str | None) -> ErrorSink:
    """The hook's error sink: the database's error log, else the file beside it that
    the next hook drains (``_drain_pending``), so that no error is lost."""

    def sink(
        memory: Memory, stage: str, message: str, session_id: str | None, seq: int | None
    ) -> None:
        try:
            memory.record_error(stage, message, session_id, seq)
        except Exception:
            _pending_error(db_path, message, session_id)

    return sink


def _pending_error(db_path: str | None, message: str, session_id: str | None = None) -> None:
    try:
        database = default_db_path(db_path)
        if not database.parent.is_dir():
            database.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
        line = json.dumps({"message": message, "session_id": session_id}, ensure_ascii=False)
        fd = os.open(hook_pending_file(database), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as stream:
            stream.write(line + "\n")
    except Exception:  # nowhere left to keep it; the host must go on
        pass


def _drain_pending(plugin: Plugin) -> None:
    """Move errors kept beside the database into ``error_log``."""
    memory = plugin.memory
    path = hook_pending_file(memory.path)
    if not path.exists():
        return
    claimed = path.with_name(f"{path.name}.{os.getpid()}")
    try:
        os.rename(path, claimed)
    except OSError:
        return  # another hook claimed it first
    kept: list[str] = []
    for raw in claimed.read_text(encoding="utf-8").splitlines():
        try:
            item = json.loads(raw)
        except ValueError:
            continue  # a torn line from a crashed writer says nothing usable
        try:
            memory.record_error("hook", str(item.get("message")), item.get("session_id"))
        except Exception:
            kept.append(str(item.get("message")))
    claimed.unlink()
    for message in kept:
        _pending_error(str(memory.path), message)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


if __name__ == "__main__":
    run_from_stdin()
