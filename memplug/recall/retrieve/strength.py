"""How strong each of a query's terms is in scope, and which of them a text holds.

A term group is *weak* when its IDF in scope is under :data:`WEAK_SHARE` of the
strongest IDF among the query's groups that occur in scope at all: "check" beside
"stripe", "caroline" in a conversation where every other turn is Caroline's — by the
query's own term statistics, not a word list. Retrieval measures it once per query
(over the candidates' document frequencies); assembly reads it to judge each line
(:mod:`memplug.recall.assemble.relevance`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from msgspec import Struct

from memplug.base.terms import QuerySignals, Term
from memplug.recall.retrieve.lexical import TermCounter, term_idf
from memplug.recall.retrieve.phrases import GENERIC_WORDS
from memplug.recall.retrieve.ranking import Ranking

# A group under this share of the query's strongest IDF in scope is weak.
WEAK_SHARE = 0.5
# A word names something specific when at most this share of the events in scope (or
# SPECIFIC_MIN_DF of them: in a small scope every word is rare enough) hold it — a
# session's own topic is held by many of its events and still names it; an identifier,
# path or quoted phrase when at most SYMBOL_SHARE do (the repository's own path in
# every command names nothing).
SPECIFIC_SHARE = 0.25
SYMBOL_SHARE = 0.5
SPECIFIC_MIN_DF = 20


class Found(Struct, frozen=True):
    """The query's term groups found in one text, by their first spelling."""

    strong: tuple[str, ...] = ()
    weak: tuple[str, ...] = ()
    # The share of the query's IDF (over groups that occur in scope) these groups hold.
    weight: float = 0.0
    # The groups among them that name something specific (identifier, path, rare word).
    specific: tuple[str, ...] = ()

    @property
    def enough(self) -> bool:
        """One strong term, or more than one weak term."""
        return bool(self.strong) or len(self.weak) > 1

    def holds(self, min_share: float) -> bool:
        """Enough terms, together at least ``min_share`` of the query's weight."""
        return self.enough and self.weight >= min_share

    def names(self) -> str:
        parts = [*self.strong, *(f"{w} (weak)" for w in self.weak)]
        return ", ".join(parts) if parts else "no query term"


class QueryTerms:
    """One query's term groups with their strength in scope; :meth:`found` reads a text."""

    def __init__(
        self,
        signals: QuerySignals,
        event_df: Mapping[str, float],
        event_n: float,
        ranking: Ranking,
    ) -> None:
        groups = signals.groups
        _, group_idf = term_idf(signals, event_df, event_n, ranking)
        occurs = [any(event_df.get(t.text, 0.0) > 0 for t in group) for group in groups]
        top = max((v for v, seen in zip(group_idf, occurs, strict=True) if seen), default=0.0)
        self._counter = TermCounter(signals)
        self._group_of = {t.text: i for i, group in enumerate(groups) for t in group}
        self._names = [group[0].origin or group[0].text for group in groups]
        self._weak = [v < WEAK_SHARE * top for v in group_idf]
        # A group that occurs nowhere in scope weighs nothing (nor counts in the mass).
        self._idf = [v if seen else 0.0 for v, seen in zip(group_idf, occurs, strict=True)]
        self._mass = sum(v for v, seen in zip(group_idf, occurs, strict=True) if seen) or 1.0
        self.in_scope = sum(occurs)
        rare = (
            max(SPECIFIC_MIN_DF, SPECIFIC_SHARE * event_n),
            max(SPECIFIC_MIN_DF, SYMBOL_SHARE * event_n),
        )
        self._specific = [
            seen and _specific(group, event_df, rare)
            for group, seen in zip(groups, occurs, strict=True)
        ]
        self._cache: dict[str, Found] = {}

    def found(self, text: str) -> Found:
        hit = self._cache.get(text)
        if hit is None:
            hit = self._cache[text] = self._found(text)
        return hit

    def _found(self, text: str) -> Found:
        counts, _ = self._counter.counts(text.lower())
        groups = sorted({self._group_of[t] for t in counts if t in self._group_of})
        return Found(
            tuple(self._names[g] for g in groups if not self._weak[g]),
            tuple(self._names[g] for g in groups if self._weak[g]),
            sum(self._idf[g] for g in groups) / self._mass,
            tuple(self._names[g] for g in groups if self._specific[g]),
        )

    @property
    def specific_groups(self) -> int:
        """How many of the query's term groups name something specific in scope."""
        return sum(self._specific)

    @property
    def specific(self) -> bool:
        """The query names something specific that occurs in scope: without it (a
        "continue", a "yes, do it") no line is relevant to it by its words."""
        return any(self._specific)

    def weak_terms(self) -> list[str]:
        """The query's weak groups, for the log."""
        return [name for name, weak in zip(self._names, self._weak, strict=True) if weak]


def _specific(group: Sequence[Term], df: Mapping[str, float], rare: tuple[float, float]) -> bool:
    """A rare word, or a not too common identifier, path or phrase; never a generic
    request word."""
    for term in group:
        if term.stop or term.origin in GENERIC_WORDS or term.text in GENERIC_WORDS:
            continue
        named = term.kind in ("symbol", "phrase")
        if df.get(term.text, 0.0) <= rare[named]:
            return True
    return False
