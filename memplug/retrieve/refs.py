"""Event references: ``SESSION:SEQ`` and the source references memory items store.

The one place retrieval parses them (a shared ``memplug/refs.py`` is to replace it).
"""

from __future__ import annotations

import json
from typing import Any


def parse_ref(text: str) -> tuple[str, int] | None:
    """``SESSION:SEQ`` → ``(session, seq)``; the session may itself contain colons."""
    if ":" not in text:
        return None
    session, _, seq = text.rpartition(":")
    if not session or not seq.lstrip("-").isdigit():
        return None
    return session, int(seq)


def json_list(raw: str | None) -> list[Any]:
    """A stored JSON list; anything else (bad JSON, another type) reads as empty."""
    try:
        value = json.loads(raw or "[]")
    except ValueError:
        return []
    return value if isinstance(value, list) else []


def parse_source_refs(raw: str | None, session_id: str) -> tuple[tuple[str, int], ...]:
    """Source references as ``(session, seq)``, whichever spelling extraction stored:
    ``"S:SEQ"``, a bare seq (same session), ``{"session_id", "seq"}`` or ``[S, SEQ]``."""
    out: list[tuple[str, int]] = []
    for ref in json_list(raw):
        if isinstance(ref, int):
            out.append((session_id, ref))
        elif isinstance(ref, str):
            parsed = parse_ref(ref)
            if parsed is not None:
                out.append(parsed)
            elif ref.isdigit():
                out.append((session_id, int(ref)))
        elif isinstance(ref, dict) and "seq" in ref:
            try:
                out.append((str(ref.get("session_id") or session_id), int(ref["seq"])))
            except (TypeError, ValueError):
                continue
        elif isinstance(ref, list) and len(ref) == 2:
            try:
                out.append((str(ref[0]), int(ref[1])))
            except (TypeError, ValueError):
                continue
    return tuple(dict.fromkeys(out))
