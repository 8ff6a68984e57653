"""Sections 0-3: the resident core, task state, skill core and rules."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memplug.base.refs import EventRef, event_ref
from memplug.recall.assemble.draft import Draft
from memplug.recall.assemble.models import (
    IN_MEMORY_FILE,
    IN_TASK,
    VISIBLE,
    Candidates,
    Omission,
    ResidentCore,
    ResidentLine,
    TaskState,
)
from memplug.recall.assemble.render import (
    VisibleText,
    one_line,
    since_compaction,
    snippet,
    task_line,
)
from memplug.recall.assemble.sections.base import SectionBase

if TYPE_CHECKING:
    from memplug.recall.retrieve.work import WorkFound
    from memplug.recall.skill_rules import CoreLine, RuleHit
    from memplug.store.records import ValidationRecord


# A core line shorter than this is not looked for in the standing files: a few words
# can occur there by chance.
MIN_STANDING_CHARS = 12


class CoreSections(SectionBase):
    """Sections 0-3 of the message (mixed into the Assembler)."""

    def _core_section(
        self,
        draft: Draft,
        core: ResidentCore,
        task_state: TaskState,
        visible: VisibleText,
        standing: tuple[tuple[str, str], ...] = (),
    ) -> None:
        """Section 0, whatever the query says: the core's lines in its own order under
        ``assembly.coreBudgetTokens`` (at most a third of the budget), less what the step's
        context already holds: its messages, and the standing files the host loads."""
        refs = [EventRef.find(ref) for line in core.lines for ref in line.sources]
        texts = self._texts(refs) if visible else {}
        own_task = bool(task_state.lines)
        files = [(name, " ".join(text.casefold().split())) for name, text in standing]

        def skip(line: ResidentLine) -> str | None:
            if line.kind == "task" and own_task:
                return IN_TASK  # the session's own task state is section 1
            said = " ".join(line.text.casefold().split()).rstrip(" .。!！")
            if len(said) >= MIN_STANDING_CHARS:
                for name, text in files:
                    if said in text:
                        return IN_MEMORY_FILE.format(file=name)
            refs = [EventRef.find(ref) for ref in line.sources]
            found = [texts.get(ref) for ref in refs if ref is not None]
            shown = found and len(found) == len(line.sources)
            if shown and all(t is not None and visible.contains(t) for t in found):
                return VISIBLE
            return None

        # The core never takes more than a third of the message: the query's evidence
        # keeps room (measured on LoCoMo at small budgets, where chat yields few rules).
        budget = min(self.config.assembly.core_budget_tokens, draft.budget // 3)
        chosen, omitted = core.select(budget, skip)
        for line, reason in omitted:
            draft.omit(line.ref, "core", reason, detail=line.replaced_by)
        title = self.labels["section.core"]
        for line in chosen:
            draft.offer("core", title, line.ref, line.line, kind=line.kind, why=line.why)

    def _task_section(
        self, draft: Draft, state: TaskState, visible: VisibleText, work: WorkFound | None
    ) -> None:
        """Section 1: the session's task state, less the lines whose event the model still
        sees (a todo list it wrote since the compaction is in its context as it wrote it)."""
        title = self.labels["section.task"]
        counters: dict[str, int] = {}
        sources = self._texts([EventRef.find(line.ref) for line in state.lines]) if visible else {}
        for line in state.lines:
            index = counters.get(line.field, 0)
            counters[line.field] = index + 1
            ref = f"task:{line.field}" if line.field == "goal" else f"task:{line.field}:{index}"
            text = task_line(line, self.labels)
            at = EventRef.find(line.ref)
            source = sources.get(at) if at is not None else None
            shown = source is not None and visible.contains(source)
            asking = self.asking_session
            if visible and work is not None and at is not None and asking is not None:
                shown = shown or since_compaction(*at, asking, work.compacted_at)
            if shown:
                draft.omit(ref, "task", VISIBLE, detail=line.ref or "")
                continue
            draft.offer("task", title, ref, text, kind=line.field, why="task state")

    def _skill_sections(self, draft: Draft, candidates: Candidates) -> None:
        """Sections 2-3: the resident skill core; then a pending repair reminder and the
        task-relevant rules. Skills' own omissions (limits, min score) are logged too."""
        core, rules = self.labels["section.rules-core"], self.labels["section.rules"]
        context = candidates.skills
        for line in context.core if context else ():
            why = "resident skill core"
            draft.offer("rules-core", core, line.ref, self.core_line(line), kind=line.kind, why=why)
        run = candidates.repair
        if run is not None:
            text, why = self.repair_line(run), "blocked validation run"
            draft.offer("rules", rules, f"repair:{run.id}", text, kind="repair", why=why)
        for hit in context.rules if context else ():
            draft.offer(
                "rules", rules, hit.ref, self.rule_line(hit), kind=hit.rule.category,
                score=hit.score, why=hit.why,
            )  # fmt: skip
        draft.omitted.extend(
            Omission(o.ref, o.section, o.reason, o.score, o.detail)
            for o in (context.omitted if context else ())
        )

    def core_line(self, line: CoreLine) -> str:
        if line.kind != "skill":
            return f"- [rule {line.ref.removeprefix('rule:')}] {one_line(line.text)}"
        text = f"- [skill {line.skill}]" + (f" {one_line(line.text)}" if line.text else "")
        if line.when_to_use:
            text += " · " + self.labels["core.when"].format(when=one_line(line.when_to_use))
        return text

    def rule_line(self, hit: RuleHit) -> str:
        labels, rule = self.labels, hit.rule
        category = labels.get(f"cat.{rule.category}", rule.category)
        line = (
            f"- [rule {rule.skill}:{rule.key}] {category}{labels['colon']}{one_line(rule.text)}"
            f" ({rule.source_path}:{rule.line})"
        )
        notes = {k: v for k, v in sorted(rule.scope.items()) if k != "section"}
        if notes:
            scope = labels["sep"].join(f"{k} {v}" for k, v in notes.items())
            line += " · " + labels["scope"].format(scope=scope)
        if rule.category == "current_state":
            line += " " + labels["warn.current_state"]
        return line

    def repair_line(self, run: ValidationRecord) -> str:
        """Bounded by ``validation.reminderMaxChars``: the findings are clipped, not the frame."""
        cfg = self.config.validation
        found = "; ".join(
            one_line(str(v.get("message", ""))) for v in run.violations if v.get("block")
        )
        return "- " + self.labels["repair"].format(
            attempt=run.repair_attempt,
            max=cfg.max_repair_attempts,
            ref=event_ref(run.session_id, run.event_seq),
            findings=snippet(found, cfg.reminder_max_chars),
        )
