"""The two tiers of raw evidence: which events are quoted, and the index of the rest.

An agent reading the message judges relevance better than any phrase list (DESIGN.md,
"Push an index, let the agent pull"), so the message quotes only what a measurable
criterion calls a strong match and points at the rest, one line each, for the agent to
expand when it wants them: the ref, the date, who said it, a gist cut around the
matched words and what expanding it costs.
"""

from __future__ import annotations

from collections.abc import Sequence

from memplug.base.text import estimate_tokens
from memplug.recall.assemble.draft import Draft
from memplug.recall.assemble.focus import ELLIPSIS
from memplug.recall.assemble.models import EventCandidate
from memplug.recall.assemble.render import one_line, snippet
from memplug.recall.assemble.sections.base import SectionBase
from memplug.recall.retrieve.strength import QueryTerms

# A gist is at most this many words (or, in CJK text, twice as many characters), and
# starts this many words before the first matched one; a text of at most WHOLE_WORDS
# words is its own gist (cutting a chat turn saves a few tokens and loses its sense).
GIST_WORDS = 14
GIST_LEAD_WORDS = 4
WHOLE_WORDS = 24


def strong_match(
    event: EventCandidate,
    terms: QueryTerms | None,
    runner_up: float | None,
    specific: int,
    margin: float,
) -> str | None:
    """Why ``event`` is a strong enough match to quote, or None: its own text holds
    ``specific`` of the query's specific term groups (rare shared identifiers; all of
    them when the query has fewer), or it
    ranks ``margin`` times above the next candidate (``runner_up``: that one's score,
    None when ``event`` is not the best); with ``specific`` 0, every event is."""
    if specific == 0:
        return "assembly.quoteSpecific is 0"
    if terms is not None:
        found = terms.found(event.text).specific
        if found and len(found) >= min(specific, terms.specific_groups):
            return "shares " + ", ".join(found)
    if runner_up is not None and event.score >= margin * max(runner_up, 1e-9):
        return f"score {event.score:.2f} ≥ {margin:g} x the next {runner_up:.2f}"
    return None


def gist(text: str, terms: QueryTerms | None) -> str:
    """At most :data:`GIST_WORDS` words of ``text`` from just before its first matched
    word (a strong one when it holds any); "…" where it is cut. The first match
    rather than the densest window: measured on the next-day questions, the densest
    window held fewer answers (docs/benchmarks.md)."""
    words = one_line(text).split()
    if not words:
        return ""
    if len(words) == 1:  # CJK runs and one long token: cut by characters
        return snippet(words[0], 2 * GIST_WORDS)
    if len(words) <= WHOLE_WORDS:
        return " ".join(words)
    hits = [terms.found(word) for word in words] if terms is not None else []
    first = next((i for i, f in enumerate(hits) if f.strong), None)
    if first is None:
        first = next((i for i, f in enumerate(hits) if f.weight > 0), 0)
    start = max(0, first - GIST_LEAD_WORDS)
    start = min(start, max(0, len(words) - GIST_WORDS))
    end = min(len(words), start + GIST_WORDS)
    out = " ".join(words[start:end])
    return (ELLIPSIS if start else "") + out + (ELLIPSIS if end < len(words) else "")


class IndexSection(SectionBase):
    """The index after raw evidence (mixed into the Assembler)."""

    def _offer_index(
        self,
        draft: Draft,
        terms: QueryTerms | None,
        indexed: Sequence[tuple[EventCandidate, str, str]],
    ) -> None:
        """One line per (event, why, text), in rank order, ``assembly.indexLines`` at
        most; ``why`` says why it is indexed rather than quoted, ``text`` is what its gist
        is cut from."""
        title = self.labels["section.index"]
        shared = self._shared([event for event, _, _ in indexed])
        taken = 0
        for event, why, text in indexed:
            if taken >= self.config.assembly.index_lines:
                break
            heading, line = self.index_line(event, terms, text, shared[event.session_id])
            if draft.offer(
                "index",
                title,
                event.ref,
                line,
                kind=event.type,
                score=event.score,
                why=why,
                group=heading,
                # Grouped by session, still in rank order within each group.
                position=taken,
            ):
                taken += 1
                # Pointed at, it is no longer left out: the index line says why not quoted.
                draft.omitted = [
                    o for o in draft.omitted if not (o.ref == event.ref and o.section == "evidence")
                ]

    def index_line(
        self,
        event: EventCandidate,
        terms: QueryTerms | None,
        text: str,
        shared: tuple[str, str] = ("", ""),
    ) -> tuple[str, str]:
        """The event's group heading (its session, and the day and who that all its lines
        share, said once) and its line under it: ``[ev :SEQ]``, the date and who unless
        the heading has them, the gist and its size."""
        labels = self.labels
        heading = self.session_heading(event.session_id)
        heading += "".join(f" {part}" for part in shared if part)
        frame = [
            part
            for part, said in zip((_day(event), self.who(event)), shared, strict=True)
            if part and not said
        ]
        size = labels["index.size"].format(tokens=estimate_tokens(event.text))
        said = " ".join(frame) + labels["colon"] if frame else ""
        return heading, f"- [ev :{event.seq}] {said}{gist(text, terms)} ({size})"

    def _shared(self, events: Sequence[EventCandidate]) -> dict[str, tuple[str, str]]:
        """Per session, the day and who that every one of its candidates has ("" where
        they differ): said once in the group heading instead of on each line. Chosen from
        every candidate that may be indexed, so the heading is the same whichever fit."""
        frames: dict[str, set[tuple[str, str]]] = {}
        for event in events:
            frames.setdefault(event.session_id, set()).add((_day(event), self.who(event)))
        out: dict[str, tuple[str, str]] = {}
        for session_id, seen in frames.items():
            days, whos = {d for d, _ in seen}, {w for _, w in seen}
            out[session_id] = (
                next(iter(days)) if len(days) == 1 else "",
                next(iter(whos)) if len(whos) == 1 else "",
            )
        return out


def _day(event: EventCandidate) -> str:
    return event.time[:10] if event.time else ""
