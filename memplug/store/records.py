"""The records of the storage port: what every backend reads and writes.

Plain msgspec Structs (docs/architecture.md "Records") with no SQL and no engine: the
services and hosts import them from here (or through :mod:`memplug.store.ports`), never
from a backend's modules, and a backend renders its own conditions from their fields
(the SQLite side: :mod:`memplug.store.search`, :mod:`memplug.store.timeline`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from msgspec import Struct, field

from memplug.base.refs import EventRef, event_ref


class SearchEvent(Struct, frozen=True):
    """One event as retrieval sees it (text is the stored, possibly capped, text)."""

    id: int
    session_id: str
    seq: int
    type: str
    role: str | None
    turn: int | None
    event_time: str | None
    tool_name: str | None
    outcome: str | None
    is_error: int | None
    source_kind: str | None
    generated: int
    searchable: int
    truncated: int
    text_chars: int
    content_hash: str
    entry_id: str | None
    parent_id: str | None
    project: str | None
    text: str | None

    @property
    def ref(self) -> str:
        return event_ref(self.session_id, self.seq)


class LightEvent:
    """What the first ranking pass needs of an event: identity, role, length, no text."""

    __slots__ = (
        "generated",
        "id",
        "role",
        "seq",
        "session_id",
        "source_kind",
        "text_chars",
        "type",
    )
    text: None = None

    def __init__(
        self,
        id: int,
        session_id: str,
        seq: int,
        type: str,
        role: str | None,
        generated: int,
        source_kind: str | None,
        text_chars: int,
    ) -> None:
        self.id = id
        self.session_id = session_id
        self.seq = seq
        self.type = type
        self.role = role
        self.generated = generated
        self.source_kind = source_kind
        self.text_chars = text_chars

    @property
    def ref(self) -> str:
        return event_ref(self.session_id, self.seq)


# The nearest events before and after one event, nearest first.
Neighbours = tuple[tuple[SearchEvent | LightEvent, ...], tuple[SearchEvent | LightEvent, ...]]


# Not frozen, for the reason given at SearchEvent: a query builds hundreds of these.
class SearchItem(Struct):
    rid: int
    id: str
    session_id: str
    project: str | None
    kind: str
    content: str
    status: str
    evidence_type: str
    superseded_by: str | None
    subject_key: str | None
    source_refs_json: str
    conditions_json: str
    numbers_json: str
    derived_from_seq: int
    content_hash: str
    extractor: str


class Snapshot(Struct, frozen=True):
    """The state a result was computed from: nothing newer is ever read under it."""

    max_event_id: int
    max_item_rid: int


class EventScope(Struct, frozen=True):
    """Which events a query may see. ``None`` fields do not restrict."""

    # Project scope is resolved to its sessions first: events.project keeps only what
    # the host sent, while sessions.project falls back to the cwd.
    session_ids: tuple[str, ...] | None = None
    roles: tuple[str, ...] = ()
    types: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    outcomes: tuple[str, ...] = ()
    since: str | None = None
    until: str | None = None
    include_generated: bool = True
    # Source kinds never returned even when generated text is included (memplug's own
    # injections would otherwise be found again and echoed back).
    exclude_source_kinds: tuple[str, ...] = ()


class ItemScope(Struct, frozen=True):
    session_ids: tuple[str, ...] | None = None
    statuses: tuple[str, ...] = ("active", "superseded", "disputed")


class TermMatches(Struct, frozen=True):
    """One indexed term's newest in-scope matches (the store's row handles, newest
    first, at most the limit asked for) and its document frequency under the snapshot."""

    handles: list[int]
    df: float
    # More matched than the limit: ``df`` is estimated from the newest ones' density.
    estimated: bool = False


class ScanMatches(Struct, frozen=True):
    rows: list[Any]
    # Rows older than the scan window exist in scope: the scan did not see them.
    window_cut: bool = False


class BranchRow(Struct, frozen=True):
    """What the active-path walk (memplug.base.branches) needs of one event."""

    id: int
    seq: int
    entry_id: str | None
    parent_id: str | None
    sidechain: bool = False
    type: str | None = None
    call_id: str | None = None


class ScopeStats(Struct):
    """Rough sizes used for IDF: sums of the sessions' last sequence numbers."""

    events: int
    sessions: int
    last_seq: dict[str, int] = field(default_factory=dict)


