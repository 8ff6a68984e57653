"""What a pre-step gets: the kept items and events of a ranking, the source events of
the kept items (so assembly can quote them verbatim), what superseded the superseded,
and every candidate left out with its reason."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from memplug.base.vocab import MEMPLUG_SOURCE_KIND
from memplug.recall.retrieve.models import Omitted, RankedEvent, RankedItem
from memplug.recall.retrieve.ranking import Ranking
from memplug.recall.retrieve.scoring import Scored, with_text
from memplug.store.records import SearchEvent

if TYPE_CHECKING:
    from memplug.store.ports import SearchPort

# How many supersession links are followed from one item.
_SUCCESSOR_HOPS = 8


class Selection:
    """Cuts one ranking to ``limit`` items and ``limit`` events, recording omissions."""

    def __init__(self, store: SearchPort, ranking: Ranking, limit: int) -> None:
        self.store = store
        self.ranking = ranking
        self.limit = limit
        self.omitted: list[Omitted] = []
        self.seen: set[tuple[str, int]] = set()

    def items(self, scored: Sequence[Scored]) -> list[RankedItem]:
        kept: list[RankedItem] = []
        for s in scored:
            assert s.item is not None
            # Only kept items are built in full (source refs and lists parsed): most of
            # the pool is omitted, and an omission needs only the id and the score.
            if s.score < self.ranking.config.min_score and not s.pinned:
                self.omitted.append(Omitted(s.item.id, "below min score", s.score))
            elif len(kept) >= self.limit:
                self.omitted.append(Omitted(s.item.id, "over limit", s.score))
            else:
                kept.append(RankedItem.of(s.item, score=s.score, why=s.why, pinned=s.pinned))
        return kept

    def events(self, scored: list[Scored]) -> list[RankedEvent]:
        evidence: list[RankedEvent] = []
        for s in with_text(self.store, scored, self.limit):
            assert s.event is not None
            ev = s.event
            if s.score < self.ranking.event_min_score and not s.pinned:
                self.omitted.append(Omitted(ev.ref, "below min score", s.score))
            elif len(evidence) >= self.limit:
                self.omitted.append(Omitted(ev.ref, "over limit", s.score))
            else:
                assert isinstance(ev, SearchEvent), "evidence events are read in full first"
                evidence.append(RankedEvent.of(ev, score=s.score, why=s.why, pinned=s.pinned))
                self.seen.add((ev.session_id, ev.seq))
        return evidence

    def sources(self, items: Sequence[RankedItem]) -> list[RankedEvent]:
        """The events behind the kept current items not already in the evidence;
        generated ones (memplug's own text) are omitted, never quoted back."""
        refs = [
            (ref, item.id)
            for item in items
            if item.status in ("active", "disputed")
            for ref in item.source_refs
        ]
        wanted = [ref for ref, _ in refs if ref not in self.seen]
        by_ref = {(e.session_id, e.seq): e for e in self.store.events_by_refs(wanted)}
        out: list[RankedEvent] = []
        for ref, item_id in refs:
            event = by_ref.get(ref)
            if event is None or ref in self.seen:
                continue
            self.seen.add(ref)
            if event.generated or event.source_kind == MEMPLUG_SOURCE_KIND:
                self.omitted.append(Omitted(event.ref, "generated source"))
                continue
            out.append(RankedEvent.of(event, why=f"source:{item_id}"))
        return out


def successors(store: SearchPort, items: Sequence[RankedItem]) -> dict[str, RankedItem]:
    """What each superseded item was superseded by, following the chain a few hops."""
    out: dict[str, RankedItem] = {}
    for item in items:
        target = item.superseded_by
        hops = 0
        while target and hops < _SUCCESSOR_HOPS and target not in out:
            found = store.item_by_id(target)
            if found is None:
                break
            out[target] = RankedItem.of(found, why="successor")
            target = found.superseded_by if found.status == "superseded" else None
            hops += 1
    return out
