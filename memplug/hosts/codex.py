"""Codex CLI rollouts → memplug host events, read incrementally from a byte offset.

A Codex session is one JSONL file, ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-….jsonl``,
that Codex only appends to: each line ``{timestamp, type, payload}`` with ``type`` one of
``session_meta``, ``turn_context``, ``response_item``, ``event_msg``, ``compacted``
(docs/codex.md; ``../shared/data/codex/README.md`` for the observed versions). Codex logs
most things twice, once for the model (``response_item``) and once for its UI
(``event_msg``); one of each pair is read:

* a typed prompt is ``event_msg:user_message`` (the user-role ``response_item`` messages
  also carry the injected AGENTS.md and environment context, which are not the person's
  words: they become ``agent-instructions`` / ``runtime-context`` events, never ranked as
  the user's);
* an assistant message, a reasoning summary (``assistant/thinking``; encrypted reasoning is
  skipped), a tool call (``function_call``, ``custom_tool_call``, ``local_shell_call``) and
  its output are ``response_item`` records;
* a ``compacted`` record is a ``compaction/start`` and, when it has text, a
  ``compaction/summary``.

Everything else is known bookkeeping (``token_count``, the UI's duplicates) and dropped
with a count; a record of a type this reader does not know is counted in ``unknown``,
never fatal. The same bytes give the same events and seqs however the file is cut into
reads. Only the standard library: the hook that calls it is a fresh process.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from msgspec import Struct, field

from memplug.base.vocab import COMPACT_SUMMARY_FORM

HOST = "codex"
# At most this much of a rollout is read by one call; the next call goes on from there.
READ_BYTES = 8 << 20
# The user-role messages Codex injects, by how they begin: (prefix, source kind, form).
INJECTED: tuple[tuple[str, str, str], ...] = (
    ("<environment_context>", "runtime-context", "environment-context"),
    ("# AGENTS.md instructions", "agent-instructions", "agents-md"),
    ("<user_instructions>", "agent-instructions", "user-instructions"),
    ("<permissions instructions>", "agent-instructions", "permissions"),
)
TOOL_CALLS = ("function_call", "custom_tool_call", "local_shell_call")
TOOL_OUTPUTS = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")
# What is read from another record of the pair, or is the UI's bookkeeping.
KNOWN_DROPPED = frozenset({
    "event_msg:agent_message", "event_msg:agent_reasoning", "event_msg:token_count",
    "event_msg:turn_aborted", "event_msg:task_started", "event_msg:task_complete",
    "event_msg:context_compacted", "event_msg:exec_command_end", "event_msg:patch_apply_end",
    "event_msg:web_search_end", "event_msg:agent_reasoning_raw_content", "turn_context",
    "response_item:web_search_call", "response_item:compaction", "response_item:ghost_snapshot",
})  # fmt: skip
_EXIT = re.compile(r"(?:^Exit code: |Process exited with code )(-?\d+)", re.M)


class RolloutCursor(Struct):
    """Where the next read starts, and what the reader must remember across reads."""

    offset: int = 0
    next_seq: int = 1
    turn: int = 0
    session_id: str | None = None
    cwd: str | None = None
    pending: dict[str, str] = field(default_factory=dict)
    dropped: int = 0
    unknown: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__struct_fields__}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> RolloutCursor:
        known = {k: v for k, v in (data or {}).items() if k in cls.__struct_fields__}
        return cls(**known)


class RolloutRead(Struct):
    events: list[dict[str, Any]]
    cursor: RolloutCursor
    more: bool = False
    malformed: int = 0


def session_id_of(path: Path | str) -> str | None:
    """The rollout's session id (``session_meta.payload.id``, its first line)."""
    with open(path, "rb") as stream:
        first = stream.readline(1 << 20)
    try:
        record = json.loads(first)
    except ValueError:
        return None
    payload = record.get("payload") if isinstance(record, dict) else None
    if record.get("type") != "session_meta" or not isinstance(payload, dict):
        return None
    value = payload.get("id")
    return value if isinstance(value, str) and value else None


