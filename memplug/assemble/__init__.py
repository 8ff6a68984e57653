"""Budgeted assembly: retrieval candidates → at most one labelled evidence message.

Sections come in a fixed order (the resident project core; task state; skill core;
rules; memory items; raw evidence; work; notice). Each candidate is rendered as one line
and costs that line's tokens; whatever does not fit, or may not be shown, is recorded
with a reason, so that ``memory explain`` can answer "why was this (not) injected?"
from the log alone.

Determinism is a contract: the text depends only on the candidates, the task state,
the visible messages and the config — never on the wall clock, ingestion order, or dict
and set iteration — so the same events and config give the same bytes in any database.

:meth:`Assembler.build` is pure (candidates in, draft out); :meth:`Assembler.run` adds
retrieval, logging and the promise never to raise into a host step.
"""

from __future__ import annotations

from memplug.assemble.assembler import Assembler
from memplug.assemble.models import (
    BELOW_MIN_SCORE,
    DUPLICATE,
    EMPTY_TEXT,
    GENERATED,
    IN_CORE,
    IN_TASK,
    LOG_WAIT_MS,
    NOT_QUOTABLE,
    OMISSION_REASONS,
    OVER_BUDGET,
    OVER_CORE_BUDGET,
    OVER_LIMIT,
    RECENT,
    REDACTED,
    SECTIONS,
    SUPERSEDED,
    UNKNOWN_SESSION,
    VISIBLE,
    AssemblyRequest,
    AssemblyResult,
    Candidates,
    CandidateSource,
    CoreProvider,
    Coverage,
    Entry,
    EventCandidate,
    ItemCandidate,
    NumberInfo,
    Omission,
    ResidentCore,
    ResidentLine,
    TaskLine,
    TaskState,
)
from memplug.assemble.render import (
    COPY_LOOKBACK,
    COPY_MAX_CHARS,
    COPY_MIN_CHARS,
    COPY_WORDS,
    LABELS,
    VisibleText,
    cited_refs,
    count_reasons,
    is_generated_message,
    item_line,
    labels_for,
    one_line,
    prose_only,
    snippet,
    task_line,
    task_text_from_messages,
)
from memplug.assemble.source import (
    OVER_LIMIT_NAMED,
    MemorySource,
    from_retrieval,
    item_candidate,
    task_state_from,
)

__all__ = [
    "BELOW_MIN_SCORE",
    "COPY_LOOKBACK",
    "COPY_MAX_CHARS",
    "COPY_MIN_CHARS",
    "COPY_WORDS",
    "DUPLICATE",
    "EMPTY_TEXT",
    "GENERATED",
    "IN_CORE",
    "IN_TASK",
    "LABELS",
    "LOG_WAIT_MS",
    "NOT_QUOTABLE",
    "OMISSION_REASONS",
    "OVER_BUDGET",
    "OVER_CORE_BUDGET",
    "OVER_LIMIT",
    "OVER_LIMIT_NAMED",
    "RECENT",
    "REDACTED",
    "SECTIONS",
    "SUPERSEDED",
    "UNKNOWN_SESSION",
    "VISIBLE",
    "Assembler",
    "AssemblyRequest",
    "AssemblyResult",
    "CandidateSource",
    "Candidates",
    "CoreProvider",
    "Coverage",
    "Entry",
    "EventCandidate",
    "ItemCandidate",
    "MemorySource",
    "NumberInfo",
    "Omission",
    "ResidentCore",
    "ResidentLine",
    "TaskLine",
    "TaskState",
    "VisibleText",
    "cited_refs",
    "count_reasons",
    "from_retrieval",
    "is_generated_message",
    "item_candidate",
    "item_line",
    "labels_for",
    "one_line",
    "prose_only",
    "snippet",
    "task_line",
    "task_state_from",
    "task_text_from_messages",
]