class NewEvent(Struct, frozen=True):
    """One event to store, as capture made it: every column but the id the store gives
    it and the ``ingested_at`` the writer stamps on a whole batch."""

    session_id: str
    seq: int
    type: str
    event_time: str | None
    turn: int | None
    step: int | None
    role: str | None
    text: str
    content_json: str | None
    source_kind: str | None
    source_form: str | None
    tool_name: str | None
    call_id: str | None
    outcome: str | None
    is_error: int | None
    entry_id: str | None
    parent_id: str | None
    cwd: str | None
    project: str | None
    generated: int
    searchable: int
    store: str
    truncated: int
    text_chars: int
    private_spans: int
    flags: int
    content_hash: str
    extra_json: str | None


class EventRow(Struct, frozen=True):
    """One stored event as memplug keeps it (text capped; see ``full_text``)."""

    id: int
    session_id: str
    seq: int
    type: str
    event_time: str | None
    turn: int | None
    step: int | None
    role: str | None
    text: str
    content_json: str | None
    source_kind: str | None
    source_form: str | None
    tool_name: str | None
    call_id: str | None
    outcome: str | None
    is_error: int | None
    entry_id: str | None
    parent_id: str | None
    cwd: str | None
    project: str | None
    generated: int
    searchable: int
    store: str
    truncated: int
    text_chars: int
    private_spans: int
    flags: int
    content_hash: str
    extra_json: str | None
    ingested_at: str

    @property
    def project_key(self) -> str | None:
        """The project the event belongs to, from the event alone (the host's project,
        else its cwd), so that how events were batched on delivery cannot change it."""
        return self.project or self.cwd

    @property
    def agent(self) -> str | None:
        """The agent the host says made the event (its ``agent_id`` field, kept in the
        extras: Claude Code's subagent records), else None."""
        if not self.extra_json or '"agent_id"' not in self.extra_json:
            return None  # most events: no parse
        try:
            value = json.loads(self.extra_json).get("agent_id")
        except (ValueError, AttributeError):
            return None
        return value if isinstance(value, str) and value else None

    @property
    def ref(self) -> str:
        return event_ref(self.session_id, self.seq)


class InsertResult(Struct, frozen=True):
    new: int
    present: int
    sessions: tuple[str, ...]


class ItemRow(Struct, frozen=True):
    """One ``memory_items`` row."""

    rid: int
    id: str
    session_id: str
    project: str | None
    kind: str
    content: str
    conditions_json: str
    scope_json: str
    numbers_json: str
    source_refs_json: str
    evidence_type: str
    status: str
    supersedes_json: str
    superseded_by: str | None
    subject_key: str | None
    content_hash: str
    extractor: str
    derived_from_seq: int
    created_at: str | None
    updated_at: str | None
    row_scope: str | None = None  # the `scope` column: project:<key> or session:<id>
    agent: str | None = None

    @property
    def source_refs(self) -> list[str]:
        return list(json.loads(self.source_refs_json or "[]"))

    @property
    def supersedes(self) -> list[str]:
        return list(json.loads(self.supersedes_json or "[]"))

    @property
    def numbers(self) -> list[dict[str, Any]]:
        return list(json.loads(self.numbers_json or "[]"))

    @property
    def conditions(self) -> list[str]:
        return list(json.loads(self.conditions_json or "[]"))

    @property
    def scope(self) -> dict[str, Any]:
        return dict(json.loads(self.scope_json or "{}"))

    @property
    def last_seq(self) -> int:
        """The seq of the latest event of its own session that stated it."""
        seqs = [self.derived_from_seq]
        for ref in self.source_refs:
            parsed = EventRef.find(ref)
            if parsed is not None and parsed.session_id == self.session_id:
                seqs.append(parsed.seq)
        return max(seqs)

    def as_dict(self) -> dict[str, Any]:
        """The stable JSON shape of an item (``memory items --json``)."""
        return {
            "id": self.id,
            "session_id": self.session_id,
            "project": self.project,
            "kind": self.kind,
            "content": self.content,
            "status": self.status,
            "evidence_type": self.evidence_type,
            "superseded_by": self.superseded_by,
            "supersedes": self.supersedes,
            "subject_key": self.subject_key,
            "source_refs": self.source_refs,
            "conditions": self.conditions,
            "numbers": self.numbers,
            "scope": self.scope,
            "extractor": self.extractor,
            "derived_from_seq": self.derived_from_seq,
            "content_hash": self.content_hash,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "agent": self.agent,
        }


