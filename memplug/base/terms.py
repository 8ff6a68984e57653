"""The terms of a query, as every layer sees them: what must occur, not how an index
finds it.

:func:`memplug.recall.query.parse_query` makes them from text; the store turns them into its
own query language (for SQLite, FTS5 MATCH strings and padded phrases:
:mod:`memplug.store.fts`), and retrieval scores texts by them.
"""

from __future__ import annotations

from typing import Literal

from msgspec import Struct

TermKind = Literal["phrase", "symbol", "word", "cjk"]


class Term(Struct, frozen=True):
    """One needle. ``text`` is what must occur (lower case) for the term to match."""

    text: str
    kind: TermKind
    # How the query spelled it (lower case): the word before stemming, the whole run.
    origin: str
    # A numeric or versioned symbol: a candidate containing it verbatim ranks above
    # every candidate that does not. Never true for a lone digit.
    pin: bool = False
    stop: bool = False
    # A CJK window of a longer run: scores coverage, retrieves only as a fallback.
    window: bool = False
    # Terms with the same group are alternatives for one thing the query said;
    # ``match="all"`` requires one term of every group.
    group: int = 0

    @property
    def length(self) -> int:
        return len(self.text)

    @property
    def short_word(self) -> bool:
        """A word (or ASCII symbol) under three characters: it stands only for itself
        as a whole word ("go" is not in "good")."""
        return len(self.text) < 3 and (
            self.kind == "word" or (self.kind == "symbol" and self.text.isascii())
        )


class QuerySignals(Struct, frozen=True):
    """Everything :func:`parse_query` found, in a deterministic order."""

    text: str
    terms: tuple[Term, ...]
    # More than MAX_TERMS signals were found (or the text was cut): the rest were dropped.
    capped: bool = False
    mode: str = "literal"

    @property
    def empty(self) -> bool:
        return not self.terms

    @property
    def ranking_terms(self) -> tuple[Term, ...]:
        """Terms that rank and retrieve: stop-words only when nothing else is left."""
        content = tuple(t for t in self.terms if not t.stop)
        return content if content else self.terms

    @property
    def pins(self) -> tuple[Term, ...]:
        return tuple(t for t in self.terms if t.pin)

    @property
    def groups(self) -> tuple[tuple[Term, ...], ...]:
        """Ranking terms grouped by what the query said, in first-appearance order."""
        by_group: dict[int, list[Term]] = {}
        for term in self.ranking_terms:
            by_group.setdefault(term.group, []).append(term)
        return tuple(tuple(terms) for _, terms in sorted(by_group.items()))

    def to_json(self) -> dict[str, object]:
        """The shape assembly logs record as ``query signals``."""
        return {
            "mode": self.mode,
            "capped": self.capped,
            "terms": [
                {"text": t.text, "kind": t.kind, "pin": t.pin, "stop": t.stop}
                for t in self.terms
                if not t.window
            ],
        }
