"""Sentence splitting: the sentences a person wrote, and which of them are pasted.

Code fences, quoted lines, logs, mails, letters, chat logs and hard-wrapped prose are
someone else's words or a tool's output; what is left is cut into sentences.
"""

from __future__ import annotations

import re
from itertools import pairwise

from msgspec import Struct

from memplug.base.patterns import lazy
from memplug.base.text import normalize_text
from memplug.derive.cues.keys import kv_colon
from memplug.derive.cues.rules import KIND_RULES, Rule, is_label

# One sentence is analysed at most this far: cues sit where people start to speak, and
# a bound keeps every pattern linear on pasted walls of text.
MAX_SENTENCE_CHARS = 2_000
# Inline cues ("must", "never", "note that") count in a user message's first this many
# characters; further in, a long message is pasted material (a document, a form, an
# article) whose rules are someone else's. Labels ("Decision:") count anywhere.
INLINE_REACH = 2_000

_FENCE = lazy(r"^\s*(?:```|~~~)")
_BULLET = lazy(r"^(?:[-*•+]|\d{1,3}[.)])\s+")
_BOLD_LABEL = lazy(r"^[*_]{1,3}([^*_\n]{1,40}?[:：])[*_]{1,3}\s*")
_INLINE_CODE = lazy(r"`[^`\n]*`")
# Pasted output is evidence, never a statement: log and stack-trace lines (matched
# case-sensitively: `ERROR`, `TypeError:`, `fatal:` are what tools print).
_LOG_LINE = lazy(
    r"^(?:\w*(?:Error|Exception)\b[^:]{0,80}:|(?:error|fatal|warning)(?:\[\w+\])?:"
    r"|Traceback \(most recent call last\)|File \"|at \S+ \(|\^+$|npm (?:ERR|WARN)!"
    r"|\[?\d{4}-\d{2}-\d{2}[T ]\d{1,2}:\d{2}"
    r"|\[?(?:DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|FATAL|TRACE|CRITICAL)\]?[\s:])"
)
# Where a pasted mail or its quoted history starts: the rest of the message is someone
# else's words.
_MAIL_START = lazy(
    r"^(?:On .{4,200} wrote:|-{2,}\s*(?:Original|Forwarded) [Mm]essage\s*-{2,}|From: \S.*)$"
)
_MAIL_HEADER = lazy(r"^(?:Sent|To|Cc|Bcc|Subject|Date|Reply-To):\s")
# "Name: text" at the start of a line is reported speech (a chat log, a transcript): a
# capitalised word or two before a colon that is no label, heading or key.
_SPEAKER = lazy(r"^(?P<name>[A-Z][a-z'’]+(?:[ .-][A-Z][a-z'’]+)?)\s*:\s+\S")
_HEADINGS = frozenset(
    """update summary context background reminder warning caution edit ps status result
    answer example examples task issue problem bug fix plan idea tip hint info request
    feedback review comment comments change changes steps step option options pros cons
    output input expected actual query prompt instructions instruction format tone style
    audience topic title role also btw ok okay yes no here now why how what because reason
    source sources link links name description details notes warning update edit
    alternatively meanwhile finally first second third then again objective constraints
    requirements assumptions scope context motivation""".split()
)
_SENTENCE_END = lazy(r"(?:(?<=[.!?])|(?<=[.!?][\"”’']))\s+(?=[^a-z\s])|(?<=[。！？；;])\s*")
# People typing to an agent often write in lower case ("ok. let's use apple container
# instead. you can run 'container' to see the help."): there a sentence may start with a
# lower-case letter too, unless what ended was an abbreviation ("e.g. the", "vs. main");
# and an emoji often ends one ("… in the plan 😅 Did we …").
_AGENT_SENTENCE_END = lazy(
    r"(?:(?<=[.!?])|(?<=[.!?][\"”’']))(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\betc\.)(?<!\bvs\.)"
    r"(?<!\bcf\.)(?<!\bno\.)\s+(?=[^\s])|(?<=[。！？；;])\s*"
    r"|(?<=[\U0001F300-\U0001FAFF\u2600-\u27BF])\s+(?=[A-Z])"
)


# What every split point of both patterns above needs: a sentence's end mark before
# blank space, a CJK end mark, or an emoji before blank space. Led by one character
# class, it is scanned for far faster than the splits' lookbehinds are tried at every
# position, and most lines of an import hold none (tests/test_cues.py checks that a
# line it passes over splits into itself).
_MAY_END = lazy(
    r"[.!?。！？；;\U0001F300-\U0001FAFF\u2600-\u27BF]"
    r"(?:(?<=[.!?])[\"”’']?\s|(?<=[。！？；;])|(?<=[\U0001F300-\U0001FAFF\u2600-\u27BF])\s)"
)
# The ASCII characters of its class: an ASCII line holding none of them is not scanned.
_ASCII_ENDS = ".!?;"


def _may_end(line: str) -> bool:
    """Whether ``line`` may hold a split point (False: it splits into itself)."""
    if line.isascii() and not any(map(line.__contains__, _ASCII_ENDS)):
        return False
    return _MAY_END.search(line) is not None


class Sentence(Struct, frozen=True):
    text: str
    # A label that stood alone on the line above a bullet list ("Decisions:").
    header: Rule | None = None
    # Pasted material: past the first INLINE_REACH characters of a message, or after a
    # line that hands material over. Only labels count there.
    deep: bool = False


