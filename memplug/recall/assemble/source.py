"""Candidates and task state from the layers below (retrieval and the items store)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from msgspec.structs import replace

from memplug.base.config import Config
from memplug.base.refs import event_ref
from memplug.recall.assemble.models import (
    OVER_LIMIT,
    Candidates,
    EventCandidate,
    ItemCandidate,
    NumberInfo,
    Omission,
    TaskLine,
    TaskState,
)

if TYPE_CHECKING:
    from memplug.recall.retrieve import RankedItem, RetrievalResult, Retriever
    from memplug.recall.retrieve.work import WorkFound
    from memplug.recall.skill_rules import SkillContext
    from memplug.store.ports import Storage
    from memplug.store.records import ValidationRecord


class MemorySource:
    """Candidates from :class:`memplug.recall.retrieve.Retriever`, task state from the
    items store."""

    def __init__(self, retriever: Retriever, store: Storage, config: Config) -> None:
        self.retriever = retriever
        self.store = store
        self.config = config

    def candidates(self, session_id: str, task_text: str) -> Candidates:
        cfg = self.config.assembly
        result = self.retriever.retrieve(
            session_id, task_text, scope=cfg.scope, limit=cfg.candidate_limit
        )
        return replace(
            from_retrieval(result),
            skills=self._skills(task_text),
            repair=self._pending_repair(session_id),
            work=self._work(session_id, task_text),
        )

    def _work(self, session_id: str, task_text: str) -> WorkFound | None:
        cfg = self.config.assembly
        if cfg.work_budget_tokens <= 0:
            return None
        return self.retriever.work(
            session_id,
            task_text,
            scope=cfg.scope,
            limit=cfg.work_records,
            recent=cfg.recent_work_records,
        )

    def _skills(self, task_text: str) -> SkillContext | None:
        enabled = [s for s in self.store.skills.skills() if s.in_force]
        if not enabled:
            return None  # and the ranking module is never imported
        from memplug.recall.skill_rules import skill_context

        return skill_context(self.store, enabled, self.config, task_text)

    def _pending_repair(self, session_id: str) -> ValidationRecord | None:
        """The session's latest run, while it blocks and no later reply answered it."""
        if not self.config.validation.checks:
            return None
        run = self.store.skills.latest_validation(session_id)
        if run is None or not run.blocked:
            return None
        latest = self.store.skills.latest_event_seq(session_id, run.target)
        return run if latest == run.event_seq else None

    def task_state(self, session_id: str) -> TaskState:
        return task_state_from(self.store.items.task_state(session_id))


def from_retrieval(result: RetrievalResult) -> Candidates:
    """Retrieval's result in the assembler's terms (the one place that knows both)."""
    return Candidates(
        items=tuple(item_candidate(i) for i in result.items),
        events=tuple(
            EventCandidate(
                session_id=e.session_id,
                seq=e.seq,
                type=e.type,
                text=e.text,
                role=e.role,
                source_kind=e.source_kind,
                generated=e.generated,
                score=e.score,
                why=e.why,
                turn=e.turn,
                time=e.time,
            )
            for e in result.evidence
        ),
        omitted=_retrieval_omissions(result.omitted),
        coverage=result.coverage,
        signals={
            **result.signals,
            **({"weak": result.terms.weak_terms()} if result.terms is not None else {}),
        },
        successors={k: item_candidate(v) for k, v in sorted(result.successors.items())},
        terms=result.terms,
    )


# Retrieval ranks far more candidates than assembly asks for; the ones cut at the limit
# were never offered. The best few are logged by name, the rest as one counted row, so
# that a log row stays a few kilobytes rather than a list of the whole candidate pool.
OVER_LIMIT_NAMED = 10


def _retrieval_omissions(omitted: Iterable[Any]) -> tuple[Omission, ...]:
    out: list[Omission] = []
    past: dict[str, int] = {}
    for o in omitted:
        section = "memory" if o.ref.startswith("mem_") else "evidence"
        if o.reason == OVER_LIMIT:
            past[section] = past.get(section, 0) + 1
            if past[section] > OVER_LIMIT_NAMED:
                continue
        out.append(Omission(o.ref, section, o.reason, o.score))
    for section in ("memory", "evidence"):
        rest = past.get(section, 0) - OVER_LIMIT_NAMED
        if rest > 0:
            detail = f"{rest} more candidates ranked below the ones named"
            out.append(Omission("*", section, OVER_LIMIT, None, detail, count=rest))
    return tuple(out)


def item_candidate(item: RankedItem) -> ItemCandidate:
    """A ranked (or stored, via ``RankedItem.of``) item in the assembler's terms."""
    return ItemCandidate(
        id=item.id,
        kind=item.kind,
        content=item.content,
        evidence_type=item.evidence_type,
        status=item.status,
        score=item.score,
        why=item.why,
        session_id=item.session_id,
        conditions=tuple(str(c) for c in item.conditions if c),
        numbers=tuple(_number(n) for n in item.numbers if isinstance(n, Mapping)),
        source_refs=tuple(item.source_refs),
        superseded_by=item.superseded_by,
        pinned=item.pinned,
    )


def _number(data: Mapping[str, Any]) -> NumberInfo:
    flagged = data.get("flagged")
    return NumberInfo(
        text=str(data.get("raw") or data.get("value") or ""),
        unit=data.get("unit"),
        conditions=tuple(str(c) for c in data.get("conditions") or ()),
        flagged=bool(flagged) if flagged is not None else None,
    )


def task_state_from(state: Any) -> TaskState:
    """The items store's task state (or None) as section lines, in a fixed field order."""
    if state is None:
        return TaskState()
    lines: list[TaskLine] = []
    for name in ("goal", "progress", "blockers", "open_items"):
        value = state.get(name) if isinstance(state, Mapping) else getattr(state, name, None)
        entries = [value] if name == "goal" else list(value or ())
        for entry in entries:
            if not entry:
                continue
            if isinstance(entry, Mapping):
                text = str(entry.get("text") or "")
                ref = entry.get("ref")
                if ref is None and entry.get("seq") is not None:
                    ref = event_ref(entry.get("session_id", ""), entry["seq"])
            else:
                text, ref = str(entry), None
            if text.strip():
                lines.append(TaskLine(name, text, str(ref) if ref else None))
    return TaskState(tuple(lines))
