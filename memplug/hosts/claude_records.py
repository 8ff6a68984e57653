"""Claude Code transcript records → memplug host events: what each record becomes.

:mod:`memplug.hosts.claude_code` reads a transcript incrementally (offsets, the tail
check, held messages); the :class:`Mapper` here turns the records of one read into
events in the generic interchange form (plain dicts, exactly what ``memory import``
reads). Like the reader it imports nothing heavy: the hook that calls it is a fresh
process on every prompt.

Choices, and why:

* **Idempotent on uuid**: a record whose uuid is already known (earlier in the read,
  or to the resolver — the database) is skipped and counted as ``duplicate uuid``.
* **Split assistant messages**: text blocks of one message (records sharing
  ``message.id``) become one ``assistant/message`` event at the position of its first
  non-empty text block; thinking and tool_use blocks stay their own events. Should more
  text of an already flushed message arrive later, it becomes its own
  ``assistant/message`` with the same ``message_id``: nothing is lost.
* **Links**: ``uuid`` → ``entry_id`` and ``parentUuid`` → ``parent_id``. Records that
  yield no event (progress, bookkeeping) still carry links, so a kept record's parent
  is rewritten to its nearest kept ancestor. A parent nobody knows keeps the host's raw
  uuid and is flagged ``parent_unresolved``. A record that yields several events (a
  user record with several tool results) chains them: ``uuid``, ``uuid#1``, … each the
  parent of the next.
* **Compaction**: ``compact_boundary`` → ``compaction/start``; the ``isCompactSummary``
  record → ``compaction/summary``. The boundary's event continues the active path at
  ``logicalParentUuid`` when that record is known, else at the last main-chain event
  written before it (``continues_from`` says which).
* **memplug's own context**, which Claude Code writes back as an ``isMeta``
  ``<system-reminder>`` ("… hook additional context: [memplug] …"), gets
  ``source.kind = "memplug"``: never evidence, and an earlier injection to the assembler.
* **Hook context** that Claude Code 2.1.x records as an ``attachment`` of type
  ``hook_additional_context`` is captured the same way: memplug's own (it starts with
  the ``[memplug]`` header) as ``source.kind = "memplug"``, another hook's as generated
  text. Other attachments are bookkeeping and are dropped.
* **Generated text**: ``isMeta`` records, ``<system-reminder>``, ``<task-notification>``,
  slash-command output, caveats, interrupt markers, synthetic assistant messages and
  compaction text get ``source.kind = "host-generated"`` with a ``form`` naming what
  they are. A typed slash command is a ``command`` event from the user. A subagent's
  prompt was written by the main agent: ``agent-instructions``. Everything in a
  compaction agent's transcript is generated.
* **Sidechains**: a subagent file is its own session, ``<session>/agent-<id>``, whose
  events carry ``is_sidechain``, ``agent_id`` and ``parent_session_id``; the parent's
  Task tool result names it in ``subagent_session``.
* **Dropped on purpose** (counted in ``Mapper.dropped``): ``progress``,
  ``file-history-snapshot``, ``queue-operation``, bookkeeping ``system`` records,
  empty text blocks, redacted thinking, signatures, usage figures and
  ``toolUseResult`` payloads (the tool result's content already holds the text).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from msgspec import Struct, field

from memplug.base.patterns import lazy
from memplug.base.vocab import (
    COMPACT_SUMMARY_FORM,
    GENERATED_TEXT_MARKERS,
    MEMPLUG_SOURCE_FORM,
    MEMPLUG_SOURCE_KIND,
)

HOST = "claude-code"
PENDING_CALLS_CAP = 512
GENERATED = "host-generated"
# How Claude Code writes a hook's context back ("UserPromptSubmit hook additional
# context: …"), followed by the header every assembled memplug message starts with.
MEMPLUG_HEADER = "[memplug]"
MEMPLUG_MARK = "additional context: " + MEMPLUG_HEADER
AGENT_INSTRUCTIONS = "agent-instructions"

Event = dict[str, Any]
# Given uuids read before, answer those it knows: uuid → entry_id (None: a known root).
Resolver = Callable[[Sequence[str]], Mapping[str, str | None]]

# Records with no conversational content. The count is reported, the links are kept.
_SKIPPED_TYPES: dict[str, str] = {
    "progress": "progress: hook, bash and agent progress noise",
    "file-history-snapshot": "file-history-snapshot: file backup bookkeeping",
    "queue-operation": "queue-operation: prompt queue bookkeeping (the prompt arrives as a record)",
    "summary": "summary: session title written by the harness",
}

_COMMAND_NAME = lazy(r"<command-name>\s*(.*?)\s*</command-name>", re.S)
_COMMAND_ARGS = lazy(r"<command-args>(.*?)</command-args>", re.S)
_COMMAND_MESSAGE = lazy(r"<command-message>\s*(.*?)\s*</command-message>", re.S)
_BASH_INPUT = lazy(r"^<bash-input>(.*?)</bash-input>$", re.S)
_REMINDER = lazy(r"<system-reminder>.*?(?:</system-reminder>|\Z)", re.S)
_OUTPUT_TAGS = lazy(
    r"^<(local-command-stdout|local-command-stderr|bash-stdout|bash-stderr)>(.*?)</\1>\s*$", re.S
)
_REJECTED = "The user doesn't want to proceed with this tool use"


class CursorState(Struct):
    """Everything a read needs from the reads before it (kept by the caller, as JSON)."""

    offset: int = 0
    seen: int = 0
    next_seq: int = 1
    tail: str = ""
    turn: int = 0
    step: int = 0
    project: str | None = None
    last_main: str | None = None
    message_id: str | None = None
    context_start: int | None = None
    pending_calls: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "offset": self.offset,
            "seen": self.seen,
            "next_seq": self.next_seq,
            "tail": self.tail,
            "turn": self.turn,
            "step": self.step,
            "project": self.project,
            "last_main": self.last_main,
            "message_id": self.message_id,
            "context_start": self.context_start,
            "pending_calls": dict(self.pending_calls),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> CursorState:
        if not data:
            return cls()
        known = {k: data[k] for k in cls().to_dict() if k in data}
        known["pending_calls"] = dict(known.get("pending_calls") or {})
        return cls(**known)

    def copy(self) -> CursorState:
        return CursorState.from_dict(self.to_dict())


class Line(Struct, frozen=True):
    offset: int
    record: dict[str, Any]


def message_id_of(record: Mapping[str, Any]) -> str | None:
    message = record.get("message")
    if isinstance(message, dict) and isinstance(message.get("id"), str):
        return str(message["id"])
    uuid = record.get("uuid")
    return str(uuid) if uuid else None


# -- mapping ------------------------------------------------------------------------


class Mapper:
    """Maps the records of one read, in file order, updating ``state`` as it goes."""

    def __init__(
        self, session_id: str, kind: str, state: CursorState, resolve: Resolver | None
    ) -> None:
        self.session_id = session_id
        self.kind = kind
        self.state = state
        self.resolve = resolve
        self.events: list[Event] = []
        self.links: dict[str, str | None] = {}
        self.known: Mapping[str, str | None] = {}
        self.record_types: Counter[str] = Counter()
        self.dropped: Counter[str] = Counter()
        # message id → (anchor uuid, anchor block index, joined text, uuids of its parts)
        self.messages: dict[str, tuple[str, int, str, list[str]]] = {}
        self.message_entries: dict[str, str] = {}

    def run(self, lines: list[Line]) -> None:
        if self.resolve is not None:
            wanted: set[str] = set()
            for line in lines:
                for key in ("uuid", "parentUuid", "logicalParentUuid"):
                    value = line.record.get(key)
                    if isinstance(value, str):
                        wanted.add(value)
            self.known = self.resolve(sorted(wanted)) if wanted else {}
        self._collect_messages(lines)
        for line in lines:
            self._record(line)

    def _collect_messages(self, lines: list[Line]) -> None:
        texts: dict[str, list[tuple[str, int, str]]] = {}
        for line in lines:
            record = line.record
            if record.get("type") != "assistant" or not isinstance(record.get("uuid"), str):
                continue
            message_id = message_id_of(record) or ""
            for index, block in enumerate(_blocks(record)):
                text = str(block.get("text") or "").strip() if block.get("type") == "text" else ""
                if text:
                    texts.setdefault(message_id, []).append((record["uuid"], index, text))
        for message_id, parts in texts.items():
            joined = "\n\n".join(text for _, _, text in parts)
            self.messages[message_id] = (parts[0][0], parts[0][1], joined, [p[0] for p in parts])

    def _side(self, record: Mapping[str, Any]) -> bool:
        return self.kind != "main" or record.get("isSidechain") is True

    # -- per record --

    def _record(self, line: Line) -> None:
        record = line.record
        rtype = str(record.get("type") or "?")
        sub = record.get("subtype")
        if rtype == "progress" and isinstance(record.get("data"), dict):
            sub = record["data"].get("type")
        self.record_types[f"{rtype}/{sub}" if sub else rtype] += 1
        uuid = record.get("uuid") if isinstance(record.get("uuid"), str) else None
        if uuid is not None and (uuid in self.links or uuid in self.known):
            self.dropped["duplicate uuid (already captured)"] += 1
            return
        if self.state.project is None and isinstance(record.get("cwd"), str):
            self.state.project = record["cwd"]
        parent, unresolved = self._parent(record.get("parentUuid"))
        events: list[Event] = []
        alias: str | None = None
        if rtype == "user":
            events = self._user(record)
        elif rtype == "assistant":
            events, alias = self._assistant(record)
        elif record.get("subtype") == "compact_boundary":
            events, parent = self._boundary(record)
            unresolved = False
        elif rtype == "system" and record.get("subtype") == "local_command":
            events = self._user_text(record, str(record.get("content") or ""))
        elif rtype == "system":
            self.dropped[f"system/{record.get('subtype')}: harness bookkeeping"] += 1
        elif rtype == "attachment":
            events = self._attachment(record)
        elif rtype in _SKIPPED_TYPES:
            self.dropped[_SKIPPED_TYPES[rtype]] += 1
        else:
            self.dropped[f"unknown record type {rtype!r}"] += 1
        if events and rtype == "attachment":
            # Claude Code threads the next record past a hook's context, not through
            # it: without an entry id it stays on the active path, in the context.
            self._emit(line, None, parent, unresolved, events)
            if uuid is not None:
                self.links[uuid] = parent
        elif events:
            self._emit(line, uuid, parent, unresolved, events)
        elif uuid is not None:
            self.links[uuid] = alias if alias is not None else parent

    def _parent(self, raw: Any) -> tuple[str | None, bool]:
        """The entry a host parent link resolves to, and whether nobody knew it."""
        if not isinstance(raw, str):
            return None, False
        if raw in self.links:
            return self.links[raw], False
        if raw in self.known:
            return self.known[raw], False
        return raw, True

    def _emit(
        self,
        line: Line,
        uuid: str | None,
        parent: str | None,
        unresolved: bool,
        events: list[Event],
    ) -> None:
        """Give a record's events their seq, identity, links and common fields."""
        record = line.record
        side = self._side(record)
        entry = parent
        for position, event in enumerate(events):
            own = None if uuid is None else uuid if position == 0 else f"{uuid}#{position}"
            out: Event = {
                "session_id": self.session_id,
                "seq": self.state.next_seq,
                "type": event.pop("type"),
            }
            if isinstance(record.get("timestamp"), str):
                out["time"] = record["timestamp"]
            out["turn"] = self.state.turn
            out["step"] = self.state.step
            out.update(event)
            if own is not None:
                out["entry_id"] = own
            if entry is not None:
                out["parent_id"] = entry
            if isinstance(record.get("cwd"), str):
                out["cwd"] = record["cwd"]
            if self.state.project is not None:
                out["project"] = self.state.project
            out.update(self._extra(record, side))
            if unresolved and position == 0:
                out["parent_unresolved"] = True
            self.events.append(out)
            self.state.next_seq += 1
            entry = own if own is not None else entry
            if out["type"] == "assistant/message" and "message_id" in out:
                self.message_entries[out["message_id"]] = entry or ""
            if not side:
                self.state.last_main = entry
                if out["type"] == "compaction/start":
                    self.state.context_start = out["seq"]
        if uuid is not None:
            self.links[uuid] = entry

    def _extra(self, record: Mapping[str, Any], side: bool) -> Event:
        extra: Event = {"host": HOST}
        if side:
            extra["is_sidechain"] = True
        for key, name in (("gitBranch", "git_branch"), ("version", "host_version")):
            if isinstance(record.get(key), str) and record[key]:
                extra[name] = record[key]
        if isinstance(record.get("agentId"), str):
            extra["agent_id"] = record["agentId"]
        if self.kind != "main" and isinstance(record.get("sessionId"), str):
            extra["parent_session_id"] = record["sessionId"]
        return extra

    # -- user records --

    def _user(self, record: Mapping[str, Any]) -> list[Event]:
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if record.get("isCompactSummary"):
            event: Event = {
                "type": "compaction/summary",
                "role": "user",
                "text": _plain_text(content),
                "source": {"kind": GENERATED, "form": COMPACT_SUMMARY_FORM},
            }
            if record.get("isVisibleInTranscriptOnly"):
                event["visible_in_transcript_only"] = True
            return [event]
        if isinstance(content, str):
            return self._user_text(record, content)
        if not isinstance(content, list):
            self.dropped["user record without content"] += 1
            return []
        events: list[Event] = []
        texts: list[str] = []
        for block in content:
            btype = block.get("type") if isinstance(block, dict) else None
            if btype == "tool_result":
                events += self._user_text(record, "\n".join(texts)) if texts else []
                texts = []
                events.append(self._tool_result(record, block))
            elif btype == "text":
                texts.append(str(block.get("text") or ""))
            elif btype in ("image", "document"):
                texts.append(f"[{btype}]")
            else:
                self.dropped[f"unknown user block {btype!r}"] += 1
        return events + (self._user_text(record, "\n".join(texts)) if texts else [])

    def _user_text(self, record: Mapping[str, Any], text: str) -> list[Event]:
        """Classify user-role text: a typed prompt, a slash command, or harness-generated."""
        if not text.strip():
            self.dropped["empty user text"] += 1
            return []
        meta = bool(record.get("isMeta"))
        stripped = text.strip()
        command = None if meta else _typed_command(stripped)
        if command is not None:
            self._new_turn(record)
            return [
                {
                    "type": "command",
                    "role": "user",
                    "text": command[1],
                    "source": {"kind": "user", "form": command[0]},
                }
            ]
        output = _OUTPUT_TAGS.match(stripped)
        if output is not None:
            return [
                {
                    "type": "command",
                    "role": "command",
                    "text": output.group(2),
                    "source": {"kind": GENERATED, "form": "command-output"},
                }
            ]
        form = _generated_form(stripped)
        if self.kind == "compaction-agent":
            form = form or "compaction-agent"
        if (meta or form is not None) and MEMPLUG_MARK in text:
            # memplug's own additionalContext, written back by Claude Code.
            return [_user_event(text, MEMPLUG_SOURCE_KIND, MEMPLUG_SOURCE_FORM)]
        if meta or form is not None:
            return [_user_event(text, GENERATED, form or "meta")]
        reminders = _REMINDER.findall(text)
        typed = _REMINDER.sub("", text).strip() if reminders else text
        events = []
        if typed and self._side(record):
            events.append(_user_event(typed, AGENT_INSTRUCTIONS, "subagent-prompt"))
        elif typed:
            self._new_turn(record)
            events.append(_user_event(typed, "user", "prompt"))
        events += [_user_event(r, GENERATED, "system-reminder") for r in reminders]
        return events

    def _new_turn(self, record: Mapping[str, Any]) -> None:
        if not self._side(record):
            self.state.turn += 1
            self.state.step = 0

    def _tool_result(self, record: Mapping[str, Any], block: Mapping[str, Any]) -> Event:
        text = _plain_text(block.get("content"))
        is_error = block.get("is_error") is True
        event: Event = {
            "type": "tool/result",
            "role": "tool",
            "text": text,
            "outcome": _outcome(text, is_error, record.get("toolUseResult")),
            "is_error": is_error,
        }
        call_id = block.get("tool_use_id")
        if isinstance(call_id, str):
            event["call_id"] = call_id
            name = self.state.pending_calls.pop(call_id, None)
            if name is not None:
                event["tool_name"] = name
        result = record.get("toolUseResult")
        if isinstance(result, dict) and isinstance(result.get("agentId"), str):
            root = self.session_id.split("/", 1)[0]
            event["subagent_session"] = f"{root}/agent-{result['agentId']}"
        return event

    def _attachment(self, record: Mapping[str, Any]) -> list[Event]:
        """A hook's additional context as Claude Code (2.1.x) records it: memplug's own
        is an earlier injection still in the context; another hook's is generated text.
        Other attachments (hook outcomes, tool listings, reminders) are bookkeeping."""
        attachment = record.get("attachment")
        kind = attachment.get("type") if isinstance(attachment, dict) else None
        if kind != "hook_additional_context":
            self.dropped[f"attachment/{kind}: harness bookkeeping"] += 1
            return []
        assert isinstance(attachment, dict)
        text = _plain_text(attachment.get("content")).strip()
        if not text:
            self.dropped["empty hook context"] += 1
            return []
        if text.startswith(MEMPLUG_HEADER):
            return [_user_event(text, MEMPLUG_SOURCE_KIND, MEMPLUG_SOURCE_FORM)]
        return [_user_event(text, GENERATED, "hook-context")]

    # -- assistant records --

    def _assistant(self, record: Mapping[str, Any]) -> tuple[list[Event], str | None]:
        """Events of one assistant record; for a later text part, the entry it joins."""
        message = record.get("message")
        message_id = message_id_of(record) or ""
        if message_id != self.state.message_id:
            self.state.message_id = message_id
            if not self._side(record):
                self.state.step += 1
        model = message.get("model") if isinstance(message, dict) else None
        common: Event = {"message_id": message_id}
        if isinstance(model, str):
            common["model"] = model
        if self.kind == "compaction-agent":
            common["source"] = {"kind": GENERATED, "form": "compaction-agent"}
        elif model == "<synthetic>" or record.get("isApiErrorMessage"):
            common["source"] = {"kind": GENERATED, "form": "synthetic"}
        events: list[Event] = []
        alias: str | None = None
        anchor = self.messages.get(message_id)
        for index, block in enumerate(_blocks(record)):
            btype = block.get("type")
            if btype == "text" and not str(block.get("text") or "").strip():
                self.dropped["empty assistant text block"] += 1
            elif btype == "text" and anchor and (anchor[0], anchor[1]) == (record["uuid"], index):
                event: Event = {"type": "assistant/message", "role": "assistant", "text": anchor[2]}
                if len(anchor[3]) > 1:
                    event["part_uuids"] = anchor[3]
                events.append(event)
            elif btype == "text":
                alias = self.message_entries.get(message_id)
            elif btype == "thinking" and str(block.get("thinking") or "").strip():
                events.append(
                    {
                        "type": "assistant/thinking",
                        "role": "assistant",
                        "text": str(block["thinking"]),
                    }
                )
            elif btype in ("thinking", "redacted_thinking"):
                self.dropped["thinking without text (empty or redacted)"] += 1
            elif btype in ("tool_use", "server_tool_use"):
                events.append(self._tool_call(block))
            elif isinstance(btype, str) and btype.endswith("_tool_result"):
                events.append(self._tool_result(record, block))
            else:
                self.dropped[f"unknown assistant block {btype!r}"] += 1
        for event in events:
            event.update(common)
        return events, alias

    def _tool_call(self, block: Mapping[str, Any]) -> Event:
        name = str(block.get("name") or "?")
        arguments = json.dumps(block.get("input"), ensure_ascii=False, separators=(",", ":"))
        event: Event = {
            "type": "tool/call",
            "role": "assistant",
            "text": f"{name} {arguments}",
            "tool_name": name,
        }
        call_id = block.get("id")
        if isinstance(call_id, str):
            event["call_id"] = call_id
            self.state.pending_calls[call_id] = name
            while len(self.state.pending_calls) > PENDING_CALLS_CAP:
                del self.state.pending_calls[next(iter(self.state.pending_calls))]
        return event

    # -- compaction --

    def _boundary(self, record: Mapping[str, Any]) -> tuple[list[Event], str | None]:
        """The ``compaction/start`` event and the entry the active path continues at."""
        event: Event = {
            "type": "compaction/start",
            "role": "system",
            "text": str(record.get("content") or "Conversation compacted"),
            "source": {"kind": GENERATED, "form": "compact-boundary"},
        }
        metadata = record.get("compactMetadata")
        if isinstance(metadata, dict):
            if isinstance(metadata.get("trigger"), str):
                event["compact_trigger"] = metadata["trigger"]
            if isinstance(metadata.get("preTokens"), int):
                event["pre_tokens"] = metadata["preTokens"]
        logical = record.get("logicalParentUuid")
        parent: str | None
        if isinstance(logical, str):
            event["logical_parent_uuid"] = logical
        if isinstance(logical, str) and (logical in self.links or logical in self.known):
            parent, _ = self._parent(logical)
            event["continues_from"] = "logical-parent"
        else:
            parent = self.state.last_main
            event["continues_from"] = "last-main-chain" if parent else "nothing"
        return [event], parent


