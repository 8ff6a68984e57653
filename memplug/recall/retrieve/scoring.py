"""Scoring: memory items in one pass; events in two (a cheap first pass over every
candidate, then the best ``rescore_top`` in full, with neighbour spread and session
aggregation). Every weight is a :class:`~memplug.recall.retrieve.ranking.Ranking` field.

Results come out as :class:`Scored` with a total sort key: pinned first, then the fully
scored, then by score, then by stable identity (never by rowid).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

from msgspec import Struct, field
from msgspec.structs import replace

from memplug.base.terms import QuerySignals, Term
from memplug.recall.retrieve.adjacency import Adjacency
from memplug.recall.retrieve.candidates import AnyEvent, Pool, fill_text
from memplug.recall.retrieve.lexical import (
    Plan,
    TermCounter,
    pin_patterns,
    term_idf,
    whole_word,
    word_boundaries,
)
from memplug.recall.retrieve.ranking import Ranking
from memplug.store.records import LightEvent, SearchItem

if TYPE_CHECKING:
    from memplug.store.ports import SearchPort

# (score before spread, matched spellings, pinned symbols, best needle)
EventBase = tuple[float, list[str], list[str], str | None]
# The reason of an event that matched nothing itself, ranked for its neighbour (REF after it).
NEAR = "near:"


class Scored(Struct):
    key: tuple[Any, ...]
    score: float
    pinned: bool
    why: str
    needle: str | None
    event: AnyEvent | None = None
    item: SearchItem | None = None


class TextMatch(NamedTuple):
    # Normalised lexical score: 1.0 means every term of the query once.
    lexical: float
    # For symbols and phrases found verbatim, pins included (at most three count).
    exact_boost: float
    matched: list[str]
    pinned_by: list[str]
    needle: str | None


class ScoringContext(Struct):
    """What scoring one kind of candidate (items or events) for one query needs, worked
    out once: term counter, IDFs, pins, word boundaries, and whose recency counts."""

    signals: QuerySignals
    pool: Pool
    ranking: Ranking
    store: SearchPort
    counter: TermCounter
    idf: dict[str, float]
    group_idf: list[float]
    pins: list[tuple[str, re.Pattern[str]]]
    boundaries: dict[str, re.Pattern[str]]
    # The query's total IDF: a lexical score of 1.0 means "every term once".
    mass: float
    anchor: str | None = None
    _plan: Plan | None = field(default=None)
    _sat: dict[float, float] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        signals: QuerySignals,
        pool: Pool,
        ranking: Ranking,
        store: SearchPort,
        *,
        items: bool,
        anchor: str | None = None,
    ) -> ScoringContext:
        df, n = (pool.item_df, pool.item_n) if items else (pool.event_df, pool.event_n)
        idf, group_idf = term_idf(signals, df, n, ranking)
        return cls(
            signals=signals,
            pool=pool,
            ranking=ranking,
            store=store,
            counter=TermCounter(signals, ranking.config.prefix_match_weight),
            idf=idf,
            group_idf=group_idf,
            pins=pin_patterns(signals),
            boundaries=word_boundaries(signals),
            mass=sum(group_idf) or 1.0,
            anchor=anchor,
        )

    def semantic(self, event_id: int) -> float:
        """What the semantic provider adds to an event: ``weight x k / (k + rank)`` by
        its rank among the provider's candidates (reciprocal rank: a static model's
        similarities are not calibrated across queries, its order is)."""
        rank = self.pool.semantic_rank.get(event_id)
        if rank is None:
            return 0.0
        k = self.ranking.semantic_rank_k
        return self.ranking.semantic_weight * k / (k + rank)

    def semantic_bonus(self, event: AnyEvent) -> float:
        """:meth:`semantic` weighted like the event's lexical score (role, generated)."""
        bonus = self.semantic(event.id)
        if not bonus:
            return 0.0
        bonus *= self.role_weight(event)
        return bonus * self.ranking.config.generated_factor if event.generated else bonus

    def lexically(self, event_id: int) -> bool:
        """Whether the index (or the regex) found the event, not only the provider."""
        pool = self.pool
        return event_id in pool.regex_counts or any(
            event_id in members for members in pool.members.values()
        )

    def via(self, event_id: int, lexical_why: str | None) -> str:
        """The ``why`` of an event that may also (or only) have come semantically."""
        similarity = self.pool.semantic.get(event_id)
        if similarity is None:
            return lexical_why or "lexical"
        tag = f"semantic:{similarity:.3f}"
        return f"{lexical_why} +{tag}" if lexical_why else tag

    def match(self, text: str, regex_count: int | None, chars: int) -> TextMatch:
        """What the query finds in a candidate's (lower-cased) text; ``regex_count``
        is its match count in regex mode, ``chars`` its stored length."""
        matched: list[str] = []
        exact, needle = 0, None
        if regex_count is not None:
            lexical = self.regex_lexical(regex_count)
        else:
            raw, matched, exact, needle = self.lexical(text, chars)
            lexical = raw / self.mass
        pinned_by = self.pinned_by(text)
        boost = self.ranking.config.exact_match_boost * min(exact + len(pinned_by), 3) / 3
        return TextMatch(lexical, boost, matched, pinned_by, needle)

    def lexical(self, text: str, chars: int) -> tuple[float, list[str], int, str | None]:
        """(raw BM25, matched spellings, exact symbol/phrase hits, best needle), length
        normalised by ``chars``."""
        counts, whole = self.counter.counts(text)
        if not counts:
            return 0.0, [], 0, None
        if self._plan is None:
            self._plan = self.counter.prepare(self.idf, self.group_idf, self.ranking)
        raw = 0.0
        matched: list[str] = []
        exact = 0
        needle: str | None = None
        best_seen = 0.0
        norm = self.ranking.length_norm(chars)
        # Saturation memoised by tf: across texts at the pivot's length factor (all of
        # them when b = 0), else within this text.
        memo = self._sat if norm == 1.0 else {}
        sat = self.ranking.sat
        for entries, bonus in self._plan:
            # A group counts once: its best-scoring term in the text (inlined: this runs
            # for every term group of every candidate).
            best = 0.0
            best_term: Term | None = None
            for term_text, term, term_idf_value, weight in entries:
                tf = counts.get(term_text)
                if not tf:
                    continue
                s = memo.get(tf)
                if s is None:
                    s = memo[tf] = sat(tf, norm)
                value = term_idf_value * s * weight
                if value > best:
                    best, best_term = value, term
            if best_term is None:
                continue
            if best_term.kind == "word" and self._whole(best_term, whole, text):
                best += bonus
            raw += best
            matched.append(best_term.origin if best_term.kind != "cjk" else best_term.text)
            if best_term.kind in ("symbol", "phrase"):
                exact += 1
            if best > best_seen:
                best_seen, needle = best, best_term.text
        return raw, matched, exact, needle

    def _whole(self, term: Term, whole: set[str], text: str) -> bool:
        if self.counter.word_rx is not None and term.text.isascii():
            return term.origin in whole
        return whole_word(self.boundaries, term.origin, text)

    def pinned_by(self, text: str) -> list[str]:
        return [p for p, rx in self.pins if rx.search(text)]

    def last_seq(self, session_id: str) -> int | None:
        pool = self.pool
        if session_id not in pool.last_seq:
            pool.last_seq[session_id] = self.store.last_seq_at(session_id, pool.snap)
        return pool.last_seq[session_id]

    def role_weight(self, event: AnyEvent) -> float:
        weights = self.ranking.config.role_weights
        if event.type.startswith("tool/"):
            return weights["tool"]
        # Text the host wrote into a person's turn (a command's output, a reminder, a
        # notification): no one said it. Weighed as "host" where that role is given.
        if event.generated and event.type == "user/message" and "host" in weights:
            return weights["host"]
        # An event without a role is weighed as the system's.
        return weights[event.role or "system"]

    def regex_lexical(self, count: int) -> float:
        """A regex match's lexical score: its match count saturated like a term's tf."""
        return self.ranking.sat(count) / self.ranking.sat(1)


