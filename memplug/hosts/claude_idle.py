"""The Claude Code hook's first look: is this a tool hook with nothing new to read?

Most hooks are ``PostToolUse`` on a transcript already read to its end. Telling that
needs the payload, the transcript's size and its saved cursor, so this module uses
``os`` and ``json`` only, and the caller hands it the cursor reader
(:func:`memplug.store.peek.saved_positions`): such a hook then exits before the host
registry, the hook module or the configuration are imported. Whenever it is not sure
it says "not idle", and :mod:`memplug.hosts.claude_hook` decides (and reports) as
always; that module asks :func:`due` the same question, so the rule is one.
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

    CursorReader = Callable[[str, Sequence[str]], Mapping[str, Mapping[str, Any]]]

TOOL_EVENTS: frozenset[str] = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure"})
# Tool hooks read only their own transcript; PreToolUse may also answer with a
# precondition's decision, which needs the configuration.
IDLE_EVENTS: frozenset[str] = TOOL_EVENTS - {"PreToolUse"}
# Unread bytes a tool hook leaves to the turn's Stop, the next prompt, a compaction or
# the session's end, which read from the same cursor: capture is exact either way, and
# a turn's tool calls then pay the event validator's import (most of a capturing hook's
# CPU) once instead of once each. The bound keeps what a prompt hook catches up within
# its deadline (docs/claude-code.md, "What each hook costs").
TOOL_BACKLOG_BYTES = 1024 * 1024


def unread(size: int, saved: Mapping[str, Any] | None, final: bool) -> bool:
    """Whether a transcript of ``size`` bytes has bytes not read yet, or (``final``: its
    writer is between model calls) a held message to flush, given its saved cursor."""
    if saved is None:
        return True
    offset, seen = int(saved.get("offset", -1)), int(saved.get("seen", -1))
    return size != seen or (final and offset < seen)


def due(size: int, saved: Mapping[str, Any] | None, final: bool, event: str | None) -> bool:
    """Whether a hook of ``event`` reads the transcript now: it has unread bytes (see
    :func:`unread`) and, for a tool hook, more of them than ``TOOL_BACKLOG_BYTES``."""
    if not unread(size, saved, final):
        return False
    if event not in TOOL_EVENTS or saved is None:
        return True
    return not 0 <= size - int(saved.get("seen", -1)) <= TOOL_BACKLOG_BYTES


def nothing_new(stdin: bytes, database: str, read_cursors: CursorReader) -> bool:
    """True only for a tool hook (not PreToolUse) with nothing :func:`due`: the whole
    hook then does nothing and answers nothing."""
    try:
        payload = json.loads(stdin.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False
    if not isinstance(payload, dict) or payload.get("hook_event_name") not in IDLE_EVENTS:
        return False
    session_id, path = payload.get("session_id"), payload.get("transcript_path")
    if not (isinstance(session_id, str) and session_id and isinstance(path, str) and path):
        return False
    try:
        size = os.stat(path).st_size
    except (OSError, ValueError):
        return False
    saved = read_cursors(database, [session_id]).get(session_id)
    return not due(size, saved, False, payload["hook_event_name"])
