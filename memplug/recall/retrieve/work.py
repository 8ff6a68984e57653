"""Work records for a step: the ones its query names, else where the session was.

Relevant records are found through the work index (``work_fts``, trigram) with the
query's own terms and ranked by the terms they hold, each weighted by how rare it is
among the records in scope (a word every record holds, such as "file", counts for
little). A record needs two of the query's terms, or one exact symbol or phrase: one
weak word is not relevance. Records below half the best score are dropped — the
section stops where relevance falls off instead of filling its budget.

When nothing is relevant and the session has been compacted, the last few records
before its latest compaction are "where we were": what the agent was doing when the
host summarised the conversation away. Both kinds keep to the session's active path.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from msgspec import Struct

from memplug.base.refs import event_ref
from memplug.base.terms import QuerySignals, Term
from memplug.recall.retrieve.branches import ActivePaths
from memplug.store.records import WorkRow

if TYPE_CHECKING:
    from memplug.store.ports import SearchPort, WorkPort

# A record is kept when its score is at least this share of the best one's.
FALL_OFF = 0.5
# Query terms a record must hold, unless one of them names one thing (symbol, phrase).
MIN_TERMS = 2


class WorkHit(Struct, frozen=True):
    """A work record offered to assembly, with why it was chosen."""

    row: WorkRow
    score: float
    why: str
    # True for a "where we were" record: recent, not matched by the query.
    recent: bool = False

    @property
    def ref(self) -> str:
        return event_ref(self.row.session_id, self.row.seq)

    @property
    def key(self) -> tuple[str, str, str | None, int | None]:
        """What makes two records say the same thing (the same command, the same end)."""
        return (self.row.action, self.row.target, self.row.outcome, self.row.exit_code)


class WorkFound(Struct, frozen=True):
    """A step's work records: the ones its query names, else where the session was;
    and the seq of the session's latest compaction (what came after it is still in a
    host's context)."""

    relevant: tuple[WorkHit, ...] = ()
    recent: tuple[WorkHit, ...] = ()
    compacted_at: int | None = None


class WorkFinder:
    def __init__(
        self, work: WorkPort, search: SearchPort, paths: ActivePaths, per_term: int
    ) -> None:
        self.work = work
        self.search = search
        self.paths = paths
        # Each query term's newest matches read from the index (retrieval.candidateBudget).
        self.per_term = per_term

    def relevant(
        self, signals: QuerySignals, session_ids: Sequence[str] | None, limit: int
    ) -> list[WorkHit]:
        """Records the query's terms name, best first; ties by time, newest first."""
        if limit <= 0:
            return []
        terms = [t for t in signals.ranking_terms if not t.window]
        pool = self._on_path(self.work.match(signals, session_ids, self.per_term))
        if not pool:
            return []
        total = max(self.work.count(session_ids), len(pool))
        held = [(row, _held(row, terms)) for row in pool]
        df = Counter(text for _, found in held for text in {t.text for t in found})
        idf = {t.text: _idf(df[t.text], total) for t in terms}
        scored: list[tuple[float, list[Term], WorkRow]] = []
        for row, found in held:
            if len(found) >= MIN_TERMS or any(_names_one_thing(t) for t in found):
                scored.append((_score(found, idf), found, row))
        if not scored:
            return []
        best = max(s for s, _, _ in scored)
        kept = [entry for entry in scored if entry[0] >= FALL_OFF * best]
        # Newest first, then (a stable sort) best first: equal scores stay newest first.
        kept.sort(key=lambda k: (k[2].event_time or "", k[2].session_id, k[2].seq), reverse=True)
        kept.sort(key=lambda k: -round(k[0], 9))
        # Hits are made as read: hundreds are kept, `limit` distinct ones are returned.
        hits = (
            WorkHit(row, score, "work: " + ", ".join(t.origin for t in found))
            for score, found, row in kept
        )
        return _distinct(hits, limit)

    def recent(self, session_id: str, compacted: int | None, limit: int) -> list[WorkHit]:
        """The last records before the session's compaction at ``compacted``, oldest first."""
        if compacted is None or limit <= 0:
            return []
        rows = self._on_path(self.work.latest(session_id, compacted, limit * 4))
        hits = [WorkHit(row, 0.0, "where we were: before the compaction", True) for row in rows]
        return list(reversed(_distinct(hits, limit)))

    def _on_path(self, rows: Iterable[WorkRow]) -> list[WorkRow]:
        """Rows whose call lies on its session's active path (abandoned branches out)."""
        snap = self.search.snapshot()
        paths: dict[str, frozenset[int] | None] = {}
        kept = []
        for row in rows:
            if row.session_id not in paths:
                paths[row.session_id] = self.paths.seqs(row.session_id, snap)
            seqs = paths[row.session_id]
            if seqs is None or row.seq in seqs:
                kept.append(row)
        return kept


def _idf(df: int, total: int) -> float:
    return math.log(1 + (total - df + 0.5) / (df + 0.5))


def _held(row: WorkRow, terms: Sequence[Term]) -> list[Term]:
    """The query's terms a record holds, in its target or its indexed words."""
    words = f"{row.target.lower()} {row.words}"
    return [term for term in terms if term.text in words]


def _names_one_thing(term: Term) -> bool:
    return term.kind in ("symbol", "phrase")


def _score(held: Sequence[Term], idf: dict[str, float]) -> float:
    """The best idf per query group held, summed."""
    best: dict[int, float] = {}
    for term in held:
        best[term.group] = max(best.get(term.group, 0.0), idf[term.text])
    return sum(best.values())


def _distinct(hits: Iterable[WorkHit], limit: int) -> list[WorkHit]:
    """The first of each group of records that say the same thing, at most ``limit``."""
    seen: set[tuple[str, str, str | None, int | None]] = set()
    out: list[WorkHit] = []
    for hit in hits:
        if len(out) >= limit:
            break
        if hit.key not in seen:
            seen.add(hit.key)
            out.append(hit)
    return out