def _header_rule(line: str) -> Rule | None:
    if not line.endswith((":", "：")):
        return None
    for rule in KIND_RULES:
        if not rule.strip:
            continue
        match = rule.pattern.match(line)
        if match and not line[match.end() :].strip():
            return rule
    return None


def split_sentences(text: str, *, agent: bool = False) -> list[Sentence]:
    """Sentences a person wrote: code fences, quoted (``>``) lines and blank lines out;
    ``agent``: written to an agent, where a sentence may start in lower case."""
    ends = _AGENT_SENTENCE_END if agent else _SENTENCE_END
    out: list[Sentence] = []
    in_fence = False
    header: Rule | None = None
    offset = 0
    lines = normalize_text(text).split("\n")
    skipped = _hard_wrapped(lines) | _letter(lines)
    pasted = False
    for number, line in enumerate(lines):
        deep = pasted or offset >= INLINE_REACH
        offset += len(line) + 1
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        stripped = line.strip()
        if not in_fence and _MAIL_START.match(stripped):
            break
        bullet = _BULLET.match(stripped)
        if (
            in_fence
            or not stripped
            or stripped.startswith(">")
            or number in skipped
            or _not_said(line, bullet)
        ):
            header = None
            continue
        pasted = pasted or _introduces(stripped)
        body = stripped[bullet.end() :] if bullet else stripped
        if body.startswith(("*", "_")):  # what the label pattern needs at its start
            body = _BOLD_LABEL.sub(r"\1 ", body)
        alone = _header_rule(body)
        if alone is not None:
            header = alone
            continue
        if not bullet:
            header = None
        quoted = False
        for piece in ends.split(body) if _may_end(body) else (body,):
            # A sentence that starts inside a quotation is someone else's words.
            inside, quoted = quoted, quoted ^ (sum(map(piece.count, _QUOTE_MARKS)) % 2 == 1)
            piece = piece.strip()
            if piece and not inside:
                sentence = piece[:MAX_SENTENCE_CHARS]
                out.append(Sentence(sentence, header if bullet else None, deep))
    return out


# A line that hands over material ("This is an information about X. Reply
# "acknowledged" if you understand:", "Does this doc page help?"): what follows is
# pasted, and only labels count in it. Rules announced this way ("the following
# rules:") are the person's own.
_INTRODUCES = lazy(
    r"\b(?:doc|docs|documentation|page|article|information|info|text|content|document|"
    r"e-?mail|transcript|essay|post|paper|abstract|excerpt|passage|snippet|output|log|"
    r"report|contract|clause|policy|manual|readme|the\s+following|below)\b[^:?：？]*[:?：？]$",
    re.IGNORECASE,
)
_RULES_AHEAD = lazy(
    r"\b(?:rules?|requirements?|constraints?|instructions?|guidelines?)\b", re.IGNORECASE
)
# A letter: from a greeting line ("Dear Anna,") to a formal sign-off ("Best regards,").
_GREETING = lazy(r"^(?:Dear|Hi|Hello)\b[^,:\n]{0,40},$")
_SIGN_OFF = lazy(
    r"^(?:(?:best|kind|warm|warmest)\s+regards|regards|sincerely|yours\s+(?:truly|sincerely)|"
    r"best\s+wishes)\b[,.!]?$",
    re.IGNORECASE,
)
_QUOTE_MARKS = ('"', "“", "”")
_WRAP_END = lazy(r"[\w,\-–—]")


def _hard_wrapped(lines: list[str]) -> set[int]:
    """Lines of hard-wrapped prose: a long line that stops mid-sentence and the line
    that carries on in lower case. People typing to an agent do not wrap their lines;
    text copied from a form, a PDF, a contract or a paper does."""
    out: set[int] = set()
    for number, (line, after) in enumerate(pairwise(lines)):
        last = line.rstrip()[-1:]
        if len(line.strip()) >= 40 and last and _WRAP_END.match(last) and after[:1].islower():
            out.update((number, number + 1))
    return out


def _introduces(line: str) -> bool:
    """Whether ``line`` hands over material (checked on the few lines ending in : or ?)."""
    return (
        line.endswith((":", "?", "：", "？"))
        and _INTRODUCES.search(line) is not None
        and _RULES_AHEAD.search(line) is None
    )


def _letter(lines: list[str]) -> set[int]:
    """Lines of a letter the person pasted or drafted: the body above a formal sign-off,
    from its greeting, or from the top of the message when it has none."""
    ends = [n for n, line in enumerate(lines) if _SIGN_OFF.match(line.strip())]
    if not ends:
        return set()
    greetings = [n for n, line in enumerate(lines[: ends[0]]) if _GREETING.match(line.strip())]
    return set(range(greetings[0] if greetings else 0, ends[-1] + 1))


def _not_said(line: str, bullet: re.Match[str] | None) -> bool:
    """A line that is pasted or reported rather than said: indented code, a log or
    stack-trace line, a mail header, or a speaker's line in a chat log."""
    stripped = line.strip()
    # Prose starts at the margin; an indented line that is no bullet is code or output.
    if not bullet and line.startswith(("  ", "\t")):
        return True
    if _LOG_LINE.match(stripped) or _MAIL_HEADER.match(stripped):
        return True
    speaker = _SPEAKER.match(stripped)
    if speaker is None or speaker.group("name").lower() in _HEADINGS or is_label(stripped):
        return False
    return kv_colon(stripped) is None


def mask_code(text: str) -> str:
    """Inline code keeps its length but can no longer hold a cue word."""
    return _INLINE_CODE.sub(lambda m: "`" + "_" * (len(m.group(0)) - 2) + "`", text)
