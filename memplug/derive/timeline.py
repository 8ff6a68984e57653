"""The timeline: what happened and when, derived from events and items (seed 002), and
its paged view. See docs/timeline.md.

One entry per decision or constraint (an item an event created), tool outcome, file a
tool call touched, compaction, and session start or end. Each keeps its provenance:
session, seq range (a tool outcome spans its call and its result), the event's own
time, and — read from the evidence, never copied — when memplug ingested it. Entries
are derived state: ids hash the session, seq, kind and what the entry stands for, and
`memory rebuild` (or the same events delivered in any order) gives the same rows.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from typing import Any

from msgspec import Struct, field

from memplug.base.call_tokens import decode_token, encode_token
from memplug.base.config import Config
from memplug.base.errors import ValidationError
from memplug.base.refs import row_scope
from memplug.base.text import clip, parse_time, short_hash
from memplug.base.vocab import COMPACTION_TYPES, TIMELINE_KINDS
from memplug.derive.entities import in_text, in_tool_input, project_entity, tool_paths
from memplug.derive.graph import Graph
from memplug.derive.scopes import NamedScope, resolve
from memplug.store.ports import Storage
from memplug.store.records import EntryRow, EventRow, ItemFact, ToolCallRow

ENTRY_KINDS = TIMELINE_KINDS
# Item kinds the timeline shows; an item's entry is stored as ITEM_ENTRY and takes the
# item's kind when read.
ITEM_KINDS: tuple[str, ...] = ("decision", "constraint")
ITEM_ENTRY = "item"
FAILED_OUTCOMES: frozenset[str] = frozenset({"failed", "aborted", "timed_out"})
DEFAULT_LIMIT = 20
HARD_LIMIT = 100
# Characters of an entry's text a page carries; the follow token reads the rest.
ENTRY_TEXT_CHARS = 300
_TOKEN_OP = "timeline"
# Tool calls remembered between a call and its result (parallel calls interleave).
CALL_MEMORY = 256
_ERROR_LINE = re.compile(
    r"(?:error|exception|traceback|failed|failure|fatal|denied|refused|not found|"
    r"no such|timed out|timeout|exit(?: code| status)? \d+)\b",
    re.IGNORECASE,
)


def entry_id(session_id: str, seq: int, kind: str, key: str) -> str:
    return "tl_" + short_hash(session_id, str(seq), kind, key)


def failure_line(output: str) -> str:
    """The line of a failed tool's output that says what went wrong: the first that
    names an error, else the last (where a summary or an exit status usually is)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return next((line for line in lines if _ERROR_LINE.search(line)), lines[-1] if lines else "")


class _Entry(Struct, frozen=True):
    kind: str
    seq_from: int
    text: str
    ref: str | None = None
    entities: tuple[str, ...] = ()


class TimelineDeriver:
    """Timeline entries of each event (an extraction follower)."""

    # Recorded with the derived rows; raise it with a change to them (rederive.Follower).
    name = "timeline"
    version = 1

    def __init__(self, store: Storage) -> None:
        self.store = store
        self.rows = store.timeline
        # Calls seen in this process, so that a result finds its call without a query
        # (a session's calls are read in seq order, each shortly before its result).
        self._calls: OrderedDict[tuple[str, str], ToolCallRow] = OrderedDict()

    def clear(self, session_id: str) -> None:
        self.rows.clear(session_id)

    def prepare(self, event: EventRow) -> None:
        # The files of a call are read by the same served scan the graph prepares.
        return None

    def follow(self, event: EventRow, items: Sequence[ItemFact] = ()) -> None:
        if event.type == "tool/call" and event.call_id:
            call = ToolCallRow(event.seq, event.tool_name, event.text, event.cwd)
            self._calls[(event.session_id, event.call_id)] = call
            while len(self._calls) > CALL_MEMORY:
                self._calls.popitem(last=False)
        scope, agent = row_scope(event.project_key, event.session_id), event.agent
        for entry in self._entries(event, items):
            self.rows.add_entry(
                id=entry_id(event.session_id, event.seq, entry.kind, entry.ref or entry.text),
                session_id=event.session_id,
                scope=scope,
                kind=entry.kind,
                seq_from=entry.seq_from,
                seq_to=event.seq,
                event_time=event.event_time,
                text=entry.text,
                ref=entry.ref,
                entities=entry.entities,
                agent=agent,
            )

    def _entries(self, event: EventRow, items: Sequence[ItemFact]) -> Iterator[_Entry]:
        kind = event.type
        if kind in ("session/start", "session/end"):
            home = project_entity(event.project_key)
            where = f" in {event.cwd}" if event.cwd else ""
            verb = "started" if kind == "session/start" else "ended"
            yield _Entry(f"session_{verb}", event.seq, f"session {verb}{where}",
                         entities=(home.id,) if home else ())  # fmt: skip
        elif kind in COMPACTION_TYPES:
            phase = kind.split("/", 1)[1]
            yield _Entry("compaction", event.seq, f"compaction {phase} ({event.text_chars} chars)")
        elif kind == "tool/call":
            files = tool_paths(event.tool_name, event.text, event.cwd)
            if files:
                names = ", ".join(f.id.removeprefix("file:") for f in files)
                yield _Entry("file_touched", event.seq, f"{event.tool_name or 'tool'} {names}",
                             event.call_id, tuple(f.id for f in files))  # fmt: skip
        elif kind == "tool/result":
            outcome = self._outcome(event)
            if outcome is not None:
                yield outcome
        for item in items:
            # Every item: its kind when the timeline is read decides whether it shows.
            named = tuple(in_text(item.content, event.cwd).ids)
            yield _Entry(ITEM_ENTRY, event.seq, item.content, item.id, named)

    def _call(self, result: EventRow) -> ToolCallRow | None:
        assert result.call_id is not None
        known = self._calls.get((result.session_id, result.call_id))
        if known is not None and known.seq < result.seq:
            return known
        return self.rows.tool_call(result.session_id, result.call_id, result.seq)

    def _outcome(self, event: EventRow) -> _Entry | None:
        """A tool result's outcome, spanning the call it answers when that is known."""
        outcome = event.outcome or ("failed" if event.is_error else None)
        if outcome is None:
            return None
        call = self._call(event) if event.call_id else None
        tool = event.tool_name or (call.tool_name if call else None) or "tool"
        named: tuple[str, ...] = ()
        start = event.seq
        if call is not None:
            start = call.seq
            named = tuple(in_tool_input(call.tool_name, call.text, call.cwd).ids)
        if outcome in FAILED_OUTCOMES:
            line = failure_line(event.text)
            text = f"{tool} {outcome}" + (f": {clip(line, 200)}" if line else "")
            return _Entry("tool_failed", start, text, event.call_id, named)
        return _Entry("tool_succeeded", start, f"{tool} {outcome}", event.call_id, named)


