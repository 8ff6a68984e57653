"""Claude Code transcripts → memplug host events, read incrementally from a byte offset.

A Claude Code session is a JSONL file, ``~/.claude/projects/<project>/<session>.jsonl``,
that the harness only ever appends to; subagents write beside it in
``<session>/subagents/agent-<id>.jsonl``. This module reads such a file from a byte
offset and hands its complete records to :mod:`memplug.hosts.claude_records`, which
turns them into events in the generic interchange form (plain dicts, exactly what
``memory import`` reads; the capture boundary validates them as
:class:`memplug.base.models.HostEvent`); it also walks captured events to the model's
context. It imports nothing heavy: the hook that calls it is a fresh process on every
prompt.

Choices, and why:

* **seq** numbers the session's events 1, 2, 3, … in the order the transcript holds
  their records; the next number is part of the cursor. The file is append-only, so
  that order never changes, and the reader emits the same events in the same order
  however the file is cut into reads (a test cuts it at random bytes), so a record
  gets the same seq in any database, at any time. Numbers are dense on purpose:
  retrieval measures recency and neighbourhood in seq distance. If the file is found
  rewritten (shorter than the last read, or different bytes before the stored
  offset), the read restarts at byte 0; records whose ``uuid`` was captured already
  are skipped, so the numbering continues above every seq used and nothing is
  captured twice. (A record's ordinal position or byte offset would not survive
  such a rewrite; its uuid does.)
* **Split assistant messages**: each record holds one content block, and one API
  message is spread over several records sharing ``message.id`` (tool results of
  parallel calls can sit between them). A message is emitted only once something after
  it shows it is complete (a record of another message, a typed prompt, a system
  record); until then the read stops before its first record and the returned offset
  points there, so the next read sees the whole message. A caller that knows the turn
  is over (Stop, UserPromptSubmit, …) passes ``final=True`` to flush it.
* **Links** of one read are returned in ``ReadResult.links`` for the caller to keep; a
  ``Resolver`` answers for uuids read before.
* **Compaction**: the boundary starts a new root in the transcript
  (``parentUuid: null``) and its ``compaction/start`` event continues the active path.
  Events from the latest ``compaction/start`` on are in the model's context
  (:func:`model_context`); what precedes it is what memory brings back.
* **Dropped on purpose**: what the records' mapping leaves out is counted in
  ``ReadResult.dropped``, and so are malformed lines.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from msgspec import Struct, field

from memplug.base import branches
from memplug.hosts.claude_records import (
    HOST,
    CursorState,
    Event,
    Line,
    Mapper,
    Resolver,
    message_id_of,
)

# The reader's API, and the records' names its callers use through it.
__all__ = [
    "DEFAULT_MAX_BYTES",
    "HOST",
    "TAIL_BYTES",
    "CursorState",
    "Event",
    "MemoryLinks",
    "ReadResult",
    "Resolver",
    "active_path",
    "model_context",
    "read_all",
    "read_transcript",
    "session_id_for",
    "subagent_paths",
    "transcript_kind",
]

TAIL_BYTES = 64
DEFAULT_MAX_BYTES = 8 << 20
# Records that never close an open assistant message (they come between its parts).
_NOT_CLOSING = frozenset({"progress", "file-history-snapshot", "queue-operation"})


class ReadResult(Struct):
    """One incremental read: events of ``[start, state.offset)`` and what was left out."""

    session_id: str
    events: list[Event]
    state: CursorState
    links: dict[str, str | None]
    record_types: Counter[str] = field(default_factory=Counter)
    dropped: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    rewritten: bool = False
    held_bytes: int = 0
    more: bool = False

    def host_events(self) -> list[Any]:
        """The events validated as :class:`memplug.base.events.HostEvent`."""
        from memplug.base.events import parse_event

        return [parse_event(event) for event in self.events]


# -- file layout --------------------------------------------------------------------


def transcript_kind(path: Path | str) -> str:
    """``main``, ``subagent`` or ``compaction-agent``, from where the file lives."""
    path = Path(path)
    if path.parent.name == "subagents" and path.stem.startswith("agent-"):
        return "compaction-agent" if path.stem.startswith("agent-acompact") else "subagent"
    return "main"


def session_id_for(path: Path | str) -> str:
    """The memplug session of a transcript: its stem, or ``<session>/agent-<id>``."""
    path = Path(path)
    if transcript_kind(path) != "main":
        return f"{path.parent.parent.name}/{path.stem}"
    return path.stem


def subagent_paths(transcript_path: Path | str) -> list[Path]:
    """The subagent transcripts of a session, in name order (none when there are none)."""
    path = Path(transcript_path)
    folder = path.parent / path.stem / "subagents"
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".jsonl"))
    except OSError:
        return []
    return [folder / name for name in names]


# -- reading ------------------------------------------------------------------------


def read_transcript(
    path: Path | str,
    state: CursorState | None = None,
    *,
    session_id: str | None = None,
    resolve: Resolver | None = None,
    final: bool = False,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> ReadResult:
    """Read the complete lines after ``state.offset`` and map them to events.

    A partial last line (the harness is still writing it) is left for the next read,
    and so is an assistant message that may still grow unless ``final``. At most about
    ``max_bytes`` are read; ``ReadResult.more`` says whether complete lines remain.
    """
    path = Path(path)
    state = state.copy() if state is not None else CursorState()
    session_id = session_id or session_id_for(path)
    rewritten = False
    with open(path, "rb") as stream:
        size = os.fstat(stream.fileno()).st_size
        if state.offset and not _same_prefix(stream, state.offset, state.tail, size):
            rewritten = True
            state.offset, state.tail = 0, ""
        start, limit = state.offset, max(1, max_bytes)
        while True:
            stream.seek(state.offset)
            data = stream.read(limit)
            at_eof = state.offset + len(data) >= size
            cut = data.rfind(b"\n") + 1
            lines, errors = _split(data[:cut], state.offset)
            hold = _hold_index(lines, final=final and at_eof)
            if not at_eof and (cut == 0 or hold == 0):
                limit *= 4  # one line or one message larger than the window: widen it
                continue
            break
        end = lines[hold].offset if hold is not None else state.offset + cut
        tail = _read_tail(stream, end)
    mapper = Mapper(session_id, transcript_kind(path), state, resolve)
    mapper.run(lines if hold is None else lines[:hold])
    dropped = mapper.dropped
    kept_errors = [f"byte {offset}: {message}" for offset, message in errors if offset < end]
    if kept_errors:
        dropped["malformed line (not a JSON object)"] += len(kept_errors)
    state.offset, state.tail = end, tail
    # Bytes examined, held and partial ones included: a hook compares it with the file
    # size to pass over a transcript that did not grow without opening anything else.
    state.seen = start + len(data)
    return ReadResult(
        session_id=session_id,
        events=mapper.events,
        state=state,
        links=mapper.links,
        record_types=mapper.record_types,
        dropped=dropped,
        errors=kept_errors,
        rewritten=rewritten,
        held_bytes=size - end if hold is not None else 0,
        more=not at_eof,
    )


def read_all(
    path: Path | str,
    *,
    session_id: str | None = None,
    resolve: Resolver | None = None,
    state: CursorState | None = None,
) -> ReadResult:
    """Read a whole transcript as one result (``final``): for imports, tests and compat."""
    links = MemoryLinks(resolve)
    total: ReadResult | None = None
    while True:
        part = read_transcript(
            path,
            state if total is None else total.state,
            session_id=session_id,
            resolve=links,
            final=True,
        )
        links.add(part)
        if total is None:
            total = part
        else:
            total.events.extend(part.events)
            total.links.update(part.links)
            total.record_types.update(part.record_types)
            total.dropped.update(part.dropped)
            total.errors.extend(part.errors)
            total.state = part.state
            total.rewritten = total.rewritten or part.rewritten
            total.more = part.more
        if not part.more:
            return total


class MemoryLinks:
    """An in-memory :data:`Resolver` fed by successive reads (optionally over another)."""

    def __init__(self, fallback: Resolver | None = None) -> None:
        self.links: dict[str, str | None] = {}
        self.fallback = fallback

    def add(self, result: ReadResult) -> None:
        self.links.update(result.links)

    def __call__(self, uuids: Sequence[str]) -> Mapping[str, str | None]:
        found = {u: self.links[u] for u in uuids if u in self.links}
        missing = [u for u in uuids if u not in found]
        if missing and self.fallback is not None:
            found.update(self.fallback(missing))
        return found


def _same_prefix(stream: Any, offset: int, tail: str, size: int) -> bool:
    """Whether the bytes before ``offset`` are still the ones read last time."""
    return size >= offset and _read_tail(stream, offset) == tail


def _read_tail(stream: Any, offset: int) -> str:
    import hashlib  # not at import: a hook with nothing new never reads a tail

    start = max(0, offset - TAIL_BYTES)
    stream.seek(start)
    # SHA-256, not BLAKE2: a build without the builtin hashes (FIPS) has no hashlib.blake2b.
    return hashlib.sha256(stream.read(offset - start)).hexdigest()[:24]


def _split(data: bytes, base_offset: int) -> tuple[list[Line], list[tuple[int, str]]]:
    lines: list[Line] = []
    errors: list[tuple[int, str]] = []
    position = 0
    for raw in data.split(b"\n")[:-1]:
        offset = base_offset + position
        position += len(raw) + 1
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except (ValueError, RecursionError) as error:
            errors.append((offset, f"not a JSON record ({type(error).__name__})"))
            continue
        if not isinstance(record, dict):
            errors.append((offset, f"a JSON {type(record).__name__}, not an object"))
            continue
        lines.append(Line(offset, record))
    return lines, errors


def _only_tool_results(record: Mapping[str, Any]) -> bool:
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return (
        isinstance(content, list)
        and bool(content)
        and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    )


def _hold_index(lines: list[Line], *, final: bool) -> int | None:
    """Index of the first record of an assistant message that may still grow, if any."""
    if final:
        return None
    last = None
    for index in range(len(lines) - 1, -1, -1):
        record = lines[index].record
        if record.get("type") == "assistant":
            last = index
            break
        if record.get("type") in _NOT_CLOSING or record.get("isMeta"):
            continue
        if record.get("type") == "user" and _only_tool_results(record):
            continue
        return None
    if last is None:
        return None
    message_id = message_id_of(lines[last].record)
    first = last
    for index in range(last - 1, -1, -1):
        record = lines[index].record
        if record.get("type") == "assistant":
            if message_id_of(record) != message_id:
                break
            first = index
    return first


# -- the model's context --------------------------------------------------------------


def active_path(events: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The session's active path (:mod:`memplug.base.branches`), in seq order.

    Compaction boundaries continue to the record they were linked to, so what came
    before a compaction stays on the path.
    """
    by_seq = {e["seq"]: e for e in events}
    links = (
        branches.Link(
            seq,
            e.get("entry_id"),
            e.get("parent_id"),
            bool(e.get("is_sidechain")),
            e.get("type"),
            e.get("call_id"),
        )
        for seq, e in by_seq.items()
    )
    return [by_seq[seq] for seq in branches.active_path(links).seqs]


