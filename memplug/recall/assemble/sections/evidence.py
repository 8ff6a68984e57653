"""The raw evidence section: quoted events in their own words."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from memplug.base.text import may_hold_cjk, normalize_text
from memplug.recall.assemble.draft import Draft
from memplug.recall.assemble.focus import ELLIPSIS, FOCUS_MIN_SAVED, focused
from memplug.recall.assemble.models import (
    BESIDE_TOOL,
    CUT_EMPTY,
    DUPLICATE,
    EMPTY_TEXT,
    GENERATED,
    IN_SUMMARY,
    NARRATION,
    NOT_QUOTABLE,
    ON_THE_WAY,
    OVER_LIMIT,
    PASTED,
    VISIBLE,
    Candidates,
    EventCandidate,
)
from memplug.recall.assemble.relevance import FELL_OFF, Relevance, asks_only
from memplug.recall.assemble.render import (
    COPY_LOOKBACK,
    COPY_MAX_CHARS,
    COPY_WORDS,
    VisibleText,
    copied_words,
    one_line,
    prose_only,
    snippet,
)
from memplug.recall.assemble.sections.base import SectionBase
from memplug.recall.assemble.sections.index import IndexSection, strong_match
from memplug.recall.retrieve.phrases import FINDING, INTENT, LEAD_IN, LOOKING
from memplug.recall.retrieve.scoring import NEAR
from memplug.recall.retrieve.strength import QueryTerms

# Numbers are what repeated lines differ by: a step, a count, a time.
_NUMBER = re.compile(r"\d+")
_SENTENCES = re.compile(r"\S.*?(?:[.!?:](?=\s|\Z)|\Z)", re.S)
# What names something in an agent's message: code in backticks, a path or dotted
# name, an identifier with an underscore or inner capital, a number.
_NAMES = re.compile(r"`[^`\n]+`|\w[/.]\w|\w_\w|[a-z][A-Z]|\d")
# A quote needs this many words of three letters or more left once its cuts are out.
MIN_QUOTE_WORDS = 3
# A message this short that ends announcing its next step is a status line ("Tests
# pass. Let me run the full suite."), not a finding.
SHORT_STATUS_CHARS = 200
# A lead-in this short to a block that is not quoted ("The message now reads: …").
LEAD_IN_CHARS = 100
_WORD = re.compile(r"[^\W\d_]{3,}")
# A person's message is pasted output when it has this many words and under this share
# of them are plain lowercase words (set before measuring; 0.3 and 0.5, measured beside
# it on the replayed sessions, are in docs/benchmarks.md).
PASTED_MIN_WORDS = 30
PASTED_PLAIN_SHARE = 0.4
# For a request that asks nothing about earlier work, in a session of tool work: the
# query's term groups a line must hold in its own words (chosen on the tune half of the
# replayed sessions, docs/benchmarks.md).
RESULT_OWN_TERMS = 2


class _Step(NamedTuple):
    """What screening a step's events needs to know of the step."""

    visible: VisibleText
    asked: str  # the query, whitespace-normalised ("" without one)
    strict: bool
    results_only: bool
    tools: set[str]
    replies: Mapping[tuple[str, int], int]