class TimelineRequest(Struct, frozen=True):
    """A resolved timeline query: what a page token carries to continue it."""

    scope: str
    since: str | None = None
    until: str | None = None
    entity: str | None = None
    kinds: tuple[str, ...] = field(default_factory=tuple)
    limit: int = DEFAULT_LIMIT

    def args(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "since": self.since,
            "until": self.until,
            "entity": self.entity,
            "kinds": list(self.kinds),
            "limit": self.limit,
        }


class Timeline:
    """Read the timeline in pages, within a scope."""

    def __init__(self, store: Storage, config: Config) -> None:
        self.store = store
        self.rows = store.timeline
        self.config = config

    def query(
        self,
        *,
        scope: str | None = None,
        project: str | None = None,
        session: str | None = None,
        since: str | None = None,
        until: str | None = None,
        entity: str | None = None,
        kinds: Sequence[str] = (),
        limit: int = DEFAULT_LIMIT,
        cwd: str | None = None,
    ) -> dict[str, Any]:
        """The first page; ``next`` continues it (see :meth:`page`)."""
        resolved = resolve(self.store, scope=scope, project=project, session=session, cwd=cwd)
        unknown = sorted(set(kinds) - set(ENTRY_KINDS))
        if unknown:
            raise ValidationError(
                f"unknown kind '{unknown[0]}' (expected one of: {', '.join(ENTRY_KINDS)})"
            )
        if not 1 <= int(limit) <= HARD_LIMIT:
            raise ValidationError(f"--limit must be between 1 and {HARD_LIMIT}")
        request = TimelineRequest(
            scope=resolved.name,
            since=parse_time(since, "since"),
            until=parse_time(until, "until"),
            entity=Graph(self.store).resolve(entity, resolved) if entity else None,
            kinds=tuple(sorted(set(kinds))),
            limit=int(limit),
        )
        return self._page(request, resolved, self.rows.snapshot(), 0)

    def page(self, token: str) -> dict[str, Any]:
        """Follow a ``next`` token: the same query over the same events, the next page."""
        data = decode_token(token)
        if data.get("op") != _TOKEN_OP:
            raise ValidationError("this token is not a timeline page token")
        try:
            args = dict(data["a"])
            request = TimelineRequest(
                scope=str(args["scope"]),
                since=args.get("since"),
                until=args.get("until"),
                entity=args.get("entity"),
                kinds=tuple(str(k) for k in args.get("kinds", ())),
                limit=max(1, min(int(args["limit"]), HARD_LIMIT)),
            )
            snap, offset = int(data["snap"]), int(data["o"])
        except (KeyError, TypeError, ValueError):
            raise ValidationError("malformed memplug call token") from None
        return self._page(request, resolve(self.store, scope=request.scope), snap, offset)

    def _page(
        self, request: TimelineRequest, scope: NamedScope, snap: int, offset: int
    ) -> dict[str, Any]:
        total, rows = self.rows.entries(
            scope.where,
            item_kinds=ITEM_KINDS,
            snap=snap,
            since=request.since,
            until=request.until,
            entity=request.entity,
            kinds=request.kinds,
            offset=offset,
            limit=request.limit,
        )
        end = offset + len(rows)
        next_token = None
        if end < total:
            next_token = encode_token(
                {"op": _TOKEN_OP, "a": request.args(), "o": end, "snap": snap}
            )
        return {
            "scope": scope.name,
            "total": total,
            "entries": [_entry_dict(row) for row in rows],
            "next": next_token,
            "coverage": self._coverage(scope),
        }

    def _coverage(self, scope: NamedScope) -> dict[str, Any]:
        reasons = []
        if not self.config.extraction.enabled:
            reasons.append("extraction_disabled")
        elif self.rows.lagging(scope.where):
            reasons.append("derivation_lagging")
        return {"complete": not reasons, "reasons": reasons}


def _entry_dict(row: EntryRow) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": row.id,
        "kind": row.kind,
        "session_id": row.session_id,
        "seq_from": row.seq_from,
        "seq_to": row.seq_to,
        "event_time": row.event_time,
        "ingested_at": row.ingested_at,
        "scope": row.scope,
        "text": clip(row.text, ENTRY_TEXT_CHARS),
        "entities": list(row.entities),
        "agent": row.agent,
        "follow": encode_token({"op": "expand", "s": row.session_id, "q": row.seq_from,
                                "a": row.seq_to - row.seq_from, "br": "all"}),
    }  # fmt: skip
    if row.ref is not None:
        data["ref"] = row.ref
    if row.ref_status is not None:
        data["status"] = row.ref_status
    return data