def is_rollout(path: Path | str) -> bool:
    try:
        return session_id_of(path) is not None
    except OSError:
        return False


def rollouts_in(folder: Path) -> list[Path]:
    """Every rollout under ``folder`` (``~/.codex/sessions`` and its date folders)."""
    return [p for p in sorted(folder.rglob("*.jsonl")) if p.is_file() and is_rollout(p)]


def read_rollout(path: Path, cursor: RolloutCursor) -> RolloutRead:
    """The events of the complete lines after ``cursor.offset``; a line still being
    written waits for the next read."""
    state = RolloutCursor.from_dict(cursor.to_dict())
    with open(path, "rb") as stream:
        stream.seek(state.offset)
        data = stream.read(READ_BYTES)
    end = data.rfind(b"\n") + 1
    events: list[dict[str, Any]] = []
    malformed = 0
    for raw in data[:end].splitlines():
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except ValueError:
            malformed += 1
            continue
        if isinstance(record, dict):
            events.extend(_events(record, state))
    state.offset += end
    return RolloutRead(events, state, more=len(data) == READ_BYTES and end > 0,
                       malformed=malformed)  # fmt: skip


def read_all(path: Path) -> RolloutRead:
    """The whole rollout (for tests and benchmarks)."""
    cursor, events, malformed = RolloutCursor(), [], 0
    while True:
        read = read_rollout(path, cursor)
        events += read.events
        malformed += read.malformed
        cursor = read.cursor
        if not read.more:
            return RolloutRead(events, cursor, malformed=malformed)


# -- records → events -----------------------------------------------------------------------


def _events(record: dict[str, Any], state: RolloutCursor) -> Iterator[dict[str, Any]]:
    kind = str(record.get("type"))
    payload = record.get("payload") if isinstance(record.get("payload"), dict) else {}
    assert isinstance(payload, dict)
    sub = payload.get("type")
    name = f"{kind}:{sub}" if kind in ("event_msg", "response_item") else kind
    made: list[dict[str, Any]] = []
    if kind == "session_meta":
        state.session_id = state.session_id or str(payload.get("id") or "")
        state.cwd = payload.get("cwd") or state.cwd
        made = [{"type": "session/start", "role": "system", "text": "",
                 "source": {"kind": "host-generated", "form": "session-meta"},
                 "host_version": payload.get("cli_version"),
                 "originator": payload.get("originator")}]  # fmt: skip
    elif kind == "turn_context":
        state.cwd = payload.get("cwd") or state.cwd
    elif name == "event_msg:user_message":
        made = _prompt(payload, state)
    elif name == "response_item:message":
        made = _message(payload)
    elif name == "response_item:reasoning":
        made = _reasoning(payload)
    elif kind == "response_item" and sub in TOOL_CALLS:
        made = [_call(payload, state)]
    elif kind == "response_item" and sub in TOOL_OUTPUTS:
        made = [_output(payload, state)]
    elif kind == "compacted":
        made = _compaction(payload)
    elif name in KNOWN_DROPPED:
        state.dropped += 1
    else:
        state.unknown[name] = state.unknown.get(name, 0) + 1
    for event in made:
        yield _common(event, record, state)


def _common(event: dict[str, Any], record: dict[str, Any], state: RolloutCursor) -> dict[str, Any]:
    event.update(session_id=state.session_id or "", seq=state.next_seq, turn=state.turn,
                 host=HOST)  # fmt: skip
    state.next_seq += 1
    if isinstance(record.get("timestamp"), str):
        event["time"] = record["timestamp"]
    if state.cwd:
        event["cwd"] = state.cwd
    return {k: v for k, v in event.items() if v is not None}