def model_context(events: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The events the model still sees: the active path from the latest compaction on."""
    path = active_path(events)
    starts = [i for i, e in enumerate(path) if e["type"] == "compaction/start"]
    return path[starts[-1] :] if starts else path


# The files Claude Code loads as standing instructions from the session's folder and each
# folder above it (and the user's own), which memplug need not repeat in its core.
STANDING_NAMES: tuple[str, ...] = ("CLAUDE.md", "CLAUDE.local.md", ".claude/CLAUDE.md", "AGENTS.md")
# A standing file larger than this is not read on the hook's path (Claude Code itself
# warns past ~40k characters).
STANDING_MAX_BYTES = 256 * 1024


def standing_files(cwd: str | None, home: Path | None = None) -> tuple[tuple[str, str], ...]:
    """(name, text) of each standing file the host loads for a session in ``cwd``: in
    ``cwd`` and every folder above it, then ``~/.claude/CLAUDE.md``. Unreadable or
    oversized files are skipped: this only saves repeating what the agent already reads."""
    if not cwd:
        return ()
    folders = [Path(cwd), *Path(cwd).parents]
    candidates = [folder / name for folder in folders for name in STANDING_NAMES]
    candidates.append((home or Path.home()) / ".claude" / "CLAUDE.md")
    out: list[tuple[str, str]] = []
    for path in candidates:
        try:
            if path.stat().st_size > STANDING_MAX_BYTES:
                continue
            out.append((path.name, path.read_text(encoding="utf-8", errors="replace")))
        except OSError:
            continue
    return tuple(out)


# Claude Code's MCP registrations: the user's (and per-project) in ~/.claude.json, the
# shared ones in <project>/.mcp.json. Larger files are not read on the prompt path.
MCP_FILE_MAX_BYTES = 8 * 1024 * 1024


def mcp_registered(cwd: str | None, server: str, home: Path | None = None) -> bool:
    """Whether ``server`` is one of the MCP servers Claude Code starts for a session in
    ``cwd``: a byte search first (most prompts stop there), JSON only on a hit."""
    if not cwd:
        return False
    needle = json.dumps(server).encode()
    for path in (Path(cwd) / ".mcp.json", (home or Path.home()) / ".claude.json"):
        try:
            if path.stat().st_size > MCP_FILE_MAX_BYTES:
                continue
            data = path.read_bytes()
        except OSError:
            continue
        if needle in data and _names_server(data, cwd, server):
            return True
    return False


def _names_server(data: bytes, cwd: str, server: str) -> bool:
    try:
        settings = json.loads(data)
    except (ValueError, RecursionError):
        return False
    if not isinstance(settings, dict):
        return False
    scopes = [settings]
    projects = settings.get("projects")
    if isinstance(projects, dict) and isinstance(projects.get(cwd), dict):
        scopes.append(projects[cwd])
    return any(isinstance(s.get("mcpServers"), dict) and server in s["mcpServers"] for s in scopes)