class EvidenceSections(IndexSection, SectionBase):
    """Sections 5 and 6 of the message: raw evidence and its index (mixed into the
    Assembler)."""

    def _evidence_section(
        self,
        draft: Draft,
        candidates: Candidates,
        visible: VisibleText,
        carried: Mapping[str, Sequence[str]],
        query: str | None = None,
        strict: bool = False,
        results_only: bool = False,
    ) -> None:
        step = _Step(
            visible=visible,
            asked=" ".join(normalize_text(query).split()) if query else "",
            strict=strict,
            results_only=results_only,
            tools=candidates.tool_refs(),
            replies=self._turn_replies(candidates) if results_only else {},
        )
        kept: list[EventCandidate] = []
        seen: set[str] = set()
        for event in candidates.events:
            if event.ref in seen:
                draft.omit(event.ref, "evidence", DUPLICATE, event.score)
                continue
            seen.add(event.ref)
            why_not = self._screened_out(event, step)
            if why_not is None:
                kept.append(event)
            else:
                draft.omit(event.ref, "evidence", why_not[0], event.score, why_not[1])
        passed, fell_off = self._relevant(draft, candidates, kept, carried, step)
        self._offer_evidence(draft, candidates, passed, fell_off)

    def _screened_out(self, event: EventCandidate, step: _Step) -> tuple[str, str] | None:
        """Why ``event`` is not quoted whatever the query (reason, detail), or None."""
        cfg = self.config.assembly
        quotable = cfg.evidence_types
        if event.generated or event.source_kind in self.generated_kinds:
            return GENERATED, ""
        if "*" not in quotable and event.type not in quotable:
            return NOT_QUOTABLE, event.type
        if not event.text.strip():
            return EMPTY_TEXT, ""
        if step.visible and step.visible.contains(event.text):
            return VISIBLE, ""
        if step.asked and " ".join(event.text.split()) == step.asked:
            # The event that captured the current input: the model has it already,
            # whether or not the host passed the step's messages.
            return VISIBLE, "the query itself"
        if step.visible.in_summary(event.text):
            return IN_SUMMARY, ""
        if event.type == "assistant/message" and self._narration(event.text, step.strict):
            return NARRATION, "announces a step"
        if step.results_only and event.role == "user" and asks_only(event.text):
            return ON_THE_WAY, "a question; its answer says more"
        if step.results_only and (reply := _reply_after(event, step.replies)) is not None:
            return ON_THE_WAY, f"talk before the turn's reply :{reply}"
        if cfg.precise and step.tools and event.role == "user" and _pasted(event.text):
            return PASTED, ""
        if (
            cfg.precise
            and not cfg.tool_neighbours
            and event.why.startswith(NEAR)
            and event.why[len(NEAR) :] in step.tools
        ):
            return BESIDE_TOOL, event.why
        return None

    def _relevant(
        self,
        draft: Draft,
        candidates: Candidates,
        kept: Sequence[EventCandidate],
        carried: Mapping[str, Sequence[str]],
        step: _Step,
    ) -> tuple[list[EventCandidate], list[EventCandidate]]:
        """The kept events that clear the relevance bar (relevance.Relevance), in rank
        order, and those that hold enough of the query but ranked where relevance fell
        off (the index may still point at them); the rest are omitted with the bar's
        reason."""
        cfg = self.config.assembly
        if not cfg.precise or candidates.terms is None:
            return list(kept), []
        judge = Relevance(
            candidates.terms,
            candidates.events,
            kept,
            carried,
            cfg.tool_evidence_falloff if step.tools else cfg.evidence_falloff,
            cfg.evidence_min_share,
            RESULT_OWN_TERMS if step.results_only else 0,
        )
        passed: list[EventCandidate] = []
        fell_off: list[EventCandidate] = []
        for event in kept:
            why_not = judge.reason(event)
            if why_not is None:
                passed.append(event)
                continue
            draft.omit(event.ref, "evidence", why_not[0], event.score, why_not[1])
            if why_not[0] == FELL_OFF:
                fell_off.append(event)
        return passed, fell_off

    def _offer_evidence(
        self,
        draft: Draft,
        candidates: Candidates,
        passed: list[EventCandidate],
        fell_off: Sequence[EventCandidate] = (),
    ) -> None:
        """Quote the relevant events that match strongly (sections.index.strong_match),
        findings first, repeats folded into one; index the others, then those relevance
        let fall off."""
        cfg = self.config.assembly
        title = self.labels["section.evidence"]
        assistant = quoted = 0
        runner_up = _runner_up(passed, fell_off)
        # Findings first: what the user stated and what the agent concluded, then the rest
        # in rank order (a stable sort keeps the ranking within each).
        passed.sort(key=lambda e: 0 if e.role == "user" or FINDING.search(e.text) else 1)
        folded = _fold_repeats(passed, draft) if cfg.precise else [(e, []) for e in passed]
        shared = self.shared_frames([event for event, _ in folded]) if cfg.shared_frames else {}
        indexed: list[tuple[EventCandidate, str, str]] = []
        for event, others in folded:
            said = event.type == "assistant/message"
            strong = strong_match(
                event,
                candidates.terms,
                runner_up.get(event.ref),
                cfg.quote_specific,
                cfg.quote_margin,
            )
            if not cfg.precise:
                strong = "assembly.precise is off"
            if strong is None or quoted >= cfg.quotes:
                why = "a weak match" if strong is None else f"past assembly.quotes ({strong})"
                indexed.append((event, why, self._gist_text(event)))
                continue
            if said and assistant >= cfg.assistant_quotes:
                draft.omit(
                    event.ref, "evidence", OVER_LIMIT, event.score, "assembly.assistantQuotes"
                )
                continue
            heading, line = self.event_line(event, candidates.terms, shared)
            if _cut_empty(line, self.labels["quote.block"]):
                draft.omit(event.ref, "evidence", CUT_EMPTY, event.score)
                continue
            if others:
                line += self.labels["repeats"].format(seqs=", ".join(f":{s}" for s in others))
            taken = draft.offer(
                "evidence",
                title,
                event.ref,
                line,
                kind=event.type,
                score=event.score,
                why=f"{event.why} quoted: {strong}".strip(),
                group=heading,
                position=event.seq,
            )
            assistant += int(said and taken)
            quoted += int(taken)
        for event in fell_off:
            indexed.append((event, FELL_OFF, self._gist_text(event)))
        self._offer_index(draft, candidates.terms, indexed)

    def _gist_text(self, event: EventCandidate) -> str:
        """What an index line's gist is cut from: the agent's own words (as a quote of
        them would be, without blocks or what it copied from tool output), past any
        lead-in that says nothing."""
        text = event.text
        if event.type == "assistant/message":
            limit = self.config.assembly.assistant_snippet_chars
            text = self._own_words(event, prose_only(text, self.labels["quote.block"]), limit)
        flat = " ".join(text.split())
        match = LEAD_IN.match(flat)
        return flat[match.end() :] if match and match.end() < len(flat) else flat

    def _turn_replies(self, candidates: Candidates) -> dict[tuple[str, int], int]:
        """Per session and turn of a ranked agent message, the seq of the turn's last
        agent message: its reply, where the talk on the way ends."""
        if self.store is None:
            return {}
        turns = [
            (e.session_id, e.turn)
            for e in candidates.events
            if e.type == "assistant/message" and e.turn is not None
        ]
        return self.store.events.last_in_turns(turns, "assistant/message")

    def _narration(self, text: str, strict: bool = False) -> bool:
        """The agent's own words announce a step and report nothing: every sentence is
        an announcement (one that it will look at something, or one that names nothing
        it changes), or a short message is a status without a name or a finding, then
        an announcement. What names something ("Now let me rename load_transcript to
        load_session", "All 42 tests pass") is not narration — unless ``strict``: then
        the request asks nothing about earlier work, and what the agent set out to do on
        the way is not what it needs."""
        prose = prose_only(text, "").strip()
        sentences = [x.strip() for x in _SENTENCES.findall(prose)]
        if not sentences:
            return False
        if all(_empty_sentence(x, strict) for x in sentences):
            return True
        status = " ".join(sentences[:-1])
        return (
            len(prose) <= SHORT_STATUS_CHARS
            and _empty_sentence(sentences[-1], strict)
            and FINDING.search(prose) is None
            and (strict or _NAMES.search(status) is None)
        )

    def event_line(
        self,
        event: EventCandidate,
        terms: QueryTerms | None = None,
        shared: Mapping[str, tuple[str, ...]] | None = None,
    ) -> tuple[str, str]:
        """The heading of the event's group (its session and day) and its line under it:
        the heading says once what every line of the group would repeat — the day, and
        the role and minute when ``shared`` (:meth:`shared_frames`) says all its lines
        have the same."""
        cfg = self.config.assembly
        text, limit = event.text, cfg.snippet_chars
        if event.type == "assistant/message":
            # The agent's own words: labelled as such, without what it copied in.
            limit = min(limit, cfg.assistant_snippet_chars)
            prose = prose_only(text, self.labels["quote.block"])
            text = self._own_words(event, prose, limit)
            if len(prose) > 2 * limit:
                # Cut before the own-words check; a focused quote may end there.
                text += ELLIPSIS
        heading, where = self._frame(event)
        moved = (shared or {}).get(heading, ())
        if moved:
            # Said once for the group: the minute beside the day, then the role.
            heading += " " + self.labels["sep"].join(reversed(moved))
            where = [part for part in where if part not in moved]
        flat = one_line(text)
        if cfg.focused_quotes and len(flat) > limit:
            flat = focused(flat, terms, FOCUS_MIN_SAVED)
        said = self.labels["sep"].join(where) + self.labels["colon"] if where else ""
        return heading, f"- [ev :{event.seq}] {said}{snippet(flat, limit)}"

    def _frame(self, event: EventCandidate) -> tuple[str, list[str]]:
        """The event's group heading (session, day) and what its line says before the
        quote: the role (``assistant said`` for the agent's words), then the minute."""
        where = [self.who(event)]
        heading = self.session_heading(event.session_id)
        if event.time:
            # The day once in the heading; minutes are enough to order events.
            heading += f" {event.time[:10]}"
            where.append(event.time[11:16])
        return heading, where

    def shared_frames(self, events: Sequence[EventCandidate]) -> dict[str, tuple[str, ...]]:
        """Per group heading, the parts of the line frame (role, minute) that every one
        of the group's quotable lines has: said once in the heading instead. Chosen from
        every line that may be quoted, so the heading is the same whichever fit."""
        frames: dict[str, list[list[str]]] = {}
        for event in events:
            heading, where = self._frame(event)
            frames.setdefault(heading, []).append(where)
        out: dict[str, tuple[str, ...]] = {}
        for heading, wheres in frames.items():
            if len(wheres) > 1 and len({len(w) for w in wheres}) == 1:
                same = tuple(p for i, p in enumerate(wheres[0]) if all(w[i] == p for w in wheres))
                if same:
                    out[heading] = same
        return out

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