class ActionRow(Struct, frozen=True):
    """A lifecycle change a person made (``memory retract`` / ``memory promote``)."""

    id: int
    memory_id: str
    action: str
    actor: str
    at: str
    note: str | None

    @property
    def params(self) -> dict[str, Any]:
        """What the action recorded: ``session_id``, ``after_seq`` and its options."""
        try:
            value = json.loads(self.note or "{}")
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "memory_id": self.memory_id,
            "action": self.action,
            "actor": self.actor,
            "at": self.at,
            **self.params,
        }


class LogRecord(Struct, frozen=True):
    """What an assembly attempt leaves behind (the ``assembly_logs`` row, decoded)."""

    session_id: str
    trigger: str
    created_at: str
    budget: int
    used_tokens: int
    token_source: str
    injected: bool
    turn: int | None = None
    step: int | None = None
    query_text: str | None = None
    query: Mapping[str, Any] = field(default_factory=dict)
    content_hash: str | None = None
    text: str | None = None
    sections: Sequence[Mapping[str, Any]] = ()
    included: Sequence[Mapping[str, Any]] = ()
    omitted: Sequence[Mapping[str, Any]] = ()
    coverage: Mapping[str, Any] = field(default_factory=dict)
    errors: Sequence[str] = ()
    duration_ms: float | None = None
    message_seq: int | None = None
    id: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "session_id": self.session_id,
            "turn": self.turn,
            "step": self.step,
            "trigger": self.trigger,
            "created_at": self.created_at,
            "injected": self.injected,
            "budget": self.budget,
            "used_tokens": self.used_tokens,
            "token_source": self.token_source,
            "content_hash": self.content_hash,
            "message_seq": self.message_seq,
            "duration_ms": self.duration_ms,
            "query": {"text": self.query_text, **dict(self.query)},
            "coverage": dict(self.coverage),
            "errors": list(self.errors),
            "sections": [dict(s) for s in self.sections],
            "included": [dict(i) for i in self.included],
            "omitted": [dict(o) for o in self.omitted],
            "text": self.text,
        }


class SkillRow(Struct, frozen=True):
    name: str
    path: str
    source: str
    version: int
    enabled: bool
    description: str | None
    when_to_use: str | None
    invocation: str | None
    content_hash: str
    removed_at: str | None = None

    @property
    def in_force(self) -> bool:
        """Enabled, and its file was still there at the last ingest of its directory."""
        return self.enabled and self.removed_at is None

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "path": self.path,
            "source": self.source,
            "version": self.version,
            "enabled": self.enabled,
            "description": self.description,
            "when_to_use": self.when_to_use,
            "invocation": self.invocation,
            "content_hash": self.content_hash,
            "removed_at": self.removed_at,
        }


# Not frozen: every step reads the active rules, and a frozen instance costs a setattr
# call per field to build.
class RuleRow(Struct):
    """A rule as it is in force: parsed values with any override applied."""

    id: str
    skill: str
    key: str
    text: str
    category: str
    scope: Mapping[str, Any]
    source_path: str
    line: int
    active: bool
    content_hash: str
    version: int
    overridden: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "key": self.key,
            "skill": self.skill,
            "category": self.category,
            "text": self.text,
            "source_path": self.source_path,
            "line": self.line,
            "active": self.active,
            "scope": dict(self.scope),
            "version": self.version,
            "overridden": list(self.overridden),
        }


class ParsedRule(Struct, frozen=True):
    """A rule line as ingestion found it (what ``rules`` stores before overrides)."""

    key: str
    text: str
    category: str
    scope: Mapping[str, Any]
    line: int
    content_hash: str


class ValidationRecord(Struct, frozen=True):
    """One ``validation_logs`` row."""

    session_id: str
    event_seq: int
    target: str
    trigger: str
    created_at: str
    ok: bool
    checked: int
    skipped: int
    deterministic: bool
    blocked: bool
    repair_attempt: int = 0
    violations: Sequence[Mapping[str, Any]] = ()
    errors: Sequence[Mapping[str, Any]] = ()
    id: int | None = None

    @property
    def exhausted(self) -> bool:
        """Findings that would block, but the session's repair attempts were spent."""
        return not self.blocked and any(v.get("block") for v in self.violations)

    def as_dict(self, max_repair_attempts: int) -> dict[str, Any]:
        """The shape ``memory validate --json`` prints (and status and explain show)."""
        return {
            "id": self.id,
            "session_id": self.session_id,
            "event_seq": self.event_seq,
            "target": self.target,
            "trigger": self.trigger,
            "created_at": self.created_at,
            "ok": self.ok,
            "checked": self.checked,
            "skipped": self.skipped,
            "deterministic": self.deterministic,
            "blocking": self.blocked,
            "repair_attempt": self.repair_attempt,
            "max_repair_attempts": max_repair_attempts,
            "exhausted": self.exhausted,
            "violations": [dict(v) for v in self.violations],
            "errors": [dict(e) for e in self.errors],
        }


