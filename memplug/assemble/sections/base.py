"""What every section mixin shares: the assembler's state, section titles, event texts."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from memplug.assemble.models import RECENT, Entry
from memplug.config import Config

if TYPE_CHECKING:
    from memplug.store.ports import Storage


class SectionBase:
    """The state the :class:`~memplug.assemble.assembler.Assembler` sets up for its sections."""

    config: Config
    store: Storage | None
    labels: dict[str, str]
    generated_kinds: frozenset[str]

    def title(self, section: str, entries: Sequence[Entry]) -> str:
        """A section's title; the work section says when it holds only where we were."""
        if section == "work" and entries and all(e.kind == RECENT for e in entries):
            return self.labels["section.work.recent"]
        return self.labels[f"section.{section}"]

    def _texts(self, refs: Iterable[tuple[str, int] | None]) -> dict[tuple[str, int], str]:
        wanted = sorted({ref for ref in refs if ref is not None})
        if not wanted or self.store is None:
            return {}
        return self.store.events.texts(wanted)
