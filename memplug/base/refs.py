"""The one event reference, ``SESSION:SEQ``: how it is written and how it is read.

The rule (docs/events.md, "Event references"): the session is everything before the
*last* colon, so a session id may itself hold colons and spaces, verbatim; it must not
be blank. The seq is ASCII digits only — no sign, no spaces — at most ``MAX_SEQ``,
the bounds a host event's seq has. Leading zeros are read (``s1:007`` is ``s1:7``) but
never written. Nothing is stripped: a ref names an event exactly or not at all.
``SESSION:SEQ@OFFSET`` names a character of the event, where a search hit on a long
event opens it: a plain ref ends in ``:DIGITS``, never ``@DIGITS``, so the two never
read alike.

Also the one rule for the scope a session's derived rows carry (``row_scope``; what a
query reads is :mod:`memplug.derive.scopes`): it is written by extraction as well as by the
views above it.
"""

from __future__ import annotations

import json
import re
from typing import NamedTuple

from memplug.base.errors import ValidationError

MAX_SEQ = 2**62
# ASCII only: str.isdigit() would accept '²' or '٣', which int() then rejects or reads.
_SEQ = re.compile(r"[0-9]+")


class EventRef(NamedTuple):
    """An event's identity; sorts by session, then seq, and unpacks as ``(session, seq)``."""

    session_id: str
    seq: int

    def __str__(self) -> str:
        return event_ref(self.session_id, self.seq)

    @classmethod
    def find(cls, text: object) -> EventRef | None:
        """``text`` read as a reference, or None when it is not one by the rule above."""
        if not isinstance(text, str):
            return None
        session, sep, seq = text.rpartition(":")
        if not sep or not session.strip() or not _SEQ.fullmatch(seq):
            return None
        value = int(seq)
        return cls(session, value) if value <= MAX_SEQ else None

    @classmethod
    def find_at(cls, text: str) -> tuple[EventRef, int | None] | None:
        """``text`` read as ``SESSION:SEQ`` (offset None) or ``SESSION:SEQ@OFFSET``."""
        head, sep, offset = text.rpartition("@")
        ref = cls.find(head) if sep and _SEQ.fullmatch(offset) else None
        if ref is not None:
            return ref, int(offset)
        plain = cls.find(text)
        return None if plain is None else (plain, None)

    @classmethod
    def parse(cls, text: str, *, what: str = "a SESSION:SEQ reference") -> EventRef:
        """``text`` read as a reference; a ``ValidationError`` naming ``what`` when it is not."""
        ref = cls.find(text)
        if ref is None:
            raise ValidationError(f"not {what}: {text!r}")
        return ref


def event_ref(session_id: str, seq: int) -> str:
    """The written form of the reference to event ``seq`` of ``session_id`` (built
    without an :class:`EventRef`: retrieval and assembly write thousands a step)."""
    return f"{session_id}:{seq}"


def event_ref_at(session_id: str, seq: int, offset: int) -> str:
    """The written form of the reference to character ``offset`` of an event."""
    return f"{event_ref(session_id, seq)}@{offset}"


def parse_source_refs(raw: str | None, session_id: str) -> tuple[EventRef, ...]:
    """A memory item's stored source references (``source_refs_json``), distinct, in
    stored order, whichever spelling wrote them: ``"S:SEQ"``, a bare seq of the item's
    own session (a number or digits), ``{"session_id", "seq"}`` or ``[S, SEQ]``.
    Entries that name no event by the rule above are skipped."""
    try:
        value = json.loads(raw or "[]")
    except ValueError:
        return ()
    found = (_source_ref(entry, session_id) for entry in value) if isinstance(value, list) else ()
    return tuple(dict.fromkeys(ref for ref in found if ref is not None))


def _source_ref(entry: object, session_id: str) -> EventRef | None:
    if isinstance(entry, str) and not _SEQ.fullmatch(entry):
        return EventRef.find(entry)
    session: object
    seq: object
    if isinstance(entry, dict):
        session, seq = entry.get("session_id") or session_id, entry.get("seq")
    elif isinstance(entry, list) and len(entry) == 2:
        session, seq = entry
    else:
        session, seq = session_id, entry
    if isinstance(seq, str) and _SEQ.fullmatch(seq):
        seq = int(seq)
    if isinstance(seq, bool) or not isinstance(seq, int) or not 0 <= seq <= MAX_SEQ:
        return None
    return EventRef(str(session), seq) if str(session).strip() else None


def row_scope(project: str | None, session_id: str) -> str:
    """The scope a session's derived rows carry: ``project:<key>`` when the session has
    a project, else ``session:<id>``."""
    return f"project:{project}" if project else f"session:{session_id}"


__all__ = ["MAX_SEQ", "EventRef", "event_ref", "event_ref_at", "parse_source_refs", "row_scope"]


# Claude Code's session ids are UUIDs, unique on every machine; any other id (a generic
# JSONL `s1`) is made unique by the origin id in front of it.
_GLOBAL_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)


def session_key(session_id: str, origin: str, pulled: bool) -> str:
    """The server's key for a local session: a pulled session's id already is one."""
    if pulled or _GLOBAL_ID.fullmatch(session_id):
        return session_id
    return f"{origin}/{session_id}"
