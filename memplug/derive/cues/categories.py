"""Choices of one kind: a decision that names a database, a test runner, a package manager …
is about that kind of thing, so a later decision naming another one of the same kind
replaces it ("let's use PostgreSQL 16 for orders", then "actually switch to MySQL 8").

The kinds and their members are data (``category_table``, versioned), not a model.
A decision gets the subject key ``choice:<kind>`` when it names members of exactly one
kind, ``choice:<kind>@<purpose>`` when it also says what the choice is for. Two such
decisions are about the same choice unless each names a purpose and those differ
("pytest for the backend" and "vitest for the frontend" both stand):
``vocab.choice_keys_agree``, which the core reads across sessions too.
"""

from __future__ import annotations

import re
from functools import cache

from memplug.base.vocab import CHOICE_PREFIX
from memplug.derive.cues.category_table import CATEGORIES, VERSION
from memplug.derive.cues.words import content_words

# "… for the orders service", "… in the frontend": what a choice is for.
_PURPOSE = re.compile(r"\b(?:for|in|on|across)\s+(?:the\s+|our\s+|all\s+)?(.+)$", re.I)


@cache
def _table() -> tuple[dict[str, str], re.Pattern[str]]:
    """Each term's kind, and one pattern matching any term (the longest first, so
    ``django orm`` is not read as ``django``)."""
    kind_of = {term.lower(): kind for kind, terms in CATEGORIES.items() for term in terms}
    alternatives = "|".join(re.escape(t) for t in sorted(kind_of, key=lambda t: (-len(t), t)))
    return kind_of, re.compile(rf"(?<![\w.])(?:{alternatives})(?![\w])", re.I)


def categories_version() -> int:
    return VERSION


def named_terms(text: str) -> list[tuple[str, str]]:
    """Each (kind, term) the text names, in order."""
    kind_of, pattern = _table()
    return [(kind_of[m.group(0).lower()], m.group(0).lower()) for m in pattern.finditer(text)]


def choice_key(text: str) -> str | None:
    """``choice:<kind>[@<purpose>]`` when the text names members of exactly one kind."""
    kinds = {kind for kind, _ in named_terms(text)}
    if len(kinds) != 1:
        return None
    purpose = "+".join(sorted(purpose_words(text)))
    return f"{CHOICE_PREFIX}{kinds.pop()}" + (f"@{purpose}" if purpose else "")


def purpose_words(text: str) -> frozenset[str]:
    """The content words of what a choice is for, without the things chosen."""
    match = _PURPOSE.search(text)
    if match is None:
        return frozenset()
    chosen = {word for _, term in named_terms(text) for word in content_words(term)}
    return content_words(match.group(1)) - chosen - {"instead"}


__all__ = ["categories_version", "choice_key", "named_terms", "purpose_words"]