def _prompt(payload: dict[str, Any], state: RolloutCursor) -> list[dict[str, Any]]:
    text = str(payload.get("message") or "")
    state.turn += 1
    return [{"type": "user/message", "role": "user", "text": text,
             "source": {"kind": "user", "form": "prompt"}}]  # fmt: skip


def _texts(content: Any) -> str:
    if not isinstance(content, list):
        return ""
    return "\n".join(str(b.get("text") or "") for b in content
                     if isinstance(b, dict) and b.get("type") in ("input_text", "output_text",
                                                                 "text"))  # fmt: skip


def _message(payload: dict[str, Any]) -> list[dict[str, Any]]:
    role, text = payload.get("role"), _texts(payload.get("content"))
    if role == "assistant":
        return [{"type": "assistant/message", "role": "assistant", "text": text}]
    stripped = text.lstrip()
    for prefix, kind, form in INJECTED:
        if stripped.startswith(prefix):
            return [{"type": "user/message", "role": "user", "text": text,
                     "source": {"kind": kind, "form": form}}]  # fmt: skip
    # The typed prompt itself: read from its event_msg twin, so it is not taken twice.
    return []


def _reasoning(payload: dict[str, Any]) -> list[dict[str, Any]]:
    summary = payload.get("summary")
    text = "\n".join(str(s.get("text") or "") for s in summary or () if isinstance(s, dict))
    if not text.strip():
        return []  # encrypted only: nothing readable
    return [{"type": "assistant/thinking", "role": "assistant", "text": text}]


def _call(payload: dict[str, Any], state: RolloutCursor) -> dict[str, Any]:
    name = str(payload.get("name") or payload.get("type") or "?")
    if payload.get("type") == "local_shell_call":
        name = "local_shell"
        body = json.dumps(payload.get("action"), ensure_ascii=False)
    else:
        body = str(payload["arguments"] if "arguments" in payload else payload.get("input"))
    call_id = payload.get("call_id") or payload.get("id")
    if isinstance(call_id, str):
        state.pending[call_id] = name
    call_id = call_id if isinstance(call_id, str) else None
    return {"type": "tool/call", "role": "assistant", "text": f"{name} {body}",
            "tool_name": name, "call_id": call_id}  # fmt: skip


def _output(payload: dict[str, Any], state: RolloutCursor) -> dict[str, Any]:
    call_id = payload.get("call_id")
    name = state.pending.pop(call_id, None) if isinstance(call_id, str) else None
    text, code = _output_text(payload.get("output"))
    failed = code is not None and code != 0
    return {"type": "tool/result", "role": "tool", "text": text, "tool_name": name,
            "call_id": call_id if isinstance(call_id, str) else None,
            "outcome": "failed" if failed else "succeeded", "is_error": failed}  # fmt: skip


def _output_text(output: Any) -> tuple[str, int | None]:
    """A tool output's text and exit code: ``shell`` wraps it as JSON ``{output,
    metadata: {exit_code}}``; later tools print ``Exit code: N`` or ``Process exited with
    code N`` at the top."""
    text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if isinstance(data, dict) and "output" in data:
            code = (data.get("metadata") or {}).get("exit_code")
            return str(data["output"]), code if isinstance(code, int) else None
    found = _EXIT.search(text[:500])
    return text, int(found.group(1)) if found else None


def _compaction(payload: dict[str, Any]) -> list[dict[str, Any]]:
    start = {"kind": "host-generated", "form": "compacted"}
    made: list[dict[str, Any]] = [
        {"type": "compaction/start", "role": "system", "text": "", "source": start}
    ]
    summary = str(payload.get("message") or "")
    if summary.strip():
        source = {"kind": "compaction-checkpoint", "form": COMPACT_SUMMARY_FORM}
        made.append(
            {"type": "compaction/summary", "role": "system", "text": summary, "source": source}
        )
    return made


__all__ = [
    "HOST",
    "RolloutCursor",
    "RolloutRead",
    "is_rollout",
    "read_all",
    "read_rollout",
    "rollouts_in",
    "session_id_of",
]
