"""Assembly's data: candidates, requests, entries, omissions and results, with the reasons."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from msgspec import Struct, field

from memplug.base.messages import Message, TokenMeter
from memplug.base.refs import event_ref
from memplug.base.text import sha256_hex
from memplug.recall.assemble.relevance import (
    CARRIED,
    FELL_OFF,
    FEW_OWN,
    LITTLE,
    NOT_SPECIFIC,
    WEAK_TERMS,
)
from memplug.recall.retrieve.models import Coverage
from memplug.store.records import LogRecord

if TYPE_CHECKING:
    from memplug.recall.retrieve.strength import QueryTerms
    from memplug.recall.retrieve.work import WorkFound
    from memplug.recall.skill_rules import SkillContext
    from memplug.store.records import ValidationRecord


# How long an attempt waits for the write lock to log itself before giving up on the row.
LOG_WAIT_MS = 1000

# Section names, in the order they are filled and rendered.
SECTIONS: tuple[str, ...] = (
    "core",
    "task",
    "rules-core",
    "rules",
    "memory",
    "evidence",
    "index",
    "work",
    "notice",
)

# Omission reasons (the vocabulary explain, docs and tests agree on).
OVER_BUDGET = "over budget"
BELOW_MIN_SCORE = "below min score"
VISIBLE = "visible in context"
NOT_QUOTABLE = "not inline-quotable (assembly.evidenceTypes)"
SUPERSEDED = "superseded"
GENERATED = "generated source"
EMPTY_TEXT = "empty text"
DUPLICATE = "duplicate"
REDACTED = "redacted"
OVER_LIMIT = "over limit"  # set by retrieval: ranked past assembly.candidateLimit
# The kind of a work entry that is "where we were" rather than matched by the query.
RECENT = "recent"
# Retrieval's coverage reason for a session with no events (memplug.recall.retrieve.coverage).
UNKNOWN_SESSION = "unknown_session"
OVER_CORE_BUDGET = "over core budget"  # past assembly.coreBudgetTokens (memplug.recall.core)
IN_CORE = "in the core"
# A core line the host's own standing instructions already state (CLAUDE.md, AGENTS.md,
# which Claude Code loads itself): the reason names the file.
IN_MEMORY_FILE = "in {file}"
# A core decision a later one of the same choice replaced in another session (a
# database, a test runner, …: cues.categories), or a later value of its subject key.
REPLACED_LATER = "replaced by a later choice"
IN_TASK = "in the task section"
# A "where we were" record, when something else in memory answers the step's request.
ANSWERED = "the request is answered"
# Cited by an injection still in the model's context (since its latest compaction).
ALREADY_INJECTED = "already_injected"
# The agent announcing a step ("Let me read X", "Now I'll check Y"): no finding in it.
NARRATION = "narration"
# What is left of a quote once the cut and the copied blocks are taken out says nothing.
CUT_EMPTY = "nothing left after the cut"
# A work record that only says a call worked ("ran `ls` → ok", "read x.py").
ONLY_OK = "says only that it worked"
# A degradation notice with no evidence beside it whose absence it could qualify.
NOTHING_TO_QUALIFY = "nothing to qualify"
# A message that matched nothing itself, ranked only beside a matched tool call or its
# output: the agent's talk around the call (assembly.toolNeighbours).
BESIDE_TOOL = "only beside a tool call"
# A person's message that is mostly machine output they pasted in (a log, a command's
# output, JSON), in a step with tool events: what it shows is what a tool printed.
PASTED = "pasted output"
# For a request that asks nothing about earlier work, in a session of tool work: what
# was said on the way to a result (a question whose answer came later, the agent's talk
# before its reply of the turn, a tool call) rather than the result.
ON_THE_WAY = "on the way"
# After a compaction: every word of the line that can name something is in the summary
# the model now reads instead of the work before it.
IN_SUMMARY = "in the compaction summary"
OMISSION_REASONS: tuple[str, ...] = (
    OVER_BUDGET,
    BELOW_MIN_SCORE,
    VISIBLE,
    IN_SUMMARY,
    NOT_QUOTABLE,
    SUPERSEDED,
    GENERATED,
    EMPTY_TEXT,
    DUPLICATE,
    REDACTED,
    OVER_LIMIT,
    OVER_CORE_BUDGET,
    IN_CORE,
    IN_MEMORY_FILE,
    REPLACED_LATER,
    IN_TASK,
    ANSWERED,
    CARRIED,
    WEAK_TERMS,
    LITTLE,
    FELL_OFF,
    ALREADY_INJECTED,
    NARRATION,
    CUT_EMPTY,
    ONLY_OK,
    BESIDE_TOOL,
    PASTED,
    ON_THE_WAY,
    NOT_SPECIFIC,
    FEW_OWN,
    NOTHING_TO_QUALIFY,
)


# -- candidates ------------------------------------------------------------------------


class NumberInfo(Struct, frozen=True):
    """A number in a memory item, with what qualifies it."""

    text: str
    unit: str | None = None
    conditions: tuple[str, ...] = ()
    flagged: bool | None = None

    @property
    def bare(self) -> bool:
        """A number with neither unit nor condition: injected only with a warning."""
        if self.flagged is not None:
            return self.flagged
        return not self.unit and not self.conditions


class ItemCandidate(Struct, frozen=True):
    """A ranked memory item, as retrieval hands it to assembly."""

    id: str
    kind: str
    content: str
    evidence_type: str
    status: str = "active"
    score: float = 0.0
    why: str = ""
    session_id: str = ""
    conditions: tuple[str, ...] = ()
    numbers: tuple[NumberInfo, ...] = ()
    scope: tuple[tuple[str, str], ...] = ()
    source_refs: tuple[tuple[str, int], ...] = ()
    superseded_by: str | None = None
    # Holds a numeric symbol of the query verbatim: kept even below the min score.
    pinned: bool = False


class EventCandidate(Struct, frozen=True):
    """A raw event retrieval found (a hit, or the source of a selected item)."""

    session_id: str
    seq: int
    type: str
    text: str
    role: str | None = None
    source_kind: str | None = None
    generated: bool = False
    score: float = 0.0
    why: str = ""
    turn: int | None = None
    time: str | None = None

    @property
    def ref(self) -> str:
        return event_ref(self.session_id, self.seq)


class Omission(Struct, frozen=True):
    ref: str
    section: str
    reason: str
    score: float | None = None
    detail: str | None = None
    # A summary row stands for this many omissions with the same reason (ref "*").
    count: int | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ref": self.ref, "section": self.section, "reason": self.reason}
        if self.score is not None:
            out["score"] = round(self.score, 4)
        if self.detail:
            out["detail"] = self.detail
        if self.count is not None:
            out["count"] = self.count
        return out


class Candidates(Struct, frozen=True):
    """Everything retrieval found for one step, ranked, plus what it left out."""

    items: tuple[ItemCandidate, ...] = ()
    events: tuple[EventCandidate, ...] = ()
    omitted: tuple[Omission, ...] = ()
    coverage: Coverage = Coverage()
    signals: Mapping[str, Any] = field(default_factory=dict)
    # Items a superseded candidate points at, for the notice ("now: …").
    successors: Mapping[str, ItemCandidate] = field(default_factory=dict)
    # Sections 2-3: the resident skill core and task-relevant rules; and the session's
    # blocked validation run, whose repair reminder leads the rules section.
    skills: SkillContext | None = None
    repair: ValidationRecord | None = None
    # Work records the query names; else, after a compaction, where the session was.
    work: WorkFound | None = None
    # The query's terms and their strength in scope (memplug.recall.retrieve.strength).
    terms: QueryTerms | None = None

    def tool_refs(self) -> set[str]:
        """The ranked tool calls and outputs: a step with any is one of tool work, where
        a message ranked only for sitting beside one of them (``near:REF``) is the
        agent's talk around the call."""
        return {e.ref for e in self.events if e.type.startswith("tool/")}