class Scorer:
    """Scores one pool for one query: items, events, or both (each builds its context
    only when its side of the pool holds candidates)."""

    def __init__(
        self, signals: QuerySignals, pool: Pool, ranking: Ranking, store: SearchPort
    ) -> None:
        self.signals = signals
        self.pool = pool
        self.ranking = ranking
        self.store = store

    def items(self) -> list[Scored]:
        if not self.pool.items:
            return []
        ctx = ScoringContext.build(self.signals, self.pool, self.ranking, self.store, items=True)
        return score_items(ctx)

    def events(
        self,
        adjacency: Adjacency | None,
        *,
        anchor: str | None,
        neighbours_as_hits: bool = True,
    ) -> list[Scored]:
        if not self.pool.events:
            return []
        ctx = ScoringContext.build(
            self.signals, self.pool, self.ranking, self.store, items=False, anchor=anchor
        )
        return score_events(ctx, adjacency, neighbours_as_hits=neighbours_as_hits)


def why(pinned_by: list[str], matched: list[str], *, regex_mode: bool = False) -> str:
    if pinned_by:
        return "exact:" + ",".join(pinned_by[:8])
    if regex_mode:
        return "regex"
    if matched:
        return "word:" + ",".join(matched[:8])
    return "lexical"


# -- items --------------------------------------------------------------------------------


