"""Work records: what the agent did, derived from tool calls and their results.

A coding session's user types little; what a later step (after a compaction) or a
later session (the next day) needs is which files were touched, which commands ran
and whether they failed. A work record keeps exactly that, and only the structural
part of it (see docs/assembly.md, "Work"):

* from the call: the tool, and one field of its input — the file path of a
  Read/Edit/Write/MultiEdit/NotebookEdit, the first line of a Bash command, the pattern
  of a Grep/Glob, the description of a Task (subagent) — clipped to one short line,
  with any credential in it replaced by a marker (``PGPASSWORD=[redacted:password]``);
* from the result: the outcome (ok, failed, interrupted, timed out) and an exit code
  read from the result's first characters. Never the text of the tool's output.

Records are a pure function of a session's events taken in seq order (the deriver
follows extraction), so a rebuild, or the same events captured in another batch, gives
the same rows.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from msgspec.structs import replace

from memplug.base.redaction import redact_secrets
from memplug.base.text import tool_arguments
from memplug.derive.ahead import served
from memplug.store.ports import Storage
from memplug.store.records import EventRow, WorkRow

# A target longer than this is clipped: it is a label, not a copy of the input.
TARGET_CHARS = 160

# Per tool (lower case, without `_` and `-`): the action word and the input fields that
# name its target. Claude Code's names, and the plain ones other hosts use.
_FILE_KEYS = ("file_path", "notebook_path", "path")
_COMMAND_KEYS = ("command", "cmd")
TOOL_ACTIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "read": ("read", _FILE_KEYS),
    "readfile": ("read", _FILE_KEYS),
    "notebookread": ("read", _FILE_KEYS),
    "edit": ("edited", _FILE_KEYS),
    "editfile": ("edited", _FILE_KEYS),
    "multiedit": ("edited", _FILE_KEYS),
    "notebookedit": ("edited", _FILE_KEYS),
    "write": ("wrote", _FILE_KEYS),
    "writefile": ("wrote", _FILE_KEYS),
    "bash": ("ran", _COMMAND_KEYS),
    "shell": ("ran", _COMMAND_KEYS),
    "runcommand": ("ran", _COMMAND_KEYS),
    "grep": ("searched", ("pattern",)),
    "glob": ("searched", ("pattern",)),
    "task": ("delegated", ("description",)),
    "agent": ("delegated", ("description",)),
}
_PATHLIKE = re.compile(r"[\w.~-]*[/.][\w./~-]*")
ACTIONS: tuple[str, ...] = ("read", "edited", "wrote", "ran", "searched", "delegated", "called")

# Words the index holds beside the target, so that a question's own words ("which
# files did we change", "why did the test fail") find the records they describe.
ACTION_WORDS: dict[str, str] = {
    "read": "read file",
    "edited": "edit edited changed modified file",
    "wrote": "write wrote created new file",
    "ran": "ran run command",
    "searched": "search searched",
    "delegated": "delegated subagent agent task",
    "called": "called tool",
}
OUTCOME_WORDS: dict[str, str] = {
    "succeeded": "ok passed succeeded",
    "failed": "failed error",
    "aborted": "interrupted",
    "timed_out": "timed out failed",
}
_EXIT = re.compile(r"\A\s*(?:exit code|exit status|exit)[:\s]\s*(-?\d{1,5})\b", re.IGNORECASE)
# Only from the start of a run, and without giving back (`++`): the plain form retried
# every later start inside each long word and was the most of a record's Python cost.
_JOINED = re.compile(r"(?<![^\W_])[^\W_]++(?:[_-][^\W_]++)+")
# Sessions whose calls the deriver keeps in memory (one is derived at a time).
CALL_SESSIONS = 4


@served
def describe(tool: str, text: str, cwd: str | None) -> tuple[str, str]:
    """``(action, target)`` for a call: the action word and its one structural field,
    read from the call's JSON input, or — a host that stores the input as plain text —
    from the text itself (a command, or the path it starts with)."""
    action, keys = _tool_action(tool)
    arguments = tool_arguments(text, tool)
    if arguments is not None:
        found = (arguments[k] for k in keys if isinstance(arguments.get(k), str))
        value = next(found, None)
    elif keys:
        value = _plain_value(text, keys is _FILE_KEYS)
    else:
        value = None
    if not value:
        return "called", ""
    if action == "ran":
        value = first_line(value)
    elif keys is _FILE_KEYS:
        value = relative(value, cwd)
    # Withheld before the clip, which could cut a secret short of its recognisable shape;
    # the record, its index words and every line quoting it then never hold the value.
    return action, clip(redact_secrets(" ".join(value.split()), named=True))


@lru_cache(maxsize=256)
def _tool_action(tool: str) -> tuple[str, tuple[str, ...]]:
    """The action word and target fields of a tool, by its name in any spelling."""
    return TOOL_ACTIONS.get(re.sub(r"[_\s-]", "", tool.lower()), ("called", ()))


def _plain_value(text: str, path: bool) -> str | None:
    if not path:
        return first_line(text)
    head = text.strip().split(None, 1)[0].rstrip(":") if text.strip() else ""
    return head if _PATHLIKE.fullmatch(head) else None


def first_line(command: str) -> str:
    lines = [line for line in command.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    return lines[0].strip() + (" …" if len(lines) > 1 else "")


def relative(path: str, cwd: str | None) -> str:
    """A path under the session's working directory, written relative to it."""
    if cwd:
        root = cwd.rstrip("/") + "/"
        if path.startswith(root) and len(path) > len(root):
            return path[len(root) :]
    return path