def _runner_up(
    passed: Sequence[EventCandidate], fell_off: Sequence[EventCandidate]
) -> dict[str, float]:
    """The best ranked passing event's ref → the score of the next candidate (passing or
    fallen off): what its margin is measured against. A lone candidate has none."""
    ranked = sorted([*passed, *fell_off], key=lambda e: (-e.score, e.ref))
    if len(ranked) < 2 or ranked[0] not in passed:
        return {}
    return {ranked[0].ref: ranked[1].score}


def _empty_sentence(sentence: str, strict: bool = False) -> bool:
    """Filler, an announcement that it will look at something, or one naming nothing
    (``strict``: any announcement)."""
    if LOOKING.fullmatch(sentence):
        return True
    return INTENT.fullmatch(sentence) is not None and (strict or _NAMES.search(sentence) is None)


def _reply_after(event: EventCandidate, replies: Mapping[tuple[str, int], int]) -> int | None:
    """The seq of its turn's reply when ``event`` is the agent's talk before it."""
    if event.type != "assistant/message" or event.turn is None:
        return None
    reply = replies.get((event.session_id, event.turn))
    return reply if reply is not None and reply > event.seq else None


def _pasted(text: str) -> bool:
    """Mostly machine output: at least PASTED_MIN_WORDS words, under PASTED_PLAIN_SHARE of
    them plain lowercase words (a log line, a path, JSON and a timestamp are none)."""
    words = text.split()
    if len(words) < PASTED_MIN_WORDS:
        return False
    plain = sum(1 for word in words if word.isalpha() and word.islower())
    return plain < PASTED_PLAIN_SHARE * len(words)


def _cut_empty(line: str, block: str) -> bool:
    """The quote of ``line`` (after its ``[ev …]`` label and frame) keeps fewer than
    MIN_QUOTE_WORDS words once its cuts ("…") and unquoted blocks are taken out."""
    quote = line.split("] ", 1)[-1]
    if ": " in quote[:40]:
        quote = quote.split(": ", 1)[1]
    if quote.rstrip(" …").endswith(": " + block) and len(quote) <= LEAD_IN_CHARS:
        return True  # what it introduces is the unquoted block
    quote = quote.replace(block, " ").replace(ELLIPSIS, " ").strip()
    quote = LEAD_IN.sub("", quote, count=1)  # matches at the start, if only emptily
    # CJK runs are not split into words: a quote that can hold them is not judged.
    return len(_WORD.findall(quote)) < MIN_QUOTE_WORDS and not may_hold_cjk(quote)


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
