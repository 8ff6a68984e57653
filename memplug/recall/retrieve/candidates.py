"""Candidate collection: the pool of events and memory items a query can rank, read
through the search store's index, LIKE and scan reads, with the document frequencies
IDF needs and the coverage reasons for whatever a budget cut."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

from msgspec import Struct, field

from memplug.base.refs import parse_source_refs
from memplug.base.terms import QuerySignals
from memplug.recall.retrieve.branches import ActivePaths
from memplug.recall.retrieve.coverage import (
    CANDIDATE_BUDGET,
    LIKE_CAP,
    LIKE_WINDOW,
    PARENT_CYCLE,
    REGEX_HAYSTACK,
    REGEX_TIMEOUT,
    TERMS_CAPPED,
    TRUNCATED,
)
from memplug.recall.retrieve.lexical import has_all
from memplug.recall.retrieve.ranking import Ranking
from memplug.recall.retrieve.request import Scope, compile_regex
from memplug.store.records import (
    EventScope,
    ItemScope,
    LightEvent,
    SearchEvent,
    SearchItem,
    Snapshot,
    TermMatches,
)

if TYPE_CHECKING:
    import regex

    from memplug.semantic.service import SemanticHits
    from memplug.store.ports import MatchPlan, SearchPort

AnyEvent = SearchEvent | LightEvent


class Pool(Struct):
    events: dict[int, AnyEvent] = field(default_factory=dict)
    items: dict[int, SearchItem] = field(default_factory=dict)
    event_df: dict[str, float] = field(default_factory=dict)
    item_df: dict[str, float] = field(default_factory=dict)
    # The scope's size for IDF: estimated once and carried in page tokens, so that
    # events appended after the first page cannot reweigh the terms of later pages.
    event_n: float = 1.0
    snap: Snapshot = field(default_factory=lambda: Snapshot(0, 0))
    item_n: float = 1.0
    reasons: set[str] = field(default_factory=set)
    # Which events each retrieved term matched (by the index: a substring anywhere).
    members: dict[str, set[int]] = field(default_factory=dict)
    regex_counts: dict[int, int] = field(default_factory=dict)
    item_regex_counts: dict[int, int] = field(default_factory=dict)
    # Filled lazily, as of the snapshot (see ScoringContext.last_seq).
    last_seq: dict[str, int | None] = field(default_factory=dict)
    # The events the semantic provider proposed (when it is on): cosine similarity
    # (shown in `why`) and rank among its candidates (what scoring uses).
    semantic: dict[int, float] = field(default_factory=dict)
    semantic_rank: dict[int, int] = field(default_factory=dict)


class Collector:
    """Collects one call's pool. ``item_scope`` is ``None`` when the call wants events
    only (a structural filter)."""

    def __init__(
        self,
        store: SearchPort,
        ranking: Ranking,
        paths: ActivePaths,
        event_scope: EventScope,
        item_scope: ItemScope | None,
        snap: Snapshot,
    ) -> None:
        self.store = store
        self.ranking = ranking
        self.paths = paths
        self.event_scope = event_scope
        self.item_scope = item_scope
        self.snap = snap

    def collect(
        self,
        signals: QuerySignals,
        match: str,
        resolved: Scope,
        branches: str,
        *,
        regex_pattern: str | None = None,
        scope_size: float | None = None,
        semantic: SemanticHits | None = None,
    ) -> Pool:
        pool = Pool()
        if signals.capped:
            pool.reasons.add(TERMS_CAPPED)
        if scope_size is None:
            scope_size = float(max(1, self.store.scope_stats(resolved.session_ids).events))
        pool.event_n = scope_size
        pool.snap = self.snap
        if regex_pattern is None and signals.empty:
            # Nothing to look for reads nothing: empty and complete, whatever the scope
            # holds (a truncated event cannot hide a match for no term).
            return pool
        if self._truncated(signals, resolved, regex_pattern):
            pool.reasons.add(TRUNCATED)
        if regex_pattern is not None:
            self._regex(regex_pattern, pool)
        elif not signals.empty:
            plan = self.store.match_plan(signals, match=match)
            if match == "all":
                self._all(plan, pool)
            else:
                self._any(plan, pool)
            if plan.scanned:
                self._scanned(plan, pool)
            if match == "all":
                self._keep_all(signals, pool)
        if semantic is not None:
            self._semantic(semantic, pool)
        if branches == "active":
            keep_active_paths(self.paths, pool, self.snap)
        return pool

    def _semantic(self, found: SemanticHits, pool: Pool) -> None:
        """The provider's nearest events join the pool (read light, like index hits)."""
        pool.reasons.update(found.reasons)
        missing = [event_id for event_id, _ in found.hits if event_id not in pool.events]
        pool.events.update(self.store.light_events(missing))
        pool.semantic = {i: sim for i, sim in found.hits if i in pool.events}
        pool.semantic_rank = {i: rank for rank, (i, _) in enumerate(found.hits) if i in pool.events}

    def _truncated(self, signals: QuerySignals, resolved: Scope, regex: str | None) -> bool:
        """Coverage is local: a capped event leaves this result incomplete only when its
        unindexed tail holds a term of this query (a regex could match anything there)."""
        needles = None if regex is not None else [t.text for t in signals.terms]
        return self.store.truncated(resolved.session_ids, needles)

    def _all(self, plan: MatchPlan, pool: Pool) -> None:
        """``--match all``: one look-up over every group, read up to the pool cap."""
        if not plan.indexed:
            return
        pool_cap = self.ranking.config.candidate_budget * self.ranking.pool_factor
        rows = self.store.event_matches_all(plan, self.event_scope, self.snap, pool_cap + 1)
        if len(rows) > pool_cap:
            pool.reasons.add(CANDIDATE_BUDGET)
        ids = set()
        for row in rows[:pool_cap]:
            pool.events[row.id] = row
            ids.add(row.id)
        for term in plan.indexed:
            pool.members[term.text] = ids
        if self.item_scope is not None:
            for item in self.store.item_matches_all(plan, self.item_scope, self.snap, pool_cap):
                pool.items[item.rid] = item

    def _any(self, plan: MatchPlan, pool: Pool) -> None:
        """``--match any``: each term's newest matches, ids first, then each row once."""
        store, snap, ranking = self.store, self.snap, self.ranking
        pool_cap = ranking.config.candidate_budget * ranking.pool_factor
        # Many terms share the pool: each reads fewer of its newest matches, so a long
        # question costs about what a short one does.
        looked_up = max(1, len(plan.indexed))
        budget = ranking.config.candidate_budget
        limit = max(budget // 4, min(budget, pool_cap // looked_up))
        # Ids per term, then each event's light row once (the terms overlap).
        found: dict[int, None] = {}
        for term in plan.indexed:
            if len(found) >= pool_cap:
                pool.reasons.add(CANDIDATE_BUDGET)
                break
            matched = store.event_term_matches(plan, term, self.event_scope, snap, limit)
            pool.event_df[term.text] = _df(matched, pool)
            pool.members.setdefault(term.text, set()).update(matched.handles)
            found.update(dict.fromkeys(matched.handles))
        light = store.light_events(list(found))
        for event_id in found:
            if event_id in light:
                pool.events.setdefault(event_id, light[event_id])
        if self.item_scope is None:
            return
        pool.item_n = float(max(1, store.item_count(self.item_scope, snap)))
        # Rids per term, then each item's row once (the terms overlap).
        order: dict[int, None] = {}
        for term in plan.indexed:
            matched = store.item_term_matches(plan, term, self.item_scope, snap, limit)
            pool.item_df[term.text] = _df(matched, pool)
            order.update(dict.fromkeys(matched.handles))
        wanted = [rid for rid in order if rid not in pool.items]
        item_rows = store.items_by_rids(wanted)
        for rid in wanted:
            if rid in item_rows:
                pool.items[rid] = item_rows[rid]

    def _scanned(self, plan: MatchPlan, pool: Pool) -> None:
        """Terms the index cannot serve: a bounded scan of the newest rows."""
        store, snap, ranking = self.store, self.snap, self.ranking
        result = store.event_scan_matches(
            plan,
            self.event_scope,
            snap,
            ranking.config.like_fallback_cap + 1,
            ranking.like_scan_rows,
        )
        rows = result.rows
        if result.window_cut:
            pool.reasons.add(LIKE_WINDOW)
        if len(rows) > ranking.config.like_fallback_cap:
            pool.reasons.add(LIKE_CAP)
            rows = rows[: ranking.config.like_fallback_cap]
        for term in plan.scanned:
            hits = {r.id for r in rows if term.text in (r.text or "").lower()}
            pool.event_df[term.text] = float(len(hits))
            pool.members.setdefault(term.text, set()).update(hits)
        for row in rows:
            # A row found by both paths keeps the one that carries its text.
            pool.events[row.id] = row
        if self.item_scope is None:
            return
        pool.item_n = float(max(1, store.item_count(self.item_scope, snap)))
        items = store.item_scan_matches(
            plan, self.item_scope, snap, ranking.config.like_fallback_cap
        )
        for term in plan.scanned:
            pool.item_df[term.text] = float(sum(1 for i in items if term.text in i.content.lower()))
        for item in items:
            pool.items.setdefault(item.rid, item)

    def _keep_all(self, signals: QuerySignals, pool: Pool) -> None:
        """``--match all``: keep the candidates whose text holds every group; every
        term then occurs in every candidate, so each gets the pool's size as its df."""
        fill_text(self.store, pool.events)
        pool.events = {
            k: v for k, v in pool.events.items() if has_all(signals, (v.text or "").lower())
        }
        pool.items = {k: v for k, v in pool.items.items() if has_all(signals, v.content.lower())}
        size = float(max(1, len(pool.events)))
        for term in signals.ranking_terms:
            pool.event_df[term.text] = size
            pool.item_df[term.text] = float(max(1, len(pool.items)))

    def _regex(self, pattern_text: str, pool: Pool) -> None:
        """Bounded regex: pattern bytes (checked at request time), haystack characters
        and a wall-clock deadline; a time-out returns what was found so far."""
        ranking = self.ranking
        pattern = compile_regex(pattern_text, ranking.config.regex_max_pattern_bytes)
        deadline = time.monotonic() + ranking.config.regex_timeout_ms / 1000.0
        budget = ranking.config.regex_max_haystack_chars
        max_rows = max(1, ranking.config.candidate_budget * ranking.pool_factor * 10)
        rows = self.store.event_scan(self.event_scope, self.snap, max_rows + 1)
        for scanned, event in enumerate(rows, start=1):
            if scanned > max_rows or budget <= 0:
                pool.reasons.add(REGEX_HAYSTACK)
                break
            haystack = event.text or ""
            budget -= len(haystack)
            found = _count(pattern, haystack, deadline, pool)
            if found is None:
                break
            if found:
                pool.events[event.id] = event
                pool.regex_counts[event.id] = found
        if self.item_scope is None or REGEX_TIMEOUT in pool.reasons:
            return
        for item in self.store.item_scan(self.item_scope, self.snap, max_rows):
            found = _count(pattern, item.content, deadline, pool)
            if found is None:
                return
            if found:
                pool.items[item.rid] = item
                pool.item_regex_counts[item.rid] = found


def _count(pattern: regex.Pattern[str], text: str, deadline: float, pool: Pool) -> int | None:
    """How often ``pattern`` matches in ``text``; ``None`` once the deadline has passed
    (reported as ``regex_timeout``)."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        pool.reasons.add(REGEX_TIMEOUT)
        return None
    try:
        return len(pattern.findall(text, timeout=remaining))
    except TimeoutError:
        pool.reasons.add(REGEX_TIMEOUT)
        return None


def _df(matched: TermMatches, pool: Pool) -> float:
    """A term's document frequency; an estimate is reported as ``candidate_budget``."""
    if matched.estimated:
        pool.reasons.add(CANDIDATE_BUDGET)
    return matched.df


def fill_text(
    store: SearchPort, events: dict[int, AnyEvent], ids: Iterable[int] | None = None
) -> None:
    """Read the text of light rows (all of them, or only ``ids``) in one query."""
    wanted = [i for i in (events if ids is None else ids) if events[i].text is None]
    for row in store.events_by_ids(wanted):
        events[row.id] = row


def keep_active_paths(paths: ActivePaths, pool: Pool, snap: Snapshot) -> None:
    """Keep what lies on each session's active path: events by id, memory items by
    their source events (an item derived only from an abandoned branch is left out)."""
    sessions = sorted(
        {e.session_id for e in pool.events.values()} | {i.session_id for i in pool.items.values()}
    )
    for session_id in sessions:
        path, cycle = paths.path(session_id, snap)
        if cycle:
            pool.reasons.add(PARENT_CYCLE)
        if not path:
            continue
        on_path = set(path)
        pool.events = {
            k: v for k, v in pool.events.items() if v.session_id != session_id or v.id in on_path
        }
        seqs = paths.seqs(session_id, snap) or frozenset()
        kept = {}
        for rid, item in pool.items.items():
            if item.session_id == session_id:
                refs = parse_source_refs(item.source_refs_json, item.session_id)
                local = [seq for sid, seq in refs if sid == session_id]
                if local and not any(seq in seqs for seq in local):
                    continue
            kept[rid] = item
        pool.items = kept
