"""FTS5 query building that cannot be injected: the SQLite side of a query's terms.

:func:`build_match` turns the terms of :func:`memplug.recall.query.parse_query` into a
:class:`MatchPlan` whose MATCH strings are always syntactically valid FTS5 — every
term is one double-quoted string with its quotes doubled, so no operator, column
filter or prefix star in user text ever reaches the FTS5 parser as syntax. Services
get a plan through ``SearchPort.match_plan`` and hand its expressions back unread.
"""

from __future__ import annotations

from typing import Literal

from msgspec import Struct

from memplug.base.terms import QuerySignals, Term

# Where the store looks a term up. The trigram index cannot serve a needle under three
# characters (MATCH silently returns nothing): a short word becomes a space-padded
# phrase (" go "), which the index does serve; a two-character CJK term goes to the
# bounded LIKE path.
Route = Literal["fts", "padded", "like"]


def route(term: Term) -> Route:
    """The trigram index, the index through padding, or a bounded LIKE."""
    if len(term.text) >= 3:
        return "fts"
    return "padded" if term.short_word else "like"


def fts_quote(needle: str) -> str:
    """One FTS5 string: double quotes around it, embedded double quotes doubled.

    Inside a string FTS5 recognises no operator, column filter or ``*``: this is the
    whole defence against injection, so it is applied to every needle, always.
    (``apsw.fts5query.quote`` leaves bare words unquoted, which would let ``AND``
    or ``NEAR`` through as operators.) NUL ends an FTS5 string early, so it is removed.
    """
    return '"' + needle.replace("\x00", "").replace('"', '""') + '"'


# Where a two-letter word ends in running text; each variant is a two-trigram phrase.
_PADDED_ENDINGS = (" ", ".", ",", "?", "!", ":", ";")


def bridge_trigrams(needle: str, most: int = 3) -> list[str]:
    """Trigrams centred on punctuation between two word characters (``t/t`` in
    ``budget/tenant``): they join two words, so they are far rarer than the trigrams
    inside either word."""
    found: list[str] = []
    for i in range(1, len(needle) - 1):
        if needle[i].isalnum() or needle[i].isspace():
            continue
        if needle[i - 1].isalnum() and needle[i + 1].isalnum():
            tri = needle[i - 1 : i + 2]
            if tri not in found:
                found.append(tri)
    # Spread the picks over the needle: its start, its end, then the middle.
    if len(found) > most:
        found = [found[0], found[-1], found[len(found) // 2]][:most]
    return found


def needs_verification(term: Term) -> bool:
    """Whether :func:`term_expression` only narrows candidates for ``term``."""
    return (
        route(term) == "fts"
        and term.kind in ("symbol", "phrase")
        and len(term.text) >= 8
        and bool(bridge_trigrams(term.text))
    )


def term_expression(term: Term) -> str | None:
    """The MATCH expression that finds ``term`` through the trigram index, if any.

    A long symbol or phrase with punctuation is looked up by an AND of its bridge
    trigrams: a phrase of twenty trigrams walks every one of their position lists
    (20 ms over 100k events for ``src/budget/tenant.py``), the AND of three rare ones
    takes 0.1 ms. The candidates it returns are a superset, checked against the
    whole needle afterwards (:func:`needs_verification`).
    """
    way = route(term)
    if needs_verification(term):
        return " AND ".join(fts_quote(t) for t in bridge_trigrams(term.text))
    if way == "fts":
        return fts_quote(term.text)
    if way == "padded":
        return " OR ".join(fts_quote(f" {term.text}{end}") for end in _PADDED_ENDINGS)
    return None


def selectivity_key(term: Term) -> tuple[int, int]:
    """Sort key for "most selective first", from the term alone (no statistics).

    Pinned symbols and phrases name one thing; other symbols are nearly as rare;
    among words and CJK needles a longer needle is a rarer one.
    """
    if term.pin:
        rank = 0
    elif term.kind == "phrase":
        rank = 1
    elif term.kind == "symbol":
        rank = 2
    elif term.stop:
        rank = 5
    elif term.window:
        rank = 4
    else:
        rank = 3
    return (rank, -len(term.text))


class MatchPlan(Struct, frozen=True):
    """How the store retrieves candidates for a set of terms.

    ``fts`` pairs each index-served term with its MATCH expression, most selective
    first; ``scanned`` lists the terms that only a bounded ``LIKE`` scan can find. An
    empty plan means the query had no usable term: the authoritative answer is
    "nothing", and no SQL needs to run. Above the store only the terms are read
    (``indexed``, ``scanned``): expressions and patterns are this backend's business.
    """

    fts: tuple[tuple[Term, str], ...]
    scanned: tuple[Term, ...]
    match: str = "any"

    @property
    def empty(self) -> bool:
        return not self.fts and not self.scanned

    @property
    def indexed(self) -> tuple[Term, ...]:
        """The terms the index serves, most selective first."""
        return tuple(term for term, _ in self.fts)

    def expression(self, term: Term) -> str:
        """The MATCH expression of one of :attr:`indexed`."""
        return next(expr for indexed, expr in self.fts if indexed == term)

    def any_expression(self) -> str | None:
        """One MATCH string OR-ing every index-served term, or ``None``."""
        if not self.fts:
            return None
        return " OR ".join(f"({expr})" if " OR " in expr else expr for _, expr in self.fts)

    def group_expressions(self) -> dict[int, str]:
        """Per group, the OR of its index-served terms (for ``match="all"``)."""
        by_group: dict[int, list[str]] = {}
        for term, expr in self.fts:
            by_group.setdefault(term.group, []).append(f"({expr})" if " OR " in expr else expr)
        return {group: " OR ".join(exprs) for group, exprs in sorted(by_group.items())}

    def all_expression(self) -> str | None:
        """AND of one parenthesised OR per group that the index can serve."""
        groups = self.group_expressions()
        if not groups:
            return None
        return " AND ".join(f"({expr})" for expr in groups.values())

    def contains(self, term: Term) -> str | None:
        """The ``LIKE`` pattern that checks a candidate of ``term`` when its expression
        only narrows them (:func:`needs_verification`), else None."""
        return like_pattern(term.text) if needs_verification(term) else None

    def scan_patterns(self) -> list[str]:
        """One ``LIKE`` pattern per term that only the bounded scan can find."""
        return [like_pattern(term.text) for term in self.scanned]


def build_match(
    signals: QuerySignals, *, match: str = "any", include_windows: bool = True
) -> MatchPlan:
    """Route each ranking term to the trigram index or the ``LIKE`` path.

    CJK windows of a longer run are left out of retrieval when a longer needle of the
    same run can use the index (every window of 4 or more characters contains a
    3-character one, so the 3-windows already find what the longer ones would);
    ``include_windows=False`` drops them entirely.
    """
    terms = signals.ranking_terms
    fts: list[tuple[Term, str]] = []
    like: list[Term] = []
    served_groups = {t.group for t in terms if route(t) == "fts" and not t.window}
    for term in sorted(terms, key=selectivity_key):
        if term.window:
            if not include_windows:
                continue
            if len(term.text) > 3 or (route(term) == "like" and term.group in served_groups):
                continue
        expr = term_expression(term)
        if expr is None:
            like.append(term)
        else:
            fts.append((term, expr))
    return MatchPlan(fts=tuple(fts), scanned=tuple(like), match=match)


def like_pattern(needle: str) -> str:
    """A ``LIKE … ESCAPE '\\'`` pattern for a substring, its wildcards escaped."""
    escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"
