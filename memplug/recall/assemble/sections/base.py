"""What every section mixin shares: the assembler's state, section titles, event texts."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from memplug.base.config import Config
from memplug.base.host_registry import is_coding_host
from memplug.recall.assemble.models import RECENT, Entry, EventCandidate

if TYPE_CHECKING:
    from memplug.store.ports import Storage


class SectionBase:
    """The state the :class:`~memplug.recall.assemble.assembler.Assembler` sets up for its
    sections."""

    config: Config
    store: Storage | None
    labels: dict[str, str]
    generated_kinds: frozenset[str]
    # The session a build is for, and the hosts its evidence sessions were captured by.
    asking_session: str | None = None
    origins: dict[str, str | None]

    def other_agent(self, session_id: str) -> str | None:
        """The coding host a session was captured from, when it is not the asking
        session's: a line from Codex in a Claude Code step says so, and the other way."""
        if self.store is None or self.asking_session is None:
            return None
        cache = self.origins
        for name in (session_id, self.asking_session):
            if name not in cache:
                cache[name] = self.store.search.session_origin(name)
        theirs, ours = cache[session_id], cache[self.asking_session]
        coding = is_coding_host(theirs) and is_coding_host(ours)
        return theirs if coding and theirs != ours else None

    def session_heading(self, session_id: str) -> str:
        """The heading a session's lines sit under (``[ev :SEQ]`` below it), naming the
        other coding agent the session came from, if any."""
        other = self.other_agent(session_id)
        return f"### [ev {session_id}]" + (f" ({other})" if other else "")

    def who(self, event: EventCandidate) -> str:
        """Who an event's words are: ``assistant said`` for the agent's, else its role."""
        if event.type == "assistant/message":
            return self.labels["said.assistant"]
        return self.labels.get(f"role.{event.role}", event.role or event.type)

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
