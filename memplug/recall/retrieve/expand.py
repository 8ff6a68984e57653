"""``expand``: the full text around a hit (a ``follow`` token, ``SESSION:SEQ``,
``SESSION:SEQ@OFFSET`` or a ``mem_…`` id), in chunks of at most ``max_chars`` with a
``next`` token to continue."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from msgspec import Struct
from msgspec.structs import replace

from memplug.base.call_tokens import decode_token, encode_token, is_token
from memplug.base.errors import NotFound, ValidationError
from memplug.base.redaction import clear_cut
from memplug.base.refs import EventRef, event_ref
from memplug.base.text import clip
from memplug.recall.retrieve.branches import ActivePaths
from memplug.recall.retrieve.coverage import PARENT_CYCLE, coverage, stale
from memplug.recall.retrieve.models import (
    Coverage,
    ErrorInfo,
    ExpandedEvent,
    ExpandResult,
    RankedItem,
    TextRange,
)
from memplug.store.records import EventScope, SearchEvent, Snapshot

if TYPE_CHECKING:
    from memplug.store.ports import SearchPort

EXPAND_MAX_CHARS = 20_000
EXPAND_MAX_CONTEXT = 50
# A hit on an event longer than its window opens it at the match, this far before the
# matched words: a tool's output reads FOLLOW_CHARS, any other event (a turn, a
# compaction summary, a pasted log) twice that, its answer less often right at the match
# (docs/search.md, expand).
FOLLOW_CHARS = 1_500
FOLLOW_TURN_CHARS = 2 * FOLLOW_CHARS
FOLLOW_LEAD = 300
OUTPUT_TYPES = frozenset({"tool/result", "tool/call"})


def match_window(kind: str | None) -> int:
    """How much of an event of type ``kind`` a hit opened at its match reads."""
    return FOLLOW_CHARS if kind in OUTPUT_TYPES else FOLLOW_TURN_CHARS


class _Call(Struct, frozen=True):
    """One expand call, from its arguments or from the token that continues it."""

    session_id: str
    seq: int
    before: int
    after: int
    max_chars: int
    branches: str
    # Where the chunk starts: (index in the window, character offset in that event).
    cursor: tuple[int, int] = (0, 0)
    expected_hash: str | None = None
    top: int | None = None
    from_token: bool = False
    # A search hit's follow opens its event at the match (an offset in the anchor).
    anchor_offset: int = 0
    # SESSION:SEQ@OFFSET: the chunk is the anchor's match window (``match_window``).
    at_match: bool = False


class Expander:
    def __init__(self, store: SearchPort, paths: ActivePaths) -> None:
        self.store = store
        self.paths = paths

    def expand(
        self, target: str, before: int, after: int, max_chars: int, branches: str | None
    ) -> ExpandResult:
        call = self._call(target, before, after, max_chars, branches)
        if isinstance(call, ExpandResult):
            return call
        anchor = next(iter(self.store.events_by_refs([(call.session_id, call.seq)])), None)
        if anchor is None or (
            call.expected_hash and not anchor.content_hash.startswith(call.expected_hash)
        ):
            if call.from_token:
                return ExpandResult(
                    anchor=event_ref(call.session_id, call.seq),
                    coverage=stale("the event this token points at is gone (purged)"),
                )
            raise NotFound(f"no event {event_ref(call.session_id, call.seq)}")
        if call.at_match:
            total = len(self.full_text(anchor))
            if call.anchor_offset > total:
                raise ValidationError(
                    f"@{call.anchor_offset} is past the end of {anchor.ref} ({total} characters)"
                )
            call = replace(call, max_chars=min(call.max_chars, match_window(anchor.type)))
        top = call.top if call.top is not None else self.store.snapshot().max_event_id
        snap = Snapshot(top, 0)
        reasons: set[str] = set()
        window = self._window(call, anchor, snap, reasons)
        if isinstance(window, ExpandResult):
            return window
        if call.anchor_offset and window[0].id == anchor.id:
            # At the match only when the anchor opens the window: events asked for
            # before it are read whole, from their start.
            call = replace(call, cursor=(0, call.anchor_offset))
        events, next_token = self._chunk(call, anchor, window, snap)
        return ExpandResult(
            anchor=anchor.ref, events=events, next=next_token, coverage=coverage(reasons)
        )

    def _call(
        self, target: str, before: int, after: int, max_chars: int, branches: str | None
    ) -> _Call | ExpandResult:
        """The call ``target`` asks for (a memory item is expanded right away)."""
        before = bounded(before, "before")
        after = bounded(after, "after")
        max_chars = max(1, min(int(max_chars), EXPAND_MAX_CHARS))
        target = (target or "").strip()
        if is_token(target):
            data = decode_token(target)
            op = data.get("op")
            if op == "item":
                return self._item(str(data.get("id", "")), max_chars, token=True)
            if op != "expand":
                raise ValidationError("this token is not an expand token (use search --next)")
            call = _from_token(data, before, after, max_chars, branches)
        elif target.startswith("mem_"):
            return self._item(target, max_chars, token=False)
        else:
            found = EventRef.find_at(target)
            if found is None:
                shown = clip(target, 60)
                raise ValidationError(
                    f"expand takes a follow token, SESSION:SEQ[@OFFSET] or a mem_ id, not '{shown}'"
                )
            (session_id, seq), offset = found
            call = _Call(session_id, seq, before, after, max_chars, branches or "all")
            if offset is not None:
                call = replace(call, anchor_offset=offset, at_match=True)
        if call.branches not in ("active", "all"):
            raise ValidationError("--branches must be 'active' or 'all'")
        return call

    def _window(
        self, call: _Call, anchor: SearchEvent, snap: Snapshot, reasons: set[str]
    ) -> list[SearchEvent] | ExpandResult:
        """The anchor with up to ``before``/``after`` events around it: along the active
        path when asked for and the session branches, else in sequence order."""
        scope = EventScope(session_ids=(call.session_id,))
        path: list[int] = []
        if call.branches == "active":
            path, cycle = self.paths.path(call.session_id, snap)
            if cycle:
                reasons.add(PARENT_CYCLE)
        if not path:
            earlier, later = self.store.neighbours(
                call.session_id, call.seq, scope, snap, before=call.before, after=call.after
            )
            return [*earlier, anchor, *later]
        on_path = set(path)
        if anchor.id not in on_path:
            return ExpandResult(
                anchor=anchor.ref,
                coverage=Coverage(
                    complete=False,
                    reasons=["address_not_on_active_branch"],
                    error=ErrorInfo(
                        code="address_not_found",
                        message=f"{anchor.ref} is not on the session's active branch "
                        "(use --branches all)",
                    ),
                ),
            )
        ordered = [
            e
            for e in self.store.session_in_scope(call.session_id, scope, snap)
            if e.id in on_path or e.id == anchor.id
        ]
        idx = next((i for i, e in enumerate(ordered) if e.id == anchor.id), None)
        if idx is None:
            return [anchor]
        earlier = ordered[max(0, idx - call.before) : idx]
        later = ordered[idx + 1 : idx + 1 + call.after]
        return [*earlier, anchor, *later]

    def _chunk(
        self, call: _Call, anchor: SearchEvent, window: list[SearchEvent], snap: Snapshot
    ) -> tuple[list[ExpandedEvent], str | None]:
        """The window's text from the call's cursor, up to ``max_chars``, and the token
        that continues where it stopped."""
        events: list[ExpandedEvent] = []
        budget = call.max_chars
        start_index, start_offset = call.cursor
        for index, event in enumerate(window):
            if index < start_index:
                continue
            full = self.full_text(event)
            begin = start_offset if index == start_index else 0
            # Never inside a secret: a start that would split one moves past it.
            begin = clear_cut(full, min(begin, len(full)), len(full))[0]
            take = min(budget, len(full) - begin)
            # A chunk does not end inside a secret (the next one starts with it whole);
            # unless the secret starts the chunk, which must still make progress.
            end = clear_cut(full, begin, begin + take)[1]
            if end == begin:
                end = begin + take
            take = end - begin
            events.append(expanded(event, full, begin, end, anchor=event.id == anchor.id))
            budget -= take
            if end < len(full) or (budget <= 0 and index + 1 < len(window)):
                next_index, next_offset = (index, end) if end < len(full) else (index + 1, 0)
                token = encode_token(
                    {
                        "op": "expand",
                        "s": call.session_id,
                        "q": call.seq,
                        "h": anchor.content_hash[:16],
                        "b": call.before,
                        "a": call.after,
                        "br": call.branches,
                        "ci": next_index,
                        "co": next_offset,
                        "top": snap.max_event_id,
                        "mc": call.max_chars,
                    }
                )
                return events, token
        return events, None

    def full_text(self, event: SearchEvent) -> str:
        if event.truncated:
            archived = self.store.archived_text(event.session_id, event.seq)
            if archived is not None:
                return archived
        return event.text or ""

    def _item(self, item_id: str, max_chars: int, *, token: bool) -> ExpandResult:
        item = self.store.item_by_id(item_id)
        if item is None:
            if token:
                return ExpandResult(coverage=stale("the memory item this token points at is gone"))
            raise NotFound(f"no memory item {item_id}")
        ranked = RankedItem.of(item)
        events = []
        budget = max_chars
        for event in self.store.events_by_refs(list(ranked.source_refs)):
            full = self.full_text(event)
            take = clear_cut(full, 0, min(budget, len(full)))[1]
            events.append(expanded(event, full, 0, take, anchor=True))
            budget -= take
        reasons = set()
        if any(not e.text_range.complete for e in events):
            reasons.add("expand_chunked")
        return ExpandResult(
            item={
                "id": ranked.id,
                "kind": ranked.kind,
                "content": ranked.content,
                "status": ranked.status,
                "evidence_type": ranked.evidence_type,
                "session_id": ranked.session_id,
                "superseded_by": ranked.superseded_by,
                "subject_key": ranked.subject_key,
                "source_refs": [event_ref(s, q) for s, q in ranked.source_refs],
            },
            events=events,
            coverage=coverage(reasons),
        )


def _from_token(
    data: dict[str, Any], before: int, after: int, max_chars: int, branches: str | None
) -> _Call:
    """An ``expand`` token's call; the caller's arguments fill what it leaves out."""
    try:
        return _Call(
            session_id=str(data["s"]),
            seq=int(data["q"]),
            expected_hash=data.get("h"),
            before=bounded(int(data.get("b", before)), "before"),
            after=bounded(int(data.get("a", after)), "after"),
            branches=str(data.get("br", branches or "all")) or "all",
            cursor=(int(data["ci"]), int(data.get("co", 0))) if "ci" in data else (0, 0),
            anchor_offset=0 if "ci" in data else max(0, int(data.get("co", 0))),
            top=int(data["top"]) if data.get("top") is not None else None,
            max_chars=max(1, min(int(data.get("mc", max_chars)), EXPAND_MAX_CHARS)),
            from_token=True,
        )
    except (KeyError, TypeError, ValueError):
        raise ValidationError("malformed memplug call token") from None


def bounded(value: int, name: str) -> int:
    """A ``--before``/``--after`` count: whole, not negative, at most the context cap."""
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ValidationError(f"--{name} must be a whole number") from None
    if number < 0:
        raise ValidationError(f"--{name} must not be negative")
    return min(number, EXPAND_MAX_CONTEXT)


def expanded(event: Any, full: str, begin: int, end: int, *, anchor: bool) -> ExpandedEvent:
    """One event of an expand result: the ``[begin, end)`` chunk of its full text."""
    return ExpandedEvent(
        session_id=event.session_id,
        seq=event.seq,
        type=event.type,
        role=event.role,
        time=event.event_time,
        turn=event.turn,
        tool_name=event.tool_name,
        outcome=event.outcome,
        generated=bool(event.generated),
        anchor=anchor,
        entry_id=event.entry_id,
        parent_id=event.parent_id,
        text=full[begin:end],
        text_range=TextRange(
            start=begin, end=end, total=len(full), complete=begin == 0 and end == len(full)
        ),
    )
