"""The phrase tables assembly reads requests and an agent's messages with, one per
locale, each with labelled examples (tests/test_phrases.py checks every one).

These are the phrase filters that earned their place on sessions they were not chosen
on (``python -m bench.filter_audit``, docs/history/benchmarks-2026.md "Which phrase filters
earn their place"); everything else assembly decides from structure: role, turn position,
outcome, compaction. A text is read with every table at once (the union of their
phrases), so a locale adds a table and examples here, and no code.

What each field is for:

- ``generic_words``: words that ask to go on or agree ("continue", "ok, do it"): what
  they would match is whatever happened to say them, never what a request is about.
- ``asks_for``, ``past``, ``we_did``: a question that asks for something that exists or
  was settled, or about what happened
  (``memplug.recall.assemble.relevance.asks_about_earlier_work``).
- ``proposes``: the openings of a question that proposes a step ("can we …?").
- ``asks_for_step``: the openings of a question a step itself may answer ("which …?").
- ``fillers``, ``plans``, ``gerunds``, ``look_adverbs``, ``look_verbs``: an agent's
  sentence that announces its next step rather than reporting a finding ("Let me read
  X.", "Now I'll check Y.", "Perfect!").
- ``finding``: the words of a finding — a cause, a fix, a decision the agent reports.
"""

from __future__ import annotations

import re

from msgspec import Struct

from memplug.base.patterns import LazyPattern, lazy


class PhraseExample(Struct, frozen=True):
    """What ``check`` must answer for ``text`` (tests/test_phrases.py names the checks)."""

    check: str
    text: str
    expect: bool


class Phrases(Struct, frozen=True):
    """One locale's phrases (the fields are described above) and their examples."""

    lang: str
    generic_words: frozenset[str]
    asks_for: tuple[str, ...]
    past: str
    we_did: str
    proposes: tuple[str, ...]
    asks_for_step: tuple[str, ...]
    fillers: str
    plans: str
    gerunds: str
    look_adverbs: str
    look_verbs: str
    finding: str
    examples: tuple[PhraseExample, ...]


def _examples(check: str, *pairs: tuple[str, bool]) -> tuple[PhraseExample, ...]:
    return tuple(PhraseExample(check, text, expect) for text, expect in pairs)


