"""The analysis: the candidates a message's sentences give, with their corrections,
retractions and restatements.

``analyse(text, role)`` is pure: the same text, role and context (whether an agent is
listening, what the assistant offered just before) give the same candidates.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from itertools import islice

from msgspec import Struct

from memplug.base.text import cjk_run
from memplug.derive.ahead import served
from memplug.derive.cues.categories import choice_key
from memplug.derive.cues.keys import subject_key
from memplug.derive.cues.options import offered_options, resolve_pick
from memplug.derive.cues.rules import (
    CORRECTION_RULES,
    KIND_RULES,
    PICK_RULE,
    RETRACTION_RULES,
    RULES,
    RULES_BY_ID,
    TASK_FIELDS,
    Rule,
)
from memplug.derive.cues.sentences import Sentence, mask_code, split_sentences
from memplug.derive.cues.words import content_words
from memplug.derive.quantities import Number, conditions_of, extract_numbers


class Candidate(Struct, frozen=True):
    """What one sentence contributes: an item, a task update, a correction or a retraction.

    ``kind`` is a memory kind or a task field, or ``None`` when the sentence only
    corrects, restates or retracts: the extractor then takes the kind from the item it
    acts on, or does nothing.
    """

    kind: str | None
    content: str
    rule: str
    role: str
    sentence: str
    index: int
    subject_key: str | None = None
    numbers: tuple[Number, ...] = ()
    conditions: tuple[str, ...] = ()
    correction_rule: str | None = None
    correction_target: str | None = None
    retraction_target: str | None = None
    restatement: bool = False
    # An option pick: the index (in ``offered``) of the assistant message it resolved
    # against, which is a source of the item as much as the reply is.
    picked: int | None = None
    # The evidence type when it is not the role's: a line of a memory file is an
    # artifact the person let the agent write, not words either of them said.
    evidence: str | None = None

    @property
    def is_correction(self) -> bool:
        return self.correction_rule is not None

    @property
    def is_retraction(self) -> bool:
        return self.retraction_target is not None

    @property
    def is_task(self) -> bool:
        return self.kind in TASK_FIELDS

    @property
    def label(self) -> str:
        """The single word the example table compares: the kind, else what it does."""
        if self.kind is not None:
            return self.kind
        if self.is_retraction:
            return "retraction"
        if self.is_correction:
            return "correction"
        return "restatement"


def _first_hit(
    rules: tuple[Rule, ...], text: str, role: str, agent: bool = False
) -> tuple[Rule, re.Match[str]] | None:
    """The matching rule with the lowest priority number (table order breaks ties)."""
    best: tuple[Rule, re.Match[str]] | None = None
    for rule in rules:
        # The bare pattern first: most rules miss most sentences, and a miss there costs
        # one regex call where the voids and the generator would cost far more.
        if role not in rule.roles or rule.pattern.search(text) is None:
            continue
        match = next(rule.matches(text, agent=agent), None)
        if match is not None and (best is None or rule.priority < best[0].priority):
            best = (rule, match)
    return best


def _old_text(match: re.Match[str]) -> str | None:
    for name in ("old", "old2", "target", "target2"):
        if name in match.re.groupindex and match.group(name):
            return str(match.group(name)).strip().rstrip(".。!！")
    return None


def _meaningful(text: str) -> bool:
    return bool(re.search(r"[A-Za-z]{2}|\d|" + cjk_run().pattern, text))


def _candidate(
    kind: str | None,
    content: str,
    rule: Rule,
    role: str,
    sentence: Sentence,
    index: int,
    *,
    key: str | None,
    correction: tuple[Rule, str | None] | None = None,
    retraction_target: str | None = None,
    restatement: bool = False,
    picked: int | None = None,
) -> Candidate:
    numbers = tuple(extract_numbers(content))
    if key is None and kind == "decision":
        key = choice_key(content)
    return Candidate(
        kind=kind,
        content=content,
        rule=rule.ref,
        role=role,
        sentence=sentence.text,
        index=index,
        subject_key=key,
        numbers=numbers,
        conditions=tuple(conditions_of(list(numbers))),
        correction_rule=correction[0].ref if correction else None,
        correction_target=correction[1] if correction else None,
        retraction_target=retraction_target,
        restatement=restatement,
        picked=picked,
    )


# Every rule names the fragments one of which it needs (``Rule.triggers``); most
# sentences hold none, and checking for them (plain substring tests, far cheaper than
# any regex) spares those sentences the whole table. tests/test_cues.py checks that the
# table's examples and random cue soup analyse the same with and without this filter.
def _triggers_of(rules: Iterable[Rule]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(t for rule in rules for t in rule.triggers))


# What is read in chat and in an assistant's text (which only chat-wide rules read).
_TRIGGERS = _triggers_of(r for r in RULES if "chat" in r.contexts or "assistant" in r.roles)


class _Triggers:
    """A trigger table tested word by word, each word once: a trigger with no space in
    it occurs in a whitespace-normalised text exactly when it occurs in one of its words,
    and an import repeats the same few thousand words in every message. Only the
    triggers that span words ("do not") are looked for in the whole text."""

    # Words remembered per table: a bound on what an import of pasted walls can hold.
    WORDS = 50_000
    # New words learned per text: together they cost about one scan of a sentence.
    LEARN = 4

    def __init__(self, triggers: tuple[str, ...]) -> None:
        self.inner = tuple(t for t in triggers if " " not in t)
        # Each phrase is looked for from the blank inside it, and then behind that: a
        # pattern led by a literal is scanned for in C, where the phrases as substrings
        # cost a scan of the text each.
        halves = [t.split(" ", 1) for t in triggers if " " in t]
        self.spanning = re.compile(
            " (?:"
            + "|".join(f"{re.escape(b)}(?<={re.escape(f'{a} {b}')})" for a, b in halves)
            + ")"
            if halves
            else "(?!)"
        )
        self.hits: set[str] = set()
        self.misses: set[str] = set()

    def any_in(self, words: list[str]) -> bool:
        """Whether a trigger occurs in the text of ``words`` (lower case) one space apart."""
        distinct = set(words)
        if not distinct.isdisjoint(self.hits):
            return True
        new = distinct - self.misses
        # Learning a word costs about what scanning a short text for every trigger does:
        # a text with more new words than that (every text, in a fresh hook process) is
        # scanned whole, and only a few of its words are learned.
        for word in islice(new, self.LEARN):
            # `map` over `__contains__` spares a generator step per trigger.
            found = any(map(word.__contains__, self.inner))
            known = self.hits if found else self.misses
            if len(known) >= self.WORDS:
                known.clear()
            known.add(word)
            if found:
                return True
        lowered = " ".join(words)
        if len(new) > self.LEARN and any(map(lowered.__contains__, self.inner)):
            return True
        return self.spanning.search(lowered) is not None


# A person's words where an agent is listening meet every rule.
_AGENT_TRIGGERS = _triggers_of(RULES)
_CUES = _Triggers(_TRIGGERS)
_AGENT_CUES = _Triggers(_AGENT_TRIGGERS)


def _maybe_cue(text: str, agent: bool = False) -> bool:
    # Substring tests, not one alternation regex: `re` tries every branch at every
    # position, which measured 2-3x slower on import text (the prefilter runs on every
    # sentence of an import).
    return (_AGENT_CUES if agent else _CUES).any_in(text.lower().split())


def _correction_frame(
    original: str, masked: str, role: str, agent: bool
) -> tuple[tuple[Rule, str | None] | None, str, str]:
    """The correction a sentence makes (its rule and the old value it names) and the
    text left to read: a correction cue marks the sentence; a framing one ("Actually,")
    is cut off and what follows is read like any other sentence."""
    hit = _first_hit(CORRECTION_RULES, masked, role, agent)
    if hit is None:
        return None, original, masked
    targets = (_old_text(m) for r in CORRECTION_RULES for m in r.matches(masked, agent=agent))
    correction = (hit[0], next((t for t in targets if t), None))
    if hit[0].strip and hit[1].start() == 0:
        return correction, original[hit[1].end() :].strip(), masked[hit[1].end() :].strip()
    return correction, original, masked


def _analyse_sentence(
    sentence: Sentence, role: str, index: int, *, prefilter: bool = True, agent: bool = False
) -> Candidate | None:
    original = sentence.text
    masked = mask_code(original)
    question = original.rstrip().endswith(("?", "？"))
    user = role == "user"
    # Only a person's own statement retracts, corrects or restates; pasted material
    # (see ``Sentence.deep``) can carry a label and nothing else.
    speaking = user and not question and not sentence.deep
    # The rules said to an agent are a person's: an assistant's text needs no more.
    if prefilter and sentence.header is None and not _maybe_cue(masked, agent and user):
        key = subject_key(original, need_value=True) if speaking else None
        return None if key is None else _restatement(original, sentence, index, key)

    retraction = _first_hit(RETRACTION_RULES, masked, role, agent) if speaking else None
    if retraction is not None:
        return _retraction(retraction, sentence, index)

    correction, body, body_masked = (
        _correction_frame(original, masked, role, agent) if speaking else (None, original, masked)
    )
    allowed = tuple(
        r
        for r in KIND_RULES
        # Only a user pastes: an assistant's long answer is its own words throughout.
        if (not question or r.kind == "open_question")
        and (r.label or not sentence.deep or not user)
    )
    hit = _first_hit(allowed, body_masked, role, agent)
    header = sentence.header
    if hit is None and header is not None and role in header.roles and _meaningful(body):
        return _candidate(
            header.kind,
            body,
            header,
            role,
            sentence,
            index,
            key=subject_key(body),
            correction=correction,
        )
    if hit is not None:
        rule, match = hit
        content = body[match.end() :].strip() if rule.strip else body
        if "keep" in match.re.groupindex and match.group("keep"):
            # Fillers before the cue ("ok, fine, let's do vite") are no part of it.
            content = body[match.start("keep") :]
        # A sentence-initial cue ("I suggest we set …") is not part of the subject.
        key_text = body[match.end() :] if rule.strip or match.start() == 0 else body
        # "I'd suggest:" or "Note that X differs in that:" introduces what follows; on
        # its own it states nothing.
        if not _meaningful(content) or content.endswith((":", "：")):
            return None
        return _candidate(
            rule.kind,
            content,
            rule,
            role,
            sentence,
            index,
            key=subject_key(key_text),
            correction=correction,
        )

    if not speaking or not _meaningful(body):
        return None
    if correction is not None:
        return _candidate(
            None,
            body,
            correction[0],
            role,
            sentence,
            index,
            key=subject_key(body),
            correction=correction,
        )
    key = subject_key(body, need_value=True)
    if key is None:
        return None
    return _restatement(body, sentence, index, key)


def _retraction(
    hit: tuple[Rule, re.Match[str]], sentence: Sentence, index: int
) -> Candidate | None:
    target = _old_text(hit[1])
    # "Forget about it" names nothing that could be found again.
    if not target or not content_words(target):
        return None
    return _candidate(
        None,
        sentence.text,
        hit[0],
        "user",
        sentence,
        index,
        key=subject_key(target),
        retraction_target=target,
    )


def _restatement(body: str, sentence: Sentence, index: int, key: str) -> Candidate:
    rule = RULES_BY_ID["zh.kv" if cjk_run().match(body) or "是" in body else "en.kv"]
    return _candidate(None, body, rule, "user", sentence, index, key=key, restatement=True)


def _pick(sentence: Sentence, index: int, options: dict[str, tuple[int, str]]) -> Candidate | None:
    """A reply that opens by picking one of the offered options: the option's text, as a
    decision; what the person says with the pick ("B) I'd like to add …") rides along."""
    if not options or sentence.deep:
        return None
    match = next(PICK_RULE.matches(mask_code(sentence.text), agent=True), None)
    chosen = resolve_pick(match, options) if match is not None else None
    if match is None or chosen is None:
        return None
    # "B?" asks; "let's do 2 for now, can you file it?" picks and then asks.
    clause = re.split(r"[,;]", sentence.text[match.start() :], maxsplit=1)[0]
    if clause.rstrip().endswith(("?", "？")):
        return None
    rest = sentence.text[: match.start()] + sentence.text[match.end() :]
    said = len(content_words(rest) - _PICK_FILLER) >= _PICK_SAYS_MORE
    content = f"{chosen[1]}: {sentence.text}" if said else chosen[1]
    return _candidate(
        PICK_RULE.kind,
        content,
        PICK_RULE,
        "user",
        sentence,
        index,
        key=subject_key(chosen[1]),
        picked=chosen[0],
    )


@served
def analysed(text: str, role: str, agent: bool, offered: tuple[str, ...]) -> list[Candidate]:
    """:func:`analyse` with the arguments a derivation passes, positionally, so that an
    import may compute it ahead (memplug/derive/ahead.py)."""
    return analyse(text, role, agent=agent, offered=offered)


# Words that say nothing beside a pick ("let's do 2 for now", "yes, A please"), and how
# many other content words make the reply say more than the pick.
_PICK_FILLER = frozenset("lets let's fine go first second third last option approach".split())
_PICK_SAYS_MORE = 3


def analyse(
    text: str,
    role: str,
    *,
    prefilter: bool = True,
    agent: bool = False,
    offered: Sequence[str] = (),
) -> list[Candidate]:
    """Every cue in ``text`` said by ``role`` (``user`` or ``assistant``), in order.

    Text with no cue gives nothing. Assistant text only ever gives proposals.
    ``agent``: an agent is listening (a coding host), so the rules said to an agent
    read too; ``offered``: the assistant's messages since the person last spoke, whose
    options a short reply may pick. ``prefilter=False`` consults every rule on every
    sentence (for tests).
    """
    if role not in ("user", "assistant") or not text:
        return []
    options = offered_options(offered) if agent and role == "user" and offered else {}
    out = []
    for index, sentence in enumerate(split_sentences(text, agent=agent)):
        # A pick opens the reply; a later "A) …" answers the assistant's question A.
        candidate = _pick(sentence, index, options) if index == 0 else None
        if candidate is None:
            candidate = _analyse_sentence(sentence, role, index, prefilter=prefilter, agent=agent)
        if candidate is not None:
            out.append(candidate)
    return out


def classify(
    text: str, role: str = "user", *, agent: bool = False, offered: Sequence[str] = ()
) -> str | None:
    """The label of the first candidate in ``text`` (what the example table checks)."""
    found = analyse(text, role, agent=agent, offered=offered)
    return found[0].label if found else None
