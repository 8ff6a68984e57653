"""Precise, not full: which ranked raw events are worth quoting in a step's message.

Which of the query's terms a line holds, and how strong each is in scope, comes from
retrieval (:class:`memplug.recall.retrieve.strength.QueryTerms`).

:class:`Relevance` applies three rules (four on request) to the events a message may
quote, after the sections above raw evidence are packed (docs/assembly.md, "Precision"):

1. **Adds something.** An event an included item or task line was derived from is
   quoted only for what is left of it once their texts are taken out: nothing but
   labels left (``Decision:``), it is not quoted; otherwise that rest is judged.
2. **Enough of the query.** A line needs a strong query term or more than one weak one,
   together holding at least ``assembly.evidenceMinShare`` of the query's IDF (one
   common word of a long request is not a match) — or it sits within
   :data:`SUPPORT_WINDOW` events of such a line in the same session: evidence sits next
   to what matches (the answer after a question).
3. **Relevance falls off.** A line whose ranking score is under
   ``assembly.evidenceFalloff`` of the best quotable line's is not quoted, however much
   budget is left: the ranking already weighs every signal (terms, rarity, neighbours,
   recency, role), so it, not the term count alone, says where the relevant lines end.
4. **Its own words** (``own_terms``, for a request that asks nothing about earlier
   work in a session of tool work): a line holds that many of the query's term groups
   (at most as many as occur in scope) itself; sitting next to a line that matches is
   not enough.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Protocol

from memplug.base.text import may_hold_cjk
from memplug.recall.retrieve.phrases import (
    ASKS_FOR,
    ASKS_FOR_STEP,
    GENERIC_WORDS,
    PAST,
    PROPOSES,
    WE_DID,
)
from memplug.recall.retrieve.strength import QueryTerms

CARRIED = "its item carries it"
WEAK_TERMS = "only weak terms"
LITTLE = "too little of the query"
FELL_OFF = "relevance fell off"
NOT_SPECIFIC = "nothing specific to the request"
FEW_OWN = "too few of the request's words"
# How far (in seqs of one session) a line that holds enough of the query lends its
# support; measured on LoCoMo, where 3 keeps every evidence turn that a whole-session
# window keeps.
SUPPORT_WINDOW = 3
# The share of its query weight a line lends a neighbour: what it lends must itself
# reach the minimum share, so only a line that holds a good part of the query (twice
# the minimum) lends, and one common word beside a tool call lends nothing.
LENT_SHARE = 0.5
# A cue label ("Remember:", "Open question:", "记住：") says nothing by itself.
_LABEL = re.compile(r"(?:^|(?<=[\s.。!！?？]))[^\s:：.。]{1,16}(?: [^\s:：.。]{1,16})?[:：]")
# What is left must hold this much: a word, or a short CJK phrase (that pattern's class
# spans 27k code points and costs a fresh process ~9 ms to compile, so it is compiled
# only for text that can hold CJK).
_CONTENT = re.compile(r"[^\W\d_]{3,}")
_LETTERS = re.compile(r"[^\W\d_]+")
# Where one sentence of a request ends and the next begins.
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\n")
# A question about earlier work is asked in a few words: a longer message holding
# questions is a discussion (chosen on the tune half of the replayed sessions; 20 to 30
# words give the same share there, docs/benchmarks.md).
QUESTION_MAX_WORDS = 25
# What may open a question without being part of it: a list mark, a quote, "Q:".
_LIST_MARK = re.compile(r"^(?:(?:[-*>]|q:)\s*)+")
# A pasted block (a log, a diff) is not the person's question, whatever it holds.
_FENCED = re.compile(r"```.*?(?:```|\Z)", re.S)


@functools.cache
def _cjk_phrase() -> re.Pattern[str]:
    return re.compile(r"[\u3400-\u9fff]{2,}")


class Evidence(Protocol):
    """What judging a ranked event needs to know of it."""

    @property
    def ref(self) -> str: ...
    @property
    def session_id(self) -> str: ...
    @property
    def seq(self) -> int: ...
    @property
    def text(self) -> str: ...
    @property
    def score(self) -> float: ...


class Relevance:
    """Judges the quotable ranked events of one step against what is already included."""

    def __init__(
        self,
        terms: QueryTerms,
        ranked: Sequence[Evidence],
        quotable: Sequence[Evidence],
        carried: Mapping[str, Sequence[str]],
        falloff: float,
        min_share: float,
        own_terms: int = 0,
    ) -> None:
        self.terms = terms
        self.falloff = falloff
        self.min_share = min_share
        self.own_terms = own_terms
        # What each line says beyond the items and task lines already included.
        self.rest = {e.ref: _rest(e.text, carried[e.ref]) if e.ref in carried else e.text
                     for e in quotable}  # fmt: skip
        # Any ranked event (quotable or not) whose own words hold enough of the query
        # lends its neighbours support; what an included item already says lends nothing.
        self.anchors: dict[str, list[int]] = {}
        for event in ranked:
            own = _rest(event.text, carried[event.ref]) if event.ref in carried else event.text
            found = terms.found(own) if own is not None else None
            if (
                found is not None
                and found.enough
                and LENT_SHARE * found.weight >= min_share
                and (found.specific or not terms.specific)
            ):
                self.anchors.setdefault(event.session_id, []).append(event.seq)
        self.stands = {e.ref: self._stands(e) for e in quotable}
        self.best = max((e.score for e in quotable if self.stands[e.ref]), default=0.0)

    def reason(self, event: Evidence) -> tuple[str, str] | None:
        """Why ``event`` is not worth quoting (reason, detail), or None to quote it."""
        rest = self.rest[event.ref]
        if rest is None:
            return CARRIED, "nothing but labels left"
        if not self.terms.specific:
            return NOT_SPECIFIC, "the request names nothing specific"
        if not self.stands[event.ref]:
            found = self.terms.found(rest)
            if found.holds(self.min_share) and not found.specific:
                return NOT_SPECIFIC, found.names()
            if rest != event.text:
                return CARRIED, found.names()
            if not found.enough:
                return WEAK_TERMS, found.names()
            return LITTLE, f"{found.names()}: {found.weight:.2f} < {self.min_share:g}"
        if event.score < self.falloff * self.best:
            return FELL_OFF, f"score {event.score:.2f} < {self.falloff:g} x {self.best:.2f}"
        # A request of one term group (a CJK phrase, one identifier) asks for that one.
        needed = min(self.own_terms, self.terms.in_scope)
        found = self.terms.found(rest)
        if len(found.strong) + len(found.weak) < needed:
            return FEW_OWN, f"{found.names()}: fewer than {needed}"
        return None

    def _stands(self, event: Evidence) -> bool:
        """The line holds enough of the query itself, or sits next to a line that does."""
        rest = self.rest[event.ref]
        if rest is None:
            return False
        found = self.terms.found(rest)
        if found.holds(self.min_share) and found.specific:
            return True
        near = self.anchors.get(event.session_id, ())
        return any(0 < abs(seq - event.seq) <= SUPPORT_WINDOW for seq in near)


def generic_request(text: str) -> bool:
    """A request made only of words that ask to go on or agree ("continue", "ok, do
    it"): it names nothing to look for."""
    return all(word in GENERIC_WORDS for word in _LETTERS.findall(text.lower()))


def asks_about_earlier_work(text: str) -> bool:
    """A question about what was done or found before ("why did the push fail?", "did
    we add a test?", "how many tests passed?", "is the epic finished?"): what was found
    on the way may be its answer. Any other request (an instruction, a pasted log, a
    question about what to do next: "can we detect it?", "what if the agent commits?")
    is served by what was found or decided, not by the steps taken on the way. So is a
    message of more than QUESTION_MAX_WORDS words of its own: questions among
    instructions and thoughts are a discussion of what to do next."""
    lowered = _own_words(text)
    if len(lowered.split()) > QUESTION_MAX_WORDS:
        return False
    return (
        any(q.startswith(ASKS_FOR) or PAST.search(q) is not None for q in _questions(text))
        or WE_DID.search(lowered) is not None
    )


def asks_only(text: str) -> bool:
    """A message made only of questions that ask for something ("how is the trailer
    added?", "does this write to the v1 branch?"), none proposing a step ("what if we
    keep both?", "can we drop it?"): the answer it got says more than the question."""
    sentences = _sentences(_own_words(text))
    return bool(sentences) and all(
        x.endswith("?") and not _LIST_MARK.sub("", x).startswith(PROPOSES) for x in sentences
    )


def asks_for_steps(text: str) -> bool:
    """A question a step itself may answer ("which command runs the tests?", "where does
    the library live?", "which example did we copy?"): records that only say a command
    ran or a file was read are worth quoting for it, and for nothing else."""
    return any(q.startswith(ASKS_FOR_STEP) for q in _questions(text))


def _own_words(text: str) -> str:
    """The message lowercased, without its pasted blocks (a log, a diff)."""
    return _FENCED.sub(" ", text.lower())


def _sentences(lowered: str) -> list[str]:
    return [x for x in (y.strip() for y in _SENTENCE_BREAK.split(lowered)) if x]


def _questions(text: str) -> list[str]:
    """The request's own questions, lowercased: its sentences that end in "?", outside
    any pasted block."""
    lowered = _own_words(text)
    if "?" not in lowered:
        return []
    return [x for x in _sentences(lowered) if x.endswith("?")]


def _rest(text: str, said: Sequence[str]) -> str | None:
    """``text`` with what ``said`` holds taken out; None when only labels are left."""
    rest = " ".join(text.split())
    for part in sorted(said, key=len, reverse=True):
        flat = " ".join(part.split())
        if flat:
            rest = rest.replace(flat, " ")
    rest = _LABEL.sub(" ", rest)
    return rest if _has_content(rest) else None


def _has_content(text: str) -> bool:
    """A word of three letters, or a CJK phrase of two characters."""
    if _CONTENT.search(text):
        return True
    return may_hold_cjk(text) and _cjk_phrase().search(text) is not None