def _blocks(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def _plain_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return "" if content is None else json.dumps(content, ensure_ascii=False)
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict):
            if block.get("type") == "text":
                parts.append(str(block.get("text") or ""))
            else:
                parts.append(f"[{block.get('type')}]")
    return "\n".join(parts)


def _user_event(text: str, kind: str, form: str) -> Event:
    return {
        "type": "user/message",
        "role": "user",
        "text": text,
        "source": {"kind": kind, "form": form},
    }


def _typed_command(text: str) -> tuple[str, str] | None:
    """``(form, text)`` for a slash command or ``!`` shell command the user typed."""
    bash = _BASH_INPUT.match(text)
    if bash is not None:
        return "bash-mode", "!" + bash.group(1)
    if not text.startswith(("<command-name>", "<command-message>")):
        return None
    name_match = _COMMAND_NAME.search(text) or _COMMAND_MESSAGE.search(text)
    name = name_match.group(1) if name_match else ""
    if not name:
        return None
    args_match = _COMMAND_ARGS.search(text)
    args = args_match.group(1).strip() if args_match else ""
    name = name if name.startswith("/") else "/" + name
    return "slash-command", f"{name} {args}" if args else name


def _generated_form(text: str) -> str | None:
    for prefix, form in GENERATED_TEXT_MARKERS:
        if text.startswith(prefix):
            return form
    return None


def _outcome(text: str, is_error: bool, result: Any) -> str:
    if text.startswith(_REJECTED) or result == "User rejected tool use":
        return "aborted"
    if text.startswith("[Request interrupted by user") or text == "Sibling tool call errored":
        return "aborted"
    if isinstance(result, dict) and result.get("interrupted") is True:
        return "aborted"
    if text.startswith("Command timed out"):
        return "timed_out"
    return "failed" if is_error else "succeeded"