def clip(text: str, limit: int = TARGET_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def exit_code(text: str) -> int | None:
    """The exit code a shell result states first (``Exit code 2``), if it does."""
    found = _EXIT.match(text[:64])
    return int(found.group(1)) if found else None


def words(tool: str, action: str, target: str, outcome: str | None) -> str:
    """What the trigram index holds beside the target: its snake- and kebab-case names
    joined (``subagent_live_test`` → ``subagentlivetest``), the tool, and the action's
    and outcome's words."""
    # The trigram index finds `subagent` and `live` inside `subagent_live.ex` already;
    # `ash_computer` is also written joined, so that "AshComputer" (lower-cased) finds it.
    # A joined name holds a "_" or "-": most targets hold neither and skip the scan.
    names = _JOINED.findall(target) if "_" in target or "-" in target else []
    joined = [w.replace("_", "").replace("-", "") for w in names]
    out = [" ".join(joined), tool, ACTION_WORDS.get(action, action)]
    if outcome:
        out.append(OUTCOME_WORDS.get(outcome, outcome))
    return " ".join(p for p in out if p).lower()


class WorkDeriver:
    """Derives a session's work records from its tool calls and results: an extraction
    follower (:class:`memplug.derive.rederive.Follower`), so it sees every event once, in seq
    order, and is cleared whenever the session is derived again."""

    # Recorded with the derived rows; raise it with a change to them (rederive.Follower).
    name = "work"
    version = 2

    def __init__(self, store: Storage) -> None:
        self.store = store
        # Per session cleared by this deriver, the first record of each call id: every
        # record it has was written here, so a result finds its call without a query.
        self._firsts: OrderedDict[str, dict[str, WorkRow]] = OrderedDict()

    def clear(self, session_id: str) -> None:
        self.store.work.clear(session_id)
        self._firsts[session_id] = {}
        self._firsts.move_to_end(session_id)
        while len(self._firsts) > CALL_SESSIONS:
            self._firsts.popitem(last=False)

    def follow(self, event: EventRow, items: Sequence[Any]) -> None:
        """Record a call, or settle the call a result answers (``items`` are not read)."""
        if event.generated:
            return
        if event.type == "tool/call":
            self._call(event)
        elif event.type == "tool/result":
            self._result(event)

    def prepare(self, event: EventRow) -> None:
        if event.type == "tool/call" and not event.generated:
            describe(*self._described(event))

    def _described(self, event: EventRow) -> tuple[str, str, str | None]:
        """The arguments of :func:`describe` for a call."""
        tool = event.tool_name or (event.text.split(" ", 1)[0] if event.text else "") or "tool"
        text = self.store.events.full_text(event) if event.truncated else event.text
        return tool, text, event.cwd

    def _call(self, event: EventRow) -> None:
        tool, text, cwd = self._described(event)
        action, target = describe(tool, text, cwd)
        row = WorkRow(
            session_id=event.session_id,
            seq=event.seq,
            call_id=event.call_id,
            tool=tool,
            action=action,
            target=target,
            result_seq=None,
            outcome=None,
            exit_code=None,
            turn=event.turn,
            event_time=event.event_time,
            project=event.project or event.cwd,
            words=words(tool, action, target, None),
        )
        self.store.work.insert(row)
        firsts = self._firsts.get(event.session_id)
        if firsts is not None and event.call_id:
            firsts.setdefault(event.call_id, row)

    def _result(self, event: EventRow) -> None:
        if not event.call_id:
            return
        firsts = self._firsts.get(event.session_id)
        if firsts is None:
            self._settle(event, self.store.work.by_call(event.session_id, event.call_id))
        elif not self._settle(event, firsts.get(event.call_id)):
            # A record kept here whose write a failed pass took back: ask the table.
            self._settle(event, self.store.work.by_call(event.session_id, event.call_id))

    def _settle(self, event: EventRow, row: WorkRow | None) -> bool:
        """Settle ``row`` by the result; False only when the record is not stored."""
        if row is None or event.seq < row.seq:
            return True
        outcome = event.outcome or ("failed" if event.is_error else "succeeded")
        return self.store.work.set_result(
            replace(
                row,
                result_seq=event.seq,
                outcome=outcome,
                exit_code=exit_code(event.text),
                words=words(row.tool, row.action, row.target, outcome),
            )
        )
