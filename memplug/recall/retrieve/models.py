"""What retrieval returns: search pages and hits, expand results, ranked items and
events for assembly, and the coverage every result carries.

Plain frozen records (docs/architecture.md "Records"): retrieval builds them, it never
parses them, and a hook process that imported pydantic for them would pay more than it
ever checks.
:func:`result_json` is the one way they become JSON (``page.as_json()``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from msgspec import Struct, field

from memplug.base.refs import event_ref, parse_source_refs
from memplug.recall.retrieve.refs import json_list
from memplug.store.records import SearchEvent, SearchItem

if TYPE_CHECKING:
    from memplug.recall.retrieve.strength import QueryTerms
    from memplug.store.records import ItemRow


def result_json(result: Any) -> Any:
    """A result as JSON types, leaving out its fields that are None (not None values
    inside a plain dict, such as an expanded item's)."""
    if isinstance(result, Struct):
        return {
            name: result_json(value)
            for name in result.__struct_fields__
            if (value := getattr(result, name)) is not None
        }
    if isinstance(result, list | tuple):
        return [result_json(value) for value in result]
    return result


class ErrorInfo(Struct, frozen=True, kw_only=True):
    code: str
    message: str


class Coverage(Struct, frozen=True, kw_only=True):
    """``complete`` is false when anything was cut; ``reasons`` names what."""

    complete: bool = True
    reasons: list[str] = field(default_factory=list)
    error: ErrorInfo | None = None
    # What the caller (a person, an agent) can do about ``reasons``, one line each.
    next_steps: list[str] | None = None

    def as_dict(self) -> dict[str, Any]:
        """An assembly's coverage (``memory assemble --json``, the assembly log): the
        error stays with the retrieval result, whose own JSON is :func:`result_json`."""
        return {"complete": self.complete, "reasons": list(self.reasons)}


class Hit(Struct, frozen=True, kw_only=True):
    """One search hit: an event (``session_id`` + ``seq``) or a memory item (``id``)."""

    kind: Literal["event", "memory"]
    session_id: str
    seq: int | None = None
    id: str | None = None
    score: float
    pinned: bool = False
    why: str
    snippet: str
    snippet_truncated: bool = False
    follow: str
    # A long event's hit opens it here (``SESSION:SEQ@OFFSET``); None: it is read whole.
    opens_at: int | None = None
    type: str | None = None
    role: str | None = None
    time: str | None = None
    tool_name: str | None = None
    outcome: str | None = None
    generated: bool = False
    truncated: bool = False
    item_kind: str | None = None
    status: str | None = None
    evidence_type: str | None = None
    # Memory hits: the events the item was extracted from, ``[{session_id, seq}]``.
    sources: list[dict[str, Any]] | None = None


class SearchPage(Struct, frozen=True, kw_only=True):
    total: int
    # Where this page's first hit stands in the whole ranking (0 on the first page).
    offset: int = 0
    hits: list[Hit]
    next: str | None = None
    coverage: Coverage

    def as_json(self) -> dict[str, Any]:
        """The page as ``memory search --json`` prints it (fields that are None left out)."""
        data: dict[str, Any] = result_json(self)
        return data


class TextRange(Struct, frozen=True, kw_only=True):
    start: int
    end: int
    total: int
    complete: bool


class ExpandedEvent(Struct, frozen=True, kw_only=True):
    session_id: str
    seq: int
    type: str
    role: str | None = None
    time: str | None = None
    turn: int | None = None
    tool_name: str | None = None
    outcome: str | None = None
    generated: bool = False
    anchor: bool = False
    entry_id: str | None = None
    parent_id: str | None = None
    text: str
    text_range: TextRange


class ExpandResult(Struct, frozen=True, kw_only=True):
    anchor: str | None = None
    item: dict[str, Any] | None = None
    events: list[ExpandedEvent] = field(default_factory=list)
    next: str | None = None
    coverage: Coverage

    def as_json(self) -> dict[str, Any]:
        """The result as ``memory expand --json`` prints it (fields that are None left out)."""
        data: dict[str, Any] = result_json(self)
        return data


class RankedItem(Struct, frozen=True):
    id: str
    kind: str
    content: str
    status: str
    evidence_type: str
    session_id: str
    score: float
    why: str
    pinned: bool
    superseded_by: str | None
    subject_key: str | None
    source_refs: tuple[tuple[str, int], ...]
    conditions: tuple[Any, ...]
    numbers: tuple[Any, ...]
    extractor: str

    @classmethod
    def of(
        cls,
        item: SearchItem | ItemRow,
        *,
        score: float = 0.0,
        why: str = "",
        pinned: bool = False,
    ) -> RankedItem:
        """The item in full (a candidate or a stored row): references and lists parsed."""
        return cls(
            id=item.id,
            kind=item.kind,
            content=item.content,
            status=item.status,
            evidence_type=item.evidence_type,
            session_id=item.session_id,
            score=score,
            why=why,
            pinned=pinned,
            superseded_by=item.superseded_by,
            subject_key=item.subject_key,
            source_refs=parse_source_refs(item.source_refs_json, item.session_id),
            conditions=tuple(json_list(item.conditions_json)),
            numbers=tuple(json_list(item.numbers_json)),
            extractor=item.extractor,
        )


class RankedEvent(Struct, frozen=True):
    session_id: str
    seq: int
    type: str
    role: str | None
    text: str
    score: float
    why: str
    pinned: bool
    time: str | None
    turn: int | None
    source_kind: str | None
    generated: bool
    truncated: bool
    tool_name: str | None
    outcome: str | None

    @property
    def ref(self) -> str:
        return event_ref(self.session_id, self.seq)

    @classmethod
    def of(
        cls, event: SearchEvent, *, score: float = 0.0, why: str = "", pinned: bool = False
    ) -> RankedEvent:
        return cls(
            session_id=event.session_id,
            seq=event.seq,
            type=event.type,
            role=event.role,
            text=event.text or "",
            score=score,
            why=why,
            pinned=pinned,
            time=event.event_time,
            turn=event.turn,
            source_kind=event.source_kind,
            generated=bool(event.generated),
            truncated=bool(event.truncated),
            tool_name=event.tool_name,
            outcome=event.outcome,
        )


class Omitted(Struct, frozen=True):
    ref: str
    reason: str
    score: float | None = None


class RetrievalResult(Struct, frozen=True):
    session_id: str
    items: tuple[RankedItem, ...]
    evidence: tuple[RankedEvent, ...]
    omitted: tuple[Omitted, ...]
    coverage: Coverage
    signals: dict[str, Any]
    successors: dict[str, RankedItem] = field(default_factory=dict)
    # The query's terms with their strength in scope (None when nothing was looked up).
    terms: QueryTerms | None = None
