"""Coverage reasons (``docs/search.md`` lists them with what each means) and the
:class:`~memplug.recall.retrieve.models.Coverage` a result reports them in."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from memplug.base.terms import QuerySignals
from memplug.recall.query import STOP_WORDS
from memplug.recall.retrieve.models import Coverage, ErrorInfo

CANDIDATE_BUDGET = "candidate_budget"
TERMS_CAPPED = "query_terms_capped"
LIKE_WINDOW = "like_scan_window"
LIKE_CAP = "like_fallback_cap"
TRUNCATED = "truncated_events"
REGEX_TIMEOUT = "regex_timeout"
REGEX_HAYSTACK = "regex_haystack_cap"
PARENT_CYCLE = "parent_cycle"
STALE_POINTER = "stale_pointer"
UNKNOWN_SESSION = "unknown_session"
SHORT_TERMS = "short_terms"

# What to do about each reason: coverage says what a caller can change, not only why.
NEXT_STEPS: dict[str, str] = {
    CANDIDATE_BUDGET: "more matched than was ranked: narrow with --session, --since or rarer words",
    TERMS_CAPPED: "the query was cut: ask with fewer, rarer words",
    LIKE_WINDOW: "short words were scanned in part: add a word of three letters or more",
    LIKE_CAP: "short words were scanned in part: add a word of three letters or more",
    TRUNCATED: "some events were cut at capture: `memory expand REF` reads one whole",
    REGEX_TIMEOUT: "the regex stopped early: anchor it, or narrow with --session",
    REGEX_HAYSTACK: "the regex read texts in part: narrow with --session or --since",
    PARENT_CYCLE: "a session's branch links loop: --branches all reads every event",
    STALE_POINTER: "the token is out of date: search again",
    UNKNOWN_SESSION: "no such session: `memory status` lists them",
    SHORT_TERMS: "one- and two-letter words are not looked up alone: use a longer word",
}

# A letter or digit standing alone (not inside a word, path, version or identifier):
# the query parser keeps no term for it, so nothing looked it up.
_LONE = re.compile(r"(?<![\w./\\:@-])[^\W_](?![\w/\\:@-])")


def coverage(reasons: Iterable[str]) -> Coverage:
    listed = sorted(set(reasons))
    return Coverage(complete=not listed, reasons=listed, next_steps=next_steps(listed))


def next_steps(reasons: Iterable[str]) -> list[str] | None:
    """The distinct steps for ``reasons``, in their order; None when there are none."""
    steps = list(dict.fromkeys(NEXT_STEPS[r] for r in reasons if r in NEXT_STEPS))
    return steps or None


def stale(message: str) -> Coverage:
    return Coverage(
        complete=False,
        reasons=[STALE_POINTER],
        error=ErrorInfo(code=STALE_POINTER, message=message),
        next_steps=next_steps([STALE_POINTER]),
    )


def short_terms(signals: QuerySignals, members: Mapping[str, set[int]]) -> list[str]:
    """``[SHORT_TERMS]`` when the trigram index could not look up everything a literal
    query said, so absence is no proof: a lone letter or digit (no term at all), or a
    two-letter word — found by the index only between a space and a space or
    ``. , ? ! : ;`` — that it found nowhere (at a text's start, or before a bracket or
    a newline, it is missed)."""
    if signals.mode != "literal" or signals.capped:
        return []  # a capped query is already incomplete (and its cut may split a word)
    lone = any(m.group(0).lower() not in STOP_WORDS for m in _LONE.finditer(signals.text))
    # Text that gave no term at all (`a`, `!!`) looked nothing up either.
    lone = lone or (signals.empty and bool(signals.text.strip()))
    unproven = any(term.short_word and not members.get(term.text) for term in signals.ranking_terms)
    return [SHORT_TERMS] if lone or unproven else []