def score_items(ctx: ScoringContext) -> list[Scored]:
    """``(kind weight + lexical + exact boost) x evidence weight``, x the superseded
    factor, plus recency within ``recency_window`` of the item's session's last event."""
    pool, ranking = ctx.pool, ctx.ranking
    if not pool.items:
        return []
    out = []
    for item in pool.items.values():
        found = ctx.match(
            item.content.lower(), pool.item_regex_counts.get(item.rid), len(item.content)
        )
        pinned_by = found.pinned_by
        score = ranking.config.kind_weights[item.kind] + min(found.lexical, 1.5)
        score += found.exact_boost
        score *= ranking.config.evidence_weights[item.evidence_type]
        if item.status == "superseded":
            score *= ranking.config.superseded_factor
        last = ctx.last_seq(item.session_id)
        if last is not None and last - item.derived_from_seq < ranking.config.recency_window:
            score += ranking.config.recency_boost * (
                1 - max(0, last - item.derived_from_seq) / ranking.config.recency_window
            )
        out.append(
            Scored(
                key=(0 if pinned_by else 1, 0, -round(score, 9), "0", item.id, 0),
                score=score,
                pinned=bool(pinned_by),
                why=why(pinned_by, found.matched, regex_mode=item.rid in pool.item_regex_counts),
                needle=pinned_by[0] if pinned_by else found.needle,
                item=item,
            )
        )
    out.sort(key=lambda s: s.key)
    return out


# -- events -------------------------------------------------------------------------------


def score_events(
    ctx: ScoringContext, adjacency: Adjacency | None = None, *, neighbours_as_hits: bool = True
) -> list[Scored]:
    """Rank events in two passes: every candidate by which terms retrieved it, then
    the best ``rescore_top`` in full (term frequencies, word boundaries, pins checked
    at symbol boundaries, neighbour spread). The rest keep their first-pass order
    below them, so the order is total and the same on every page.

    Without ``adjacency`` nothing spreads: no neighbour bonus, no session aggregation.
    ``neighbours_as_hits`` lets a neighbour that matched nothing in (as ``near:REF``).
    """
    pool, ranking = ctx.pool, ctx.ranking
    if not pool.events:
        return []
    spread = adjacency is not None
    events = dict(pool.events)
    first, first_pinned = first_pass(ctx)
    ordered = _first_order(events, first, first_pinned, ranking, spread=spread)
    full = _FullPass(ctx, events)
    full.score([e.id for e in ordered[: ranking.rescore_top]])
    if adjacency is not None and full.base:
        full.spread(adjacency, neighbours_as_hits=neighbours_as_hits)
    out = full.scored(spread=spread)
    # Below the fully scored ones: the rest, in first-pass order (text read lazily).
    for event in ordered[ranking.rescore_top :]:
        value = first[event.id]
        if value <= 0 and event.id not in first_pinned:
            continue
        pinned = event.id in first_pinned
        lexical = pinned or ctx.lexically(event.id)
        out.append(
            Scored(
                key=(0 if pinned else 1, 1, -round(value, 9), "1", event.session_id, event.seq),
                score=value,
                pinned=pinned,
                why=ctx.via(event.id, "lexical" if lexical else None),
                needle=None,
                event=event,
            )
        )
    out.sort(key=lambda s: s.key)
    return out


def first_pass(ctx: ScoringContext) -> tuple[dict[int, float], set[int]]:
    """A cheap score for every candidate from which terms retrieved it (each once),
    with no text read: it only decides which candidates the full pass scores."""
    pool, ranking = ctx.pool, ctx.ranking
    lexical: dict[int, float] = {}
    exact: dict[int, int] = {}
    pinned: set[int] = set()
    for g_index, group in enumerate(ctx.signals.groups):
        head_len = max(len(t.text) for t in group)
        best: dict[int, float] = {}
        exact_terms = {t.text for t in group if t.kind in ("symbol", "phrase")}
        for term in group:
            members = pool.members.get(term.text)
            if not members:
                continue
            weight = len(term.text) / head_len if term.kind == "cjk" else 1.0
            value = ctx.idf.get(term.text, ctx.group_idf[g_index]) * weight
            for event_id in members:
                if value > best.get(event_id, 0.0):
                    best[event_id] = value
            if term.pin:
                pinned.update(members)
        for event_id, value in best.items():
            lexical[event_id] = lexical.get(event_id, 0.0) + value / ctx.mass
            if exact_terms:
                exact[event_id] = exact.get(event_id, 0) + 1
    scores: dict[int, float] = {}
    for event_id, event in pool.events.items():
        if event_id in pool.regex_counts:
            value = ctx.regex_lexical(pool.regex_counts[event_id])
        else:
            value = lexical.get(event_id, 0.0)
            if value:
                # Each term counted once: BM25's saturation at tf = 1, by length.
                value *= ranking.sat(1, ranking.length_norm(event.text_chars))
                value += ranking.config.exact_match_boost * min(exact.get(event_id, 0), 3) / 3
        value += ctx.semantic(event_id)
        value *= ctx.role_weight(event)
        if event.generated:
            value *= ranking.config.generated_factor
        scores[event_id] = value
    return scores, pinned