class SkillWrite(Struct):
    """What one skill file contributes on ingestion."""

    name: str
    source: str
    path: str
    content: str
    content_hash: str
    enabled: bool
    description: str | None
    when_to_use: str | None
    invocation: str | None
    rules: list[ParsedRule] = field(default_factory=list)


class ScopeFilter(Struct, frozen=True):
    """Which derived rows a query sees: rows of one session, rows one agent made, rows
    whose ``scope`` is one of ``scopes``, or (all None) every row."""

    session_id: str | None = None
    scopes: tuple[str, ...] | None = None
    agent: str | None = None


class EntryRow(Struct, frozen=True):
    id: str
    session_id: str
    scope: str
    kind: str
    seq_from: int
    seq_to: int
    event_time: str | None
    text: str
    ref: str | None
    entities: tuple[str, ...]
    ingested_at: str | None
    ref_status: str | None
    agent: str | None = None


class EdgeRow(Struct, frozen=True):
    session_id: str
    src: str
    relation: str
    dst: str
    scope: str
    first_seq: int
    last_seq: int
    last_event_time: str | None
    statements: int

    def order_key(self) -> tuple[str, str, int]:
        """When the edge was last stated: event time, then session and seq."""
        return (self.last_event_time or "", self.session_id, self.last_seq)


class EntityRow(Struct, frozen=True):
    entity: str
    type: str
    name: str
    sessions: int
    mentions: int


class ItemFact(Struct, frozen=True):
    """What the views need of an item: an event created it; its status may change later
    and is read when the view is read, never copied."""

    id: str
    kind: str
    content: str
    subject_key: str | None
    numbers: tuple[dict[str, Any], ...]


class ToolCallRow(Struct, frozen=True):
    seq: int
    tool_name: str | None
    text: str
    cwd: str | None


class WorkRow(Struct, frozen=True):
    """One work record: a tool call and, once it arrived, its result's outcome."""

    session_id: str
    seq: int
    call_id: str | None
    tool: str
    action: str
    target: str
    result_seq: int | None
    outcome: str | None
    exit_code: int | None
    turn: int | None
    event_time: str | None
    project: str | None
    words: str


class VectorScan(Struct):
    """In-scope vectors with their events' own (session, seq) keys — the same in every
    database, unlike row ids — so equal scores can break ties identically everywhere."""

    ids: list[int] = field(default_factory=list)
    keys: list[tuple[str, int]] = field(default_factory=list)
    blobs: list[bytes] = field(default_factory=list)
    scales: list[float] = field(default_factory=list)


class VectorCounts(Struct, frozen=True):
    embeddable: int
    current: int
    stale: int

    @property
    def missing(self) -> int:
        """Embeddable events without a vector of the current model (stale ones included)."""
        return self.embeddable - self.current

    def as_dict(self) -> dict[str, int]:
        return {
            "embeddable": self.embeddable,
            "current": self.current,
            "stale": self.stale,
            "missing": self.missing,
        }


class PurgePlan(Struct, frozen=True):
    """What a purge would remove, computed before asking a person to confirm."""

    scope: str
    sessions: tuple[str, ...]
    partial: dict[str, int] = field(default_factory=dict)
    events: int = 0
    undated_kept: int = 0
    missing: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.sessions and not self.partial and not self.events

    def as_dict(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "sessions": list(self.sessions),
            "missing_sessions": list(self.missing),
            "partial_sessions": dict(self.partial),
            "events": self.events,
            "undated_kept": self.undated_kept,
        }


class PurgeCounts(Struct):
    """Rows deleted per table, and the sessions that lost only part of their events."""

    deleted: dict[str, int] = field(default_factory=dict)
    sessions: tuple[str, ...] = ()
    partial: tuple[str, ...] = ()

    def add(self, table: str, count: int) -> None:
        if count:
            self.deleted[table] = self.deleted.get(table, 0) + count


class Remote(Struct, frozen=True):
    url: str
    origin: str
    pull_cursor: str
    tombstone_cursor: str
    created_at: str
    last_sync_at: str | None


class SharedProject(Struct, frozen=True):
    project: str
    pushed_id: int
    shared_at: str
    unpushed: int


class Tombstone(Struct, frozen=True):
    id: int
    session_key: str
    before_epoch: float | None
