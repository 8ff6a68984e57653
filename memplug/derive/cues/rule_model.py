"""The cue rule record (``Rule``, ``Example``), the helpers that build rule tables, and
the word lists their patterns are made of.

The rule tables (``rules``, ``task_rules``, ``agent_rules``) import from here and nothing
here imports them; ``rules`` assembles them into the one ``RULES`` table.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from msgspec import Struct

from memplug.base.patterns import LazyPattern, lazy

_I = re.IGNORECASE


class Example(Struct, frozen=True):
    """One labelled utterance: what ``classify`` must return for it (``None``: no cue).

    ``agent``: said where an agent is listening (a coding host); ``offered``: the
    assistant's previous message, for a reply that picks one of its options.
    """

    text: str
    expect: str | None
    role: str = "user"
    agent: bool = False
    offered: str | None = None


class Rule(Struct, frozen=True):
    """A named, versioned cue. ``ref`` (``id@version``) is stored in ``extractor``."""

    id: str
    version: int
    kind: str
    lang: str
    summary: str
    pattern: LazyPattern
    examples: tuple[Example, ...]
    # The cue frames the statement ("Decision:", "Remember that", "Actually,"): the
    # item's content starts after it. Cues that carry meaning ("must") stay in place.
    strip: bool = False
    # Lower wins when several rules match one sentence (labels before inline words).
    priority: int = 50
    # A `Word:` label a person types ("Decision:", "TODO:"): it counts anywhere in a
    # message, also past `sentences.INLINE_REACH` and after a line that introduces pasted
    # material.
    label: bool = False
    roles: tuple[str, ...] = ("user",)
    # A match is void when the text right after it matches ``not_after`` or the text
    # right before it matches ``not_before`` (searched at its end).
    not_after: LazyPattern | None = None
    not_before: LazyPattern | None = None
    # Where the rule is read: ``chat`` (people talking, to each other or to a chatbot)
    # and ``agent`` (a coding host: someone addressing an agent that acts on the work).
    # The same words are a rule to an agent and chatter between friends.
    contexts: tuple[str, ...] = ("chat", "agent")
    # Voids that hold only in chat: there a rule must name the work ("always the same
    # flaky test" vs "always pin versions"); to an agent everything said is about it.
    chat_not_after: LazyPattern | None = None
    chat_not_before: LazyPattern | None = None
    # Voids that need the whole sentence (its subject and what is said of it), searched
    # in it: "the authentication bug must be fixed" is one task, "every bug must be fixed"
    # a rule; in chat, "you must try the pasta" names no work.
    not_in: LazyPattern | None = None
    chat_not_in: LazyPattern | None = None
    # Fragments (lower case) one of which every sentence the rule matches holds. The
    # prefilter of cues/analysis.py is their union: a sentence holding none never meets
    # the table, and tests/test_cues.py checks each matching example holds one. Empty
    # for a rule read before the prefilter (the option pick, which needs offered options).
    triggers: tuple[str, ...] = ()

    @property
    def ref(self) -> str:
        return f"{self.id}@{self.version}"

    def matches(self, text: str, *, agent: bool = False) -> Iterator[re.Match[str]]:
        if ("agent" if agent else "chat") not in self.contexts:
            return
        voids = [(self.not_after, self.not_before)]
        if not agent:
            voids.append((self.chat_not_after, self.chat_not_before))
        within = (self.not_in,) if agent else (self.not_in, self.chat_not_in)
        for match in self.pattern.finditer(text):
            if not any(_void(text, match, after, before) for after, before in voids):
                # Searched only once a match stands: most sentences never get here.
                if any(void is not None and void.search(text) for void in within):
                    return
                yield match


def _void(
    text: str, match: re.Match[str], after: LazyPattern | None, before: LazyPattern | None
) -> bool:
    if after is not None and after.match(text, match.end()):
        return True
    return before is not None and before.search(text[: match.start()]) is not None


def _rx(pattern: str, flags: int = _I) -> LazyPattern:
    # A hook tries a handful of the table's patterns: each compiles when first used.
    return lazy(pattern, flags)


def _ex(*items: tuple[str, str | None] | tuple[str, str | None, str]) -> tuple[Example, ...]:
    return tuple(Example(*item) for item in items)


def _agent(*items: tuple[str, str | None]) -> tuple[Example, ...]:
    """Examples said by a user to a coding agent."""
    return tuple(Example(text, expect, agent=True) for text, expect in items)


def _chat(*texts: str) -> tuple[Example, ...]:
    """Examples said in chat, where an agent-directed rule must stay silent."""
    return tuple(Example(text, None) for text in texts)


# Fillers that may precede a sentence-initial cue without changing it.
_LEAD = r"^(?:(?:please|and|but|so|also|oh|ok(?:ay)?|well|hmm|wait)[,\s]+)*"
# A frame that may open a standing rule: "To be clear: don't …", "Remember: never …".
_FRAME = (
    r"(?:(?:(?:just\s+)?to\s+be\s+clear|to\s+clarify|remember|reminder|important|note|nb|"
    r"fyi|again)\s*[:,]\s*(?:please[,\s]+)?)?"
)
# A word after never/always that shows a description, not an instruction:
# determiners, "mind", forms of be/have, and third-person verbs ("always fails").
_DESCRIPTIVE = (
    r"mind|the|a|an|this|that|these|those|my|your|our|his|her|their|its|so|such|"
    r"same|was|were|is|are|been|be|has|had|ever|again|there|here|enough|really|"
    r"[a-z]+(?<!s)s"
)
# Words after "not" that make "not … but" / ", not …" something other than a correction.
_NOT_CONTRAST = r"(?!(?:only|just|sure|yet|really|always|that|bad|quite|exactly)\b)"
# What a correction's replaced value must hold to name something (a digit, a symbol
# joining two characters, a capitalised name): "4 GB, not 3 GB", "not Friday but
# Monday"; not "progress, not perfection".
_NAMED = r"(?=[^,.;!?]*?(?:\d|\w[_/.:@\-]\w|`|(?-i:[A-Z])))"
# Past forms: "never tried it", "always wanted to" tell a story, they instruct nothing.
# (-eed verbs such as "exceed" are present tense.)
_PAST = (
    r"[a-z]*[^\We]ed|saw|seen|went|gone|had|did|done|got|gotten|knew|known|thought|found|"
    r"made|took|taken|came|said|told|heard|felt|met|left|won|lost|ate|ran|wrote|written|"
    r"forgot|forgotten|bought|brought|caught|taught|meant|sent|spent|understood"
)
# Verbs of feeling and knowing: "you must love it", "we always look forward to it".
_STATIVE = (
    r"feel|felt|love|like|enjoy|know|think|mean|miss|hate|look|seem|sound|remind|wonder|"
    r"wish|hope|imagine|believe|reali[sz]e|appreciate|adore|admire|want"
)
# Life advice, not work: "don't give up", "never lose hope", "don't let it stop you".
_ENCOURAGE = (
    r"give\s+(?:up|in)|quit|let|lose|stop|limit|doubt|settle|underestimate|compare|beat|"
    r"overthink|hesitate|worry|panic|sweat|fear|regret|rush|"
    r"take\s+(?:it|things)\s+personally"
)
# What the work is made of: an obligation whose subject is none of these (and not "we",
# "you", the agent) is about someone else's world ("the owner must pay", "all pets must
# be on a leash", "the player must avoid them").
_WORK_NOUNS = (
    r"code|files?|tests?|functions?|methods?|class(?:es)?|modules?|packages?|commits?|"
    r"branch(?:es)?|prs?|merges?|deploys?|deployments?|releases?|builds?|ci|pipelines?|"
    r"migrations?|schemas?|tables?|columns?|index(?:es)?|quer(?:y|ies)|databases?|dbs?|apis?|"
    r"endpoints?|services?|servers?|requests?|responses?|logs?|config(?:uration)?s?|settings?|"
    r"secrets?|keys?|tokens?|passwords?|credentials?|dependenc(?:y|ies)|versions?|scripts?|"
    r"commands?|librar(?:y|ies)|cach(?:e|es)|queues?|jobs?|workers?|containers?|images?|"
    r"clusters?|directory|directories|folders?|paths?|output|answers?|repl(?:y|ies)|text|"
    r"articles?|essays?|stor(?:y|ies)|summar(?:y|ies)|emails?|posts?|titles?|headings?|"
    r"sections?|paragraphs?|sentences?|words?|lists?|bullets?|formats?|tone|style|json|"
    r"yaml|values?|fields?|variables?|names?|ids?|strings?|lines?|pages?|turns?|messages?|"
    r"prompts?|chapters?|translations?|documents?|docs?|readme|comments?|changes?|features?|"
    r"bugs?|errors?|exceptions?|data|inputs?|ui|components?|screens?|latency|timeouts?|"
    r"limits?|budgets?|repo(?:sitor(?:y|ies))?|projects?|app(?:lication)?s?|site|website|"
    r"table|report|slides?|diagrams?|charts?|options?|approach(?:es)?|plans?|designs?|"
    r"architecture|stack|frameworks?|providers?|vendors?|solutions?|implementations?|"
    r"interfaces?|models?|algorithms?|parameters?|tickets?|issues?|questions?|deadlines?|"
    r"ship(?:ping)?|launch(?:es)?"
)
# The rest of the sentence names the work: one of those nouns, "this", a number or a
# code-shaped token. Weak cues (an imperative "always", "we decided", "the goal is")
# need it: "we decided to do doggy playdates" is about a life, not a project.
_NOT_ABOUT_WORK = r"(?![^.!?]*(?:\b(?:this|these|" + _WORK_NOUNS + r")\b|\d|\w[_./]\w|`))"
# "…, and we always make a big deal of it": a habit told inside a longer sentence. A
# team's rule opens its sentence ("We never deploy on Fridays").
_STORY_JOIN = r"\b(?:and|but|so|which|that|where|when|because|since|as)\s+$"
# After "must be": something a reviewer could check (a bound, a number, a state an
# artefact is put in) rather than how something feels ("must be so rewarding").
_CHECKABLE = (
    r"(?!(?:thrilled|excited|stoked|pleased|relieved|exhausted|tired|amazed|surprised|"
    r"impressed|interested|bored|scared|worried|disappointed|satisfied|delighted|"
    r"overwhelmed|devastated|frustrated|motivated|inspired|blessed|loved|missed)\b)"
    r"(?:(?:always|strictly|fully|at\s+(?:least|most)|no\s+(?:more|longer|less|larger)|less|"
    r"more|fewer|under|below|above|over|within|between|exactly|in|on|inside|outside|"
    r"one\s+of|equal|identical|consistent|compatible|backwards?|idempotent|deterministic|"
    r"unique|immutable|private|public|non-\w+|lower-?case|upper-?case|empty|valid|present|"
    r"absolute|relative|[a-z]+ed|set|run|done|kept|made|put|sent|held|read|shown|built|"
    r"written|given|bound)\b|[\d<>≤≥=`\"'])"
)

# Verbs that act on a piece of work: "you must include a short explanation" is aimed at
# an essay, "you must try the pasta" at a person. What people mostly say to friends
# ("you must send me pictures", "check out the café", "keep in touch") is left out.
_WORK_VERBS = (
    r"use|keep(?!\s+in\s+touch)|write|add|run|build|check(?!\s+out)|update|save|include|"
    r"mention|cite|explain|avoid|respond|answer|reply|format|list|provide|test|commit|"
    r"deploy|log|print|describe|summari[sz]e|translate|validate|verify|implement|store|"
    r"delete|remove|document|review|quote|output|limit|return|release|skip|cover|push|"
    r"pull|merge|rebase|ship|compile|lint|refactor|install|upgrade|pin|encrypt|hash|"
    r"expose|hardcode|mock|disable|enable|modify|edit|rename|import|export|migrate|cache|"
    r"back\s+up|rotate|leak|upload|download|overwrite|drop(?!\s+by)|change"
)
# A review verdict opening pasted review text ("Request Changes - …", "LGTM:"): what
# follows judges one change; it is no standing rule.
_REVIEW_VERDICT = (
    r"^\W*(?:request(?:ed|ing)?\s+changes|changes\s+requested|approved?|lgtm|"
    r"reject(?:ed)?|needs\s+(?:work|changes))\s*(?:[-–—:|]|$)"
)