def _first_order(
    events: dict[int, AnyEvent],
    first: dict[int, float],
    first_pinned: set[int],
    ranking: Ranking,
    *,
    spread: bool,
) -> list[AnyEvent]:
    """Every candidate in first-pass order (with the session's best added when
    spreading, as the full pass will)."""
    first_best: dict[str, float] = {}
    for event in events.values():
        if first[event.id] > first_best.get(event.session_id, 0.0):
            first_best[event.session_id] = first[event.id]

    def first_key(e: AnyEvent) -> tuple[Any, ...]:
        value = first[e.id] + (
            ranking.config.session_weight * first_best[e.session_id] if spread else 0
        )
        return (0 if e.id in first_pinned else 1, -round(value, 9), e.session_id, e.seq)

    return sorted(events.values(), key=first_key)


def event_base(ctx: ScoringContext, event: AnyEvent) -> EventBase:
    """``(lexical + exact boost) x role weight`` (x the generated factor), plus a share
    of recency for events of the anchor session; before any spread, and without the
    semantic bonus (:meth:`_FullPass.scored` adds that to the event's own score)."""
    ranking = ctx.ranking
    found = ctx.match(
        (event.text or "").lower(), ctx.pool.regex_counts.get(event.id), event.text_chars
    )
    base = found.lexical + found.exact_boost if found.lexical else 0.0
    base *= ctx.role_weight(event)
    if event.generated:
        base *= ranking.config.generated_factor
    anchor = ctx.anchor
    if base and anchor is not None and event.session_id == anchor:
        last = ctx.last_seq(anchor)
        if last is not None and last - event.seq < ranking.config.recency_window:
            share = 1 - max(0, last - event.seq) / ranking.config.recency_window
            base += ranking.config.recency_boost * ranking.config.event_recency_share * share
    return base, found.matched, found.pinned_by, found.needle


