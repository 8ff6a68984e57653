"""The memory items section: durable items, with the evidence they carry."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from memplug.recall.assemble.draft import Draft
from memplug.recall.assemble.models import (
    ALREADY_INJECTED,
    BELOW_MIN_SCORE,
    DUPLICATE,
    IN_CORE,
    IN_SUMMARY,
    SUPERSEDED,
    VISIBLE,
    Candidates,
    ItemCandidate,
    ResidentCore,
    TaskState,
)
from memplug.recall.assemble.relevance import LITTLE, NOT_SPECIFIC, WEAK_TERMS
from memplug.recall.assemble.render import VisibleText, item_line, item_visible
from memplug.recall.assemble.sections.base import SectionBase

if TYPE_CHECKING:
    pass


class ItemSections(SectionBase):
    """Section 4 of the message (mixed into the Assembler)."""

    def _memory_section(
        self,
        draft: Draft,
        candidates: Candidates,
        visible: VisibleText,
        texts: Mapping[tuple[str, int], str],
    ) -> list[ItemCandidate]:
        """Offer active and disputed items; return the superseded ones for the notice."""
        title = self.labels["section.memory"]
        min_score = self.config.retrieval.min_score
        superseded: list[ItemCandidate] = []
        seen: set[str] = set()
        in_core = {e.ref for e in draft.entries if e.section == "core"}
        cfg = self.config.assembly
        terms = candidates.terms if cfg.precise else None
        for item in candidates.items:
            if item.id in in_core:
                draft.omit(item.id, "memory", IN_CORE, item.score)
                continue
            if item.id in seen:
                draft.omit(item.id, "memory", DUPLICATE, item.score)
                continue
            seen.add(item.id)
            if item.status == "superseded":
                superseded.append(item)
                draft.omit(item.id, "memory", SUPERSEDED, item.score, item.superseded_by or "")
                continue
            if item.status not in ("active", "disputed"):
                draft.omit(item.id, "memory", item.status, item.score)
                continue
            if item.score < min_score and not item.pinned:
                draft.omit(item.id, "memory", BELOW_MIN_SCORE, item.score)
                continue
            found = terms.found(item.content) if terms is not None and not item.pinned else None
            if found is not None and not found.holds(cfg.evidence_min_share):
                why = WEAK_TERMS if not found.enough else LITTLE
                draft.omit(item.id, "memory", why, item.score, found.names())
                continue
            if found is not None and not found.specific:
                draft.omit(item.id, "memory", NOT_SPECIFIC, item.score, found.names())
                continue
            if item_visible(item, texts, visible):
                draft.omit(item.id, "memory", VISIBLE, item.score)
                continue
            if visible.in_summary(item.content):
                draft.omit(item.id, "memory", IN_SUMMARY, item.score)
                continue
            draft.offer(
                "memory",
                title,
                item.id,
                self.item_line(item),
                kind=item.kind,
                score=item.score,
                why=item.why,
            )
        return superseded

    def item_line(self, item: ItemCandidate) -> str:
        return item_line(item, self.labels)

    def _source_texts(self, candidates: Candidates) -> dict[tuple[str, int], str]:
        """Texts of the items' source events (from the candidates, else the store)."""
        texts = {(e.session_id, e.seq): e.text for e in candidates.events}
        items = [*candidates.items, *candidates.successors.values()]
        missing = {ref for item in items for ref in item.source_refs} - texts.keys()
        texts.update(self._texts(missing))
        return texts

    def _carried(
        self,
        draft: Draft,
        candidates: Candidates,
        core: ResidentCore | None,
        task_state: TaskState,
    ) -> dict[str, list[str]]:
        """For each event an included item or task line was derived from: their texts."""
        said: dict[str, tuple[str, Sequence[str]]] = {}
        for item in candidates.items:
            said[item.id] = (item.content, [f"{s}:{n}" for s, n in item.source_refs])
        for line in core.lines if core is not None else ():
            said.setdefault(line.ref, (line.text, line.sources))
        # What the message holds, or an earlier one still in the model's context does.
        shown = [(e.section, e.ref) for e in draft.entries]
        shown += [
            (o.section, o.ref) for o in draft.omitted if o.reason in (VISIBLE, ALREADY_INJECTED)
        ]
        out: dict[str, list[str]] = {}
        for section, at in shown:
            if section in ("core", "memory") and at in said:
                text, refs = said[at]
                for ref in refs:
                    out.setdefault(ref, []).append(text)
        if any(section == "task" for section, _ in shown):
            for task in task_state.lines:
                if task.ref:
                    out.setdefault(task.ref, []).append(task.text)
        return out
