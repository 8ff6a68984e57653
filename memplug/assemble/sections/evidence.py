"""The raw evidence section: quoted events in their own words."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from memplug.assemble.draft import Draft
from memplug.assemble.models import (
    DUPLICATE,
    EMPTY_TEXT,
    GENERATED,
    NOT_QUOTABLE,
    OVER_LIMIT,
    VISIBLE,
    Candidates,
    EventCandidate,
)
from memplug.assemble.render import (
    COPY_LOOKBACK,
    COPY_MAX_CHARS,
    COPY_WORDS,
    VisibleText,
    copied_words,
    prose_only,
    snippet,
)
from memplug.assemble.sections.base import SectionBase
from memplug.retrieve.precision import Relevance
from memplug.text import normalize_text

# Numbers are what repeated lines differ by: a step, a count, a time.
_NUMBER = re.compile(r"\d+")


class EvidenceSections(SectionBase):
    """Section 5 of the message (mixed into the Assembler)."""

    def _evidence_section(
        self,
        draft: Draft,
        candidates: Candidates,
        visible: VisibleText,
        carried: Mapping[str, Sequence[str]],
        query: str | None = None,
    ) -> None:
        title = self.labels["section.evidence"]
        cfg = self.config.assembly
        quotable = set(cfg.evidence_types)
        quote_all = "*" in quotable
        seen: set[str] = set()
        asked = " ".join(normalize_text(query).split()) if query else ""
        kept: list[EventCandidate] = []
        for event in candidates.events:
            ref = event.ref
            if ref in seen:
                draft.omit(ref, "evidence", DUPLICATE, event.score)
                continue
            seen.add(ref)
            if event.generated or event.source_kind in self.generated_kinds:
                draft.omit(ref, "evidence", GENERATED, event.score)
            elif not quote_all and event.type not in quotable:
                draft.omit(ref, "evidence", NOT_QUOTABLE, event.score, event.type)
            elif not event.text.strip():
                draft.omit(ref, "evidence", EMPTY_TEXT, event.score)
            elif visible and visible.contains(event.text):
                draft.omit(ref, "evidence", VISIBLE, event.score)
            elif asked and " ".join(event.text.split()) == asked:
                # The event that captured the current input: the model has it already,
                # whether or not the host passed the step's messages.
                draft.omit(ref, "evidence", VISIBLE, event.score, "the query itself")
            else:
                kept.append(event)
        judge = None
        if cfg.precise and candidates.terms is not None:
            judge = Relevance(
                candidates.terms,
                candidates.events,
                kept,
                carried,
                cfg.evidence_falloff,
                cfg.evidence_min_share,
            )
        passed: list[EventCandidate] = []
        for event in kept:
            why_not = judge.reason(event) if judge is not None else None
            if why_not is None:
                passed.append(event)
            else:
                draft.omit(event.ref, "evidence", why_not[0], event.score, why_not[1])
        assistant = 0
        folded = _fold_repeats(passed, draft) if cfg.precise else [(e, []) for e in passed]
        for event, others in folded:
            said = event.type == "assistant/message"
            if said and assistant >= cfg.assistant_quotes:
                draft.omit(
                    event.ref, "evidence", OVER_LIMIT, event.score, "assembly.assistantQuotes"
                )
                continue
            heading, line = self.event_line(event)
            if others:
                line += self.labels["repeats"].format(seqs=", ".join(f":{s}" for s in others))
            taken = draft.offer(
                "evidence",
                title,
                event.ref,
                line,
                kind=event.type,
                score=event.score,
                why=event.why,
                group=heading,
                position=event.seq,
            )
            assistant += int(said and taken)

    def event_line(self, event: EventCandidate) -> tuple[str, str]:
        """The heading of the event's group (its session and day) and its line under it:
        the heading says once what every line of the group would repeat."""
        labels = self.labels
        text, limit = event.text, self.config.assembly.snippet_chars
        if event.type == "assistant/message":
            # The agent's own words: labelled as such, without what it copied in.
            where = [labels["said.assistant"]]
            limit = min(limit, self.config.assembly.assistant_snippet_chars)
            text = self._own_words(event, prose_only(text, labels["quote.block"]), limit)
        else:
            where = [labels.get(f"role.{event.role}", event.role or event.type)]
        heading = f"### [ev {event.session_id}]"
        if event.time:
            # The day once in the heading; minutes are enough to order events.
            heading += f" {event.time[:10]}"
            where.append(event.time[11:16])
        quote = snippet(text, limit)
        line = f"- [ev :{event.seq}] {labels['sep'].join(where)}{labels['colon']}{quote}"
        return heading, line

    def _own_words(self, event: EventCandidate, text: str, limit: int) -> str:
        """Assistant text without the runs of words a recent tool result of its session
        holds verbatim: what the agent copied from a page or a log is tool output, not
        its word. Only the part that can reach the quote (twice its limit) is checked,
        and only that part is kept."""
        text = text[: 2 * limit]
        words = text.split()
        if self.store is None or len(words) < COPY_WORDS:
            return text
        output = self.store.events.output_before(
            event.session_id, event.seq, COPY_LOOKBACK, COPY_MAX_CHARS
        )
        copied = copied_words(words, output)
        if not any(copied):
            return text
        out: list[str] = []
        for word, gone in zip(words, copied, strict=True):
            if not gone:
                out.append(word)
            elif not out or out[-1] != self.labels["quote.block"]:
                out.append(self.labels["quote.block"])
        return " ".join(out)


def _fold_repeats(
    events: Sequence[EventCandidate], draft: Draft
) -> list[tuple[EventCandidate, list[int]]]:
    """One line for the events of a session that say the same words but for their
    numbers ("ran the tests (step 7)", "… (step 12)"): the newest is quoted, at the rank
    of the best of them, naming the others' seqs; each other is omitted as a duplicate
    that names it. Different numbers may be different facts, so the newest stands."""
    groups: dict[tuple[str, str], list[EventCandidate]] = {}
    for event in events:
        shape = _NUMBER.sub("#", " ".join(event.text.lower().split()))
        groups.setdefault((event.session_id, shape), []).append(event)
    folded: list[tuple[EventCandidate, list[int]]] = []
    for members in groups.values():  # insertion order: the best-ranked member's rank
        newest = max(members, key=lambda e: e.seq)
        for other in members:
            if other is not newest:
                draft.omit(
                    other.ref,
                    "evidence",
                    DUPLICATE,
                    other.score,
                    f"{newest.ref} with other numbers",
                )
        folded.append((newest, sorted(e.seq for e in members if e is not newest)))
    return folded
