"""``search`` pages: one mixed, totally ordered stream of item and event hits, cut into
pages whose ``next`` token pins the snapshot and the hits already handed out."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from memplug.base.call_tokens import encode_token, pack_query
from memplug.base.redaction import clear_cut
from memplug.base.refs import parse_source_refs
from memplug.base.text import short_hash
from memplug.base.vocab import MEMPLUG_SOURCE_KIND
from memplug.recall.query import parse_query
from memplug.recall.retrieve.adjacency import Adjacency
from memplug.recall.retrieve.branches import ActivePaths
from memplug.recall.retrieve.candidates import Collector, Pool
from memplug.recall.retrieve.coverage import coverage, short_terms, stale
from memplug.recall.retrieve.expand import FOLLOW_LEAD, match_window
from memplug.recall.retrieve.models import Hit, SearchPage
from memplug.recall.retrieve.ranking import Ranking
from memplug.recall.retrieve.request import SearchRequest, resolve_scope
from memplug.recall.retrieve.scoring import Scored, Scorer, with_text
from memplug.store.records import EventScope, ItemScope, SearchEvent, Snapshot

if TYPE_CHECKING:
    from memplug.semantic.service import SemanticHits
    from memplug.store.ports import SearchPort

SNIPPET_CHARS = 240
SimilarFn = Callable[[str, EventScope, Snapshot], "SemanticHits | None"]


class Search:
    def __init__(
        self,
        store: SearchPort,
        ranking: Ranking,
        paths: ActivePaths,
        similar: SimilarFn | None = None,
    ) -> None:
        self.store = store
        self.ranking = ranking
        self.paths = paths
        # The semantic provider's nearest events for a text, when one is on.
        self.similar = similar

    def page(
        self,
        request: SearchRequest,
        snap: Snapshot,
        offset: int,
        scope_size: float | None,
        delivered: str | None = None,
    ) -> SearchPage:
        """The page at ``offset``; ``scope_size`` and ``delivered`` (the digest of the
        hits before it) come from a page token, ``None`` on the first page."""
        scored, pool = self._rank(request, snap, scope_size)
        total = len(scored)
        # The hits already handed out must come out the same: otherwise a purge, a
        # retraction or a status change has moved the ranking under the caller, and a
        # silently shifted page would skip or repeat hits.
        if delivered is not None and digest(scored[:offset]) != delivered:
            return SearchPage(
                total=0,
                hits=[],
                next=None,
                coverage=stale(
                    "the events or items this search was ranked from have changed "
                    "(purged, retracted or superseded) since its first page"
                ),
            )
        page = with_text(self.store, scored[offset : offset + request.limit])
        hits = [hit(s, request.branches) for s in page]
        next_token = None
        if offset + request.limit < total:
            end = offset + request.limit
            next_token = encode_token(
                {
                    "op": "search",
                    "a": pack_query(request.args()),
                    "o": end,
                    "n": pool.event_n,
                    "snap": [snap.max_event_id, snap.max_item_rid],
                    "h": digest(scored[:end]),
                }
            )
        return SearchPage(
            total=total,
            offset=offset,
            hits=hits,
            next=next_token,
            coverage=coverage(pool.reasons),
        )

    def _rank(
        self, request: SearchRequest, snap: Snapshot, scope_size: float | None
    ) -> tuple[list[Scored], Pool]:
        """Every hit of the request, in its total order, and the pool they came from."""
        resolved = resolve_scope(self.store, request.scope, request.session)
        event_scope = EventScope(
            session_ids=resolved.session_ids,
            roles=request.roles,
            types=request.types,
            tools=request.tools,
            outcomes=request.outcomes,
            since=request.since,
            until=request.until,
            exclude_source_kinds=(MEMPLUG_SOURCE_KIND,),
        )
        structural = request.structural
        # Memory items have no role, tool or time: a structural filter is about events.
        item_scope = None if structural else ItemScope(session_ids=resolved.session_ids)
        signals = parse_query(request.query, mode=request.mode)
        collector = Collector(self.store, self.ranking, self.paths, event_scope, item_scope, snap)
        pool = collector.collect(
            signals,
            request.match,
            resolved,
            request.branches,
            regex_pattern=request.query if request.mode == "regex" else None,
            scope_size=scope_size,
            # Meaning only makes sense for words: phrase and regex modes stay exact.
            semantic=(
                self.similar(request.query, event_scope, snap)
                if self.similar is not None and request.mode == "literal"
                else None
            ),
        )
        pool.reasons.update(short_terms(signals, pool.members))
        scorer = Scorer(signals, pool, self.ranking, self.store)
        scored = scorer.items() if item_scope is not None else []
        # A structural filter asks for those events, not for what surrounds them.
        spread = request.mode == "literal" and not structural
        adjacency = (
            Adjacency(self.store, self.paths, event_scope, snap, request.branches)
            if spread
            else None
        )
        # Evidence sits next to what matches (the answer after the question), so a
        # neighbour of a strong hit joins the list (`why: near:REF`) — except under
        # `--match all`, whose every hit must hold every term.
        near = request.match != "all"
        scored += scorer.events(adjacency, anchor=resolved.anchor, neighbours_as_hits=near)
        return fold_sources(scored), pool


def hit(scored: Scored, branches: str) -> Hit:
    if scored.event is not None:
        ev = scored.event
        assert isinstance(ev, SearchEvent), "page events are read in full first"
        snippet, cut = _snippet(ev.text or "", scored.needle)
        opens_at = _at_the_match(ev.text or "", scored.needle, ev.type)
        window = {} if opens_at is None else {"co": opens_at, "mc": match_window(ev.type)}
        follow = encode_token(
            {
                "op": "expand",
                "s": ev.session_id,
                "q": ev.seq,
                "h": ev.content_hash[:16],
                "br": branches,
                **window,
            }
        )
        return Hit(
            kind="event",
            session_id=ev.session_id,
            seq=ev.seq,
            score=round(scored.score, 4),
            pinned=scored.pinned,
            why=scored.why,
            snippet=snippet,
            snippet_truncated=cut or bool(ev.truncated),
            follow=follow,
            opens_at=opens_at,
            type=ev.type,
            role=ev.role,
            time=ev.event_time,
            tool_name=ev.tool_name,
            outcome=ev.outcome,
            generated=bool(ev.generated),
            truncated=bool(ev.truncated),
        )
    item = scored.item
    assert item is not None
    snippet, cut = _snippet(item.content, scored.needle)
    return Hit(
        kind="memory",
        session_id=item.session_id,
        id=item.id,
        score=round(scored.score, 4),
        pinned=scored.pinned,
        why=scored.why,
        snippet=snippet,
        snippet_truncated=cut,
        follow=encode_token({"op": "item", "id": item.id}),
        item_kind=item.kind,
        status=item.status,
        evidence_type=item.evidence_type,
        sources=[
            {"session_id": sid, "seq": seq}
            for sid, seq in parse_source_refs(item.source_refs_json, item.session_id)
        ],
    )


def fold_sources(scored: list[Scored]) -> list[Scored]:
    """One ranked list of items and events, sorted, in which an item and the event it
    was extracted from never take two slots: the item takes its best-ranked source
    event's place (and its source events leave the list). The event's rank is what the
    query matched, on the events' scale; an item's own score adds a kind weight of
    about 1.0 that would lift restatements over better evidence. Further items of the
    same event follow every ranked event. Items whose sources are not hits keep their
    own rank."""
    if not any(s.item is not None for s in scored):
        return sorted(scored, key=lambda s: s.key)
    events = {(s.event.session_id, s.event.seq): s for s in scored if s.event is not None}
    taken: set[tuple[str, int]] = set()
    seen: set[tuple[object, ...]] = set()
    out: list[Scored] = []
    for entry in scored:
        item = entry.item
        if item is None:
            continue
        refs = parse_source_refs(item.source_refs_json, item.session_id)
        hits = sorted((events[r] for r in refs if r in events), key=lambda s: s.key)
        if not hits:
            out.append(entry)
            continue
        slot = hits[0]
        # A further item of an event already on the list restates the same evidence:
        # it follows every ranked event rather than take a slot among them.
        band = 2 if slot.key[1:] in seen else slot.key[1]
        seen.add(slot.key[1:])
        taken.update(refs)
        out.append(
            Scored(
                key=(min(entry.key[0], slot.key[0]), band, *slot.key[2:], item.id),
                score=slot.score,
                pinned=entry.pinned or slot.pinned,
                why=entry.why,
                needle=entry.needle,
                item=item,
            )
        )
    out.extend(
        s for s in scored if s.event is not None and (s.event.session_id, s.event.seq) not in taken
    )
    out.sort(key=lambda s: s.key)
    return out


def _at_the_match(text: str, needle: str | None, kind: str) -> int | None:
    """Where a hit opens an event longer than its window (``match_window``): a little
    before the matched words, so that a reader after the answer near a match need not
    read a whole log or a 15,000-character compaction summary. None: read it whole."""
    if len(text) <= match_window(kind):
        return None
    at = text.lower().find(needle) if needle else -1
    return max(0, at - FOLLOW_LEAD)


def _snippet(text: str, needle: str | None) -> tuple[str, bool]:
    """A bounded one-line window around the best needle (or the start)."""
    flat = " ".join(text.split())
    if len(flat) <= SNIPPET_CHARS:
        return flat, False
    at = flat.lower().find(needle) if needle else -1
    start = 0 if at < 0 else max(0, at - SNIPPET_CHARS // 4)
    end = min(len(flat), start + SNIPPET_CHARS)
    start = max(0, end - SNIPPET_CHARS)
    # Not inside a secret: a cut piece of one no longer has the shape that withholds it.
    start, end = clear_cut(flat, start, end)
    body = flat[start:end]
    return ("…" if start else "") + body + ("…" if end < len(flat) else ""), True


def digest(scored: Sequence[Scored]) -> str:
    """A short digest of a ranked prefix: which hits, in which order."""
    keys = [
        f"e{s.event.id}" if s.event is not None else f"m{s.item.id if s.item else ''}"
        for s in scored
    ]
    return short_hash(*keys) if keys else ""
