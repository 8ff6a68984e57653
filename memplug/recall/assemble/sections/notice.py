"""The notice section: superseded and disputed memory."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from memplug.recall.assemble.draft import Draft
from memplug.recall.assemble.models import VISIBLE, Candidates, ItemCandidate
from memplug.recall.assemble.render import VisibleText, item_visible, snippet
from memplug.recall.assemble.sections.base import SectionBase

if TYPE_CHECKING:
    pass


class NoticeSection(SectionBase):
    """Section 7 of the message (mixed into the Assembler)."""

    def _notice_section(
        self,
        draft: Draft,
        candidates: Candidates,
        superseded: Sequence[ItemCandidate],
        visible: VisibleText,
        texts: Mapping[tuple[str, int], str],
    ) -> None:
        labels = self.labels
        title = labels["section.notice"]
        for item in superseded:
            ref = f"notice:superseded:{item.id}"
            successor = candidates.successors.get(item.superseded_by or "")
            if (
                successor is not None
                and item_visible(item, texts, visible)
                and item_visible(successor, texts, visible)
            ):
                # Both the old statement and its correction are in front of the model.
                draft.omit(ref, "notice", VISIBLE)
                continue
            old = f"[mem {item.id}]"
            content = '"' + snippet(item.content, 160) + '"'
            if item.superseded_by:
                new = f"[mem {item.superseded_by}]"
                if successor is not None:
                    new += ' "' + snippet(successor.content, 160) + '"'
                line = labels["notice.superseded"].format(old=old, old_content=content, new=new)
            else:
                line = labels["notice.superseded_nonew"].format(old=old, old_content=content)
            draft.offer("notice", title, ref, "- " + line, why="superseded")
        disputed = [
            i.id
            for i in candidates.items
            if i.status == "disputed" and any(e.ref == i.id for e in draft.entries)
        ]
        if disputed:
            line = labels["notice.disputed"].format(
                count=len(disputed), refs=labels["sep"].join(f"[mem {r}]" for r in disputed)
            )
            draft.offer("notice", title, "notice:disputed", "- " + line, why="disputed items")
