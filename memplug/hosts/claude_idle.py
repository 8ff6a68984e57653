"""The Claude Code hook's first look: is this a tool hook with nothing new to read?

Most hooks are ``PostToolUse`` on a transcript already read to its end. Telling that
needs the payload, the transcript's size and its saved cursor, so this module uses
``os`` and ``json`` only, and the caller hands it the cursor reader
(:func:`memplug.store.peek.saved_positions`): such a hook then exits before the host
registry, the hook module or the configuration are imported. Whenever it is not sure
it says "not idle", and :mod:`memplug.hosts.claude_hook` decides (and reports) as
always; that module asks :func:`unread` the same question, so the rule is one.
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


def unread(size: int, saved: Mapping[str, Any] | None, final: bool) -> bool:
    """Whether a transcript of ``size`` bytes has bytes not read yet, or (``final``: its
    writer is between model calls) a held message to flush, given its saved cursor."""
    if saved is None:
        return True
    offset, seen = int(saved.get("offset", -1)), int(saved.get("seen", -1))
    return size != seen or (final and offset < seen)


def nothing_new(stdin: bytes, database: str, read_cursors: CursorReader) -> bool:
    """True only for a tool hook (not PreToolUse) whose transcript has not grown since
    it was read: the whole hook then does nothing and answers nothing."""
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
    return not unread(size, read_cursors(database, [session_id]).get(session_id), final=False)