class _FullPass:
    """The full (text-reading) pass over the chosen events: base scores and what they
    matched, then the bonus each passes to its neighbours."""

    def __init__(self, ctx: ScoringContext, events: dict[int, AnyEvent]) -> None:
        self.ctx = ctx
        self.events = events
        self.base: dict[int, float] = {}
        self.info: dict[int, tuple[list[str], list[str], str | None]] = {}
        self.bonus: dict[int, float] = {}
        # The semantic provider's bonus, counted in the event's own score only: passed to
        # neighbours or to the session's other events, a guess at meaning spread over
        # whole sessions and pushed down what the words found (LME-S dev r@10 0.865
        # lexical, 0.849 with it spread; docs/semantic.md).
        self.own: dict[int, float] = {}
        # A neighbour that matched nothing itself, and the hit it is near.
        self.near: dict[int, str] = {}

    def score(self, ids: Iterable[int]) -> None:
        ids = list(ids)
        fill_text(self.ctx.store, self.events, ids)
        for event_id in ids:
            value, matched, pinned_by, needle = event_base(self.ctx, self.events[event_id])
            self.base[event_id] = value
            self.info[event_id] = (matched, pinned_by, needle)
            self.bonus[event_id] = 0.0
            self.own[event_id] = self.ctx.semantic_bonus(self.events[event_id])

    def spread(self, adjacency: Adjacency, *, neighbours_as_hits: bool) -> None:
        """The best ``spread_top`` hits pass a share of their score to the next and the
        previous event, and ``far_spread`` of that share to the event one further:
        evidence sits next to what matches."""
        ranking, base = self.ctx.ranking, self.base
        top = sorted(
            (self.events[i] for i in base), key=lambda e: (-base[e.id], e.session_id, e.seq)
        )
        top = [e for e in top[: ranking.spread_top] if base[e.id] > 0]
        adjacent = adjacency.around(top, per_side=2 if ranking.config.far_spread else 1)
        if neighbours_as_hits:
            self._join({n.id: n for pair in adjacent.values() for side in pair for n in side})
        for event in top:
            before, after = adjacent.get(event.id, ((), ()))
            for side, share in (
                (after, ranking.config.next_spread),
                (before, ranking.config.prev_spread),
            ):
                for distance, neighbour in enumerate(side):
                    if neighbour.id not in base:
                        continue
                    # The role prior weighs what a turn receives as well as what it
                    # matched: the reply to a user's line is most often the assistant's.
                    received = share * ranking.config.far_spread**distance * base[event.id]
                    self.bonus[neighbour.id] += received * self.ctx.role_weight(neighbour)
                    if base[neighbour.id] == 0 and neighbour.id not in self.near:
                        self.near[neighbour.id] = event.ref

    def _join(self, neighbours: dict[int, AnyEvent]) -> None:
        """Neighbours that were not scored join as hits of their own."""
        fresh = {i: n for i, n in neighbours.items() if i not in self.base}
        self.events.update(fresh)
        # A neighbour the index did not find holds no term of the query: its text
        # need not be read or matched (a search brings up to 120 of them).
        pooled = self.ctx.pool.events
        self.score(i for i in fresh if i in pooled)
        for event_id in fresh:
            if event_id not in pooled:
                self.base[event_id], self.bonus[event_id], self.own[event_id] = 0.0, 0.0, 0.0
                self.info[event_id] = ([], [], None)

    def _scores(self, *, spread: bool) -> dict[int, float]:
        """Base + bonus (+ the session's best base, when spreading) for each event, then
        its semantic bonus, which lifts it at most to the best lexical score outside the
        anchor session (whose recent lines the host already shows): the provider
        reorders what the words found and brings in what they missed, but never raises
        the best line, which the page's relevance cut is measured from (raising it cut
        lexical evidence off the page: docs/semantic.md)."""
        ranking, events, anchor = self.ctx.ranking, self.events, self.ctx.anchor
        session_best: dict[str, float] = {}
        if spread:
            for event_id, value in self.base.items():
                session = events[event_id].session_id
                if value > session_best.get(session, 0.0):
                    session_best[session] = value
        lexical: dict[int, float] = {}
        ceiling = 0.0
        for event_id, value in self.base.items():
            session = events[event_id].session_id
            value += self.bonus[event_id]
            if spread:
                value += ranking.config.session_weight * session_best.get(session, 0.0)
            lexical[event_id] = value
            if session != anchor:
                ceiling = max(ceiling, value)
        scores = {}
        for event_id, value in lexical.items():
            own = self.own[event_id]
            if ceiling > 0:
                own = min(own, max(0.0, ceiling - value))
            scores[event_id] = value + own
        return scores

    def scored(self, *, spread: bool) -> list[Scored]:
        """Every scored event, with the reason it was found."""
        scores = self._scores(spread=spread)
        out = []
        for event_id, score in scores.items():
            event = self.events[event_id]
            matched, pinned_by, needle = self.info[event_id]
            if score <= 0 and not pinned_by:
                continue
            regex_mode = event_id in self.ctx.pool.regex_counts
            if matched or pinned_by:
                reason = self.ctx.via(event_id, why(pinned_by, matched, regex_mode=regex_mode))
            elif event_id in self.ctx.pool.semantic:
                reason = self.ctx.via(event_id, None)
            elif event_id in self.near:
                reason = f"{NEAR}{self.near[event_id]}"
            else:
                reason = why(pinned_by, matched, regex_mode=regex_mode)
            out.append(
                Scored(
                    key=(
                        0 if pinned_by else 1,
                        0,
                        -round(score, 9),
                        "1",
                        event.session_id,
                        event.seq,
                    ),
                    score=score,
                    pinned=bool(pinned_by),
                    why=reason,
                    needle=pinned_by[0] if pinned_by else needle,
                    event=event,
                )
            )
        return out


def with_text(store: SearchPort, scored: list[Scored], first: int | None = None) -> list[Scored]:
    """``scored`` with the text of its first ``first`` (default all) events read."""
    head = scored if first is None else scored[:first]
    missing = [s.event.id for s in head if s.event is not None and s.event.text is None]
    if not missing:
        return scored
    rows = {row.id: row for row in store.events_by_ids(missing)}
    out = []
    for index, item in enumerate(scored):
        event = item.event
        if (first is None or index < first) and isinstance(event, LightEvent):
            if event.id not in rows:
                continue  # purged since the first pass read it
            item = replace(item, event=rows[event.id])
        out.append(item)
    return out