EN = Phrases(
    lang="en",
    generic_words=frozenset(
        "continue continu go ahead proceed carry keep going yes yeah yep yup ok okay sure "
        "please thanks thank do it that this those these again next done good great fine "
        "nice cool perfect now lgtm sounds right agreed agree commit push try retry run "
        "same also well let lets on with the and to a".split()
    ),
    # Modal and open questions ("can we …?", "what if …?", "how does X look today?") ask
    # what to do next, so they are not here.
    asks_for=(
        "which ",
        "where ",
        "why ",
        "who ",
        "when ",
        "how many ",
        "how much ",
        "how do we ",
        "how did ",
        "what is the ",
        "what's the ",
        "what was ",
        "what were ",
        "what did ",
        "is ",
        "are ",
        "does ",
        "do ",
    ),
    # A past or perfect auxiliary anywhere in a question ("why was it closed?").
    past=r"\b(?:did|was|were|had|has|have|ago|earlier|last time)\b",
    we_did=r"\b(?:did|have|had) we\b|\bwe (?:did|ran|changed|edited|wrote|used)\b",
    proposes=(
        "can we ",
        "could we ",
        "should we ",
        "shall we ",
        "what if ",
        "why not ",
        "why don't we ",
        "how about ",
        "let's ",
        "lets ",
    ),
    asks_for_step=("which ", "where ", "how do we ", "how did we ", "what command "),
    fillers=(
        r"(?:(?:ok(?:ay)?|now|great|good|perfect|excellent|right|alright|first|next|then|so|"
        r"done|all right|good thinking|good question|good point|good catch|fair point|got it|"
        r"understood|sure|i see(?: the (?:issue|problem))?|you'?re (?:right|correct)|"
        r"(?:that )?makes sense|that's helpful context|absolutely|yes)\s*[,.!:—–-]?\s*)*"
    ),
    # A plan, an instruction to itself ("Now fix X:"), an offer ("Want me to merge it?").
    plans=(
        r"(?:let me|let's|i'll|i will|i'm going to|i am going to|i need to|i should|we need to|"
        r"time to|(?:do you )?want me to|should i|shall i|would you like me to|"
        r"(?:fix|update|add|remove|write|create|edit|implement|apply|rename|move|wire))"
    ),
    gerunds=r"(?:i'm |now )?(?:looking|checking|reading|searching|exploring|examining|reviewing)",
    look_adverbs=r"(?:also|first|now|quickly|just|then|briefly|next|actually)",
    look_verbs=(
        r"(?:read|check|look|see|verify|examine|explore|investigate|search|find|trace|"
        r"understand|inspect|review|run|start|get|dig|confirm|take a look|study|analy[sz]e|"
        r"make sure)"
    ),
    finding=(
        r"\b(?:cause[sd]?|because|the (?:bug|issue|problem|fix)|found (?:the|it)|"
        r"fixed (?:by|it|the)|turns out|decided|decision|"
        r"instead of|works now|now works|fails?|failed|failing|the reason|unused|no longer|never|"
        r"not called|broken|missing|wrong|doesn't|does not|isn't|is not|can't|cannot)\b"
    ),
    examples=(
        *_examples(
            "generic",
            ("continue", True),
            ("ok, do it", True),
            ("yes, commit and push", True),
            ("continue with the stripe webhook", False),
            ("fix the flaky test", False),
        ),
        *_examples(
            "earlier",
            ("why did the push fail?", True),
            ("did we add a test?", True),
            ("how many tests passed?", True),
            ("is the epic finished?", True),
            ("which branch did we rebase onto?", True),
            ("we changed the port, right?", True),
            ("can we detect it?", False),
            ("what if the agent commits?", False),
            ("fix the flaky test", False),
            ("how does the login page look today?", False),
        ),
        *_examples(
            "asks_only",
            ("how is the trailer added?", True),
            ("does this write to the v1 branch?", True),
            ("what if we keep both?", False),
            ("can we drop it?", False),
            ("Drop it. Why was it there?", False),
        ),
        *_examples(
            "steps",
            ("which command runs the tests?", True),
            ("where does the library live?", True),
            ("why did the build fail?", False),
            ("fix the build", False),
        ),
        *_examples(
            "narration",
            ("Let me read the config file.", True),
            ("Now I'll check the tests.", True),
            ("Perfect! Let me look at the hook next.", True),
            ("Checking the logs now.", True),
            ("Found the bug: the cache key ignores tenant_id.", False),
            ("Now let me rename load_transcript to load_session", False),
            ("All 42 tests pass.", False),
        ),
        *_examples(
            "finding",
            ("The cause is a stale cache key.", True),
            ("It turns out the port was 5433.", True),
            ("We decided on Postgres instead of MySQL.", True),
            ("Tests are broken.", True),
            ("Let me read the file.", False),
            ("Here is the plan.", False),
        ),
        *_examples(
            "lead_in",
            ("You're right - the port is 5433.", True),
            ("Perfect. The port is 5433.", True),
            ("The port is 5433.", False),
            ("Port 5433 is right.", False),
        ),
    ),
)

TABLES: tuple[Phrases, ...] = (EN,)


def _union(patterns: list[str], flags: int = 0) -> LazyPattern:
    # Each is read only by some steps' assembly: it compiles when first used.
    return lazy("|".join(f"(?:{p})" for p in patterns), flags)


GENERIC_WORDS: frozenset[str] = frozenset().union(*(t.generic_words for t in TABLES))
ASKS_FOR: tuple[str, ...] = tuple(p for t in TABLES for p in t.asks_for)
PROPOSES: tuple[str, ...] = tuple(p for t in TABLES for p in t.proposes)
ASKS_FOR_STEP: tuple[str, ...] = tuple(p for t in TABLES for p in t.asks_for_step)
PAST = _union([t.past for t in TABLES])
WE_DID = _union([t.we_did for t in TABLES])
# What leads a message in without saying anything ("You're right -", "That makes sense.").
LEAD_IN = _union([t.fillers for t in TABLES], re.I)
# A sentence that announces a step: fillers, then a plan or a look, then anything.
INTENT = _union([rf"{t.fillers}(?:(?:{t.plans}|{t.gerunds})\b.*)?" for t in TABLES], re.I | re.S)
# An announcement that it will look at something: whatever it names, it found nothing yet.
LOOKING = _union(
    [
        rf"{t.fillers}(?:{t.gerunds}|{t.plans}\s+(?:{t.look_adverbs}\s+)*{t.look_verbs})\b.*"
        for t in TABLES
    ],
    re.I | re.S,
)
FINDING = _union([t.finding for t in TABLES], re.I)