class TaskLine(Struct, frozen=True):
    field: str  # goal, progress, blockers, open_items
    text: str
    ref: str | None = None  # SESSION:SEQ of the event that set it


class TaskState(Struct, frozen=True):
    lines: tuple[TaskLine, ...] = ()


class ResidentLine(Protocol):
    """One line of the resident core, rendered (``memplug.recall.core`` makes them)."""

    @property
    def ref(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def line(self) -> str: ...
    @property
    def why(self) -> str: ...
    @property
    def tokens(self) -> int: ...
    @property
    def sources(self) -> tuple[str, ...]: ...
    @property
    def replaced_by(self) -> str: ...


class ResidentCore(Protocol):
    """The step's resident core: its lines in order, and the choice under a budget."""

    @property
    def lines(self) -> Sequence[ResidentLine]: ...

    def select(
        self, budget: int, skip: Callable[[ResidentLine], str | None] | None = None
    ) -> tuple[Sequence[ResidentLine], Sequence[tuple[ResidentLine, str]]]: ...


# The core of a step's scope, or None (off, or no store): given by the composition root.
CoreProvider = Callable[["AssemblyRequest"], "ResidentCore | None"]


class CandidateSource(Protocol):
    """What assembly needs from the layers below (retrieval and task state)."""

    def candidates(self, session_id: str, task_text: str) -> Candidates: ...

    def task_state(self, session_id: str) -> TaskState: ...


# -- request and result ----------------------------------------------------------------


class Pull(Struct, frozen=True):
    """How the agent fetches what the message only points at: the shell command that
    runs memory on its machine, and whether memplug's MCP tools are in its tool list."""

    command: str = "memory"
    mcp: bool = False


class AssemblyRequest(Struct, frozen=True):
    """One assembly attempt: a host pre-step, ``memory assemble``, or the Python API."""

    session_id: str
    query: str | None = None
    messages: Sequence[Message] = ()
    turn: int | None = None
    step: int | None = None
    trigger: str = "api"
    token_meter: TokenMeter | None = None
    # How long the log write may wait for another writer's lock (default LOG_WAIT_MS).
    log_wait_ms: int | None = None
    # The project (cwd) a host names when the session has no events yet: its core is
    # still resident (a new session starts with what the project keeps).
    project: str | None = None
    # What a host's compaction summary says the work at hand is: with no query, the
    # step's task text is built from it and the latest real request.
    summary: str | None = None
    # The standing instructions the host loads itself, as (file name, text): a core line
    # they already state is not said again.
    standing: tuple[tuple[str, str], ...] = ()
    # How the agent reading the message pulls more from memory (None: the plain CLI).
    pull: Pull | None = None


class Entry(Struct, frozen=True):
    """One included line, with what it cost and why it is there."""

    ref: str
    section: str
    line: str
    tokens: int
    kind: str | None = None
    score: float | None = None
    why: str = ""
    # Raw evidence is grouped under one heading per session and day (it names what each
    # line would repeat); the line's place in its group is its seq.
    group: str | None = None
    position: int = 0

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ref": self.ref, "section": self.section}
        if self.kind is not None:
            out["kind"] = self.kind
        if self.score is not None:
            out["score"] = round(self.score, 4)
        out["why"] = self.why
        out["tokens"] = self.tokens
        return out


class AssemblyResult(Struct):
    """What an attempt produced: the text (when injected) and its full account."""

    session_id: str
    injected: bool
    text: str
    budget: int
    used_tokens: int
    token_source: str
    included: list[Entry] = field(default_factory=list)
    omitted: list[Omission] = field(default_factory=list)
    coverage: Coverage = Coverage()
    sections: list[dict[str, Any]] = field(default_factory=list)
    query_text: str = ""
    signals: Mapping[str, Any] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    assembly_id: int | None = None
    turn: int | None = None
    step: int | None = None
    trigger: str = "api"
    duration_ms: float | None = None
    # Why nothing was injected (None when something was).
    why_not: str | None = None

    @property
    def content_hash(self) -> str | None:
        return sha256_hex(self.text) if self.injected else None

    def as_dict(self) -> dict[str, Any]:
        """The documented JSON shape of ``memory assemble --json``."""
        return {
            "injected": self.injected,
            "text": self.text,
            "assembly_id": self.assembly_id,
            "session_id": self.session_id,
            "budget": self.budget,
            "used_tokens": self.used_tokens,
            "token_source": self.token_source,
            "included": [e.as_dict() for e in self.included],
            "omitted": [o.as_dict() for o in self.omitted],
            "coverage": self.coverage.as_dict(),
            "sections": self.sections,
            "query": {"text": self.query_text, **dict(self.signals)},
            "errors": list(self.errors),
            "why_not": self.why_not,
        }

    def to_log(self, created_at: str) -> LogRecord:
        return LogRecord(
            session_id=self.session_id,
            turn=self.turn,
            step=self.step,
            trigger=self.trigger,
            created_at=created_at,
            query_text=self.query_text,
            query=dict(self.signals),
            budget=self.budget,
            used_tokens=self.used_tokens,
            token_source=self.token_source,
            content_hash=self.content_hash,
            injected=self.injected,
            text=self.text if self.injected else None,
            sections=self.sections,
            included=[e.as_dict() for e in self.included],
            omitted=[o.as_dict() for o in self.omitted],
            coverage={
                **self.coverage.as_dict(),
                **({"why_not": self.why_not} if self.why_not else {}),
            },
            errors=list(self.errors),
            duration_ms=self.duration_ms,
        )
