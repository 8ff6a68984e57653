"""The nearest events before and after each hit: what neighbour spread passes score to."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memplug.recall.retrieve.branches import ActivePaths
from memplug.recall.retrieve.candidates import AnyEvent
from memplug.store.records import EventScope, Neighbours, SearchEvent, Snapshot

if TYPE_CHECKING:
    from memplug.store.ports import SearchPort

# Neighbour spread looks at most this many events away for the previous/next one.
ADJACENT_REACH = 4


class Adjacency:
    """Neighbours within one call's scope, snapshot and branch choice."""

    def __init__(
        self,
        store: SearchPort,
        paths: ActivePaths,
        scope: EventScope,
        snap: Snapshot,
        branches: str,
    ) -> None:
        self.store = store
        self.paths = paths
        self.scope = scope
        self.snap = snap
        self.branches = branches

    def around(self, top: list[AnyEvent], per_side: int = 1) -> dict[int, Neighbours]:
        """The ``per_side`` nearest events before and after each hit (nearest first),
        along the active path when the session branches, else in sequence order."""
        out: dict[int, Neighbours] = {}
        linear: list[AnyEvent] = []
        for session_id in sorted({e.session_id for e in top}):
            members = [e for e in top if e.session_id == session_id]
            path: list[int] = []
            if self.branches == "active":
                path, _ = self.paths.path(session_id, self.snap)
            if not path:
                linear.extend(members)
                continue
            out.update(self._along_path(path, members, per_side))
        if linear:
            found = self.store.adjacent(
                [(e.session_id, e.seq) for e in linear],
                self.scope,
                self.snap,
                ADJACENT_REACH,
                per_side,
            )
            for event in linear:
                out[event.id] = found.get((event.session_id, event.seq), ((), ()))
        return out

    def _along_path(
        self, path: list[int], members: list[AnyEvent], per_side: int
    ) -> dict[int, Neighbours]:
        # Only the stretch of the path around each hit is read: a long session's whole
        # path, text included, cost more than everything else spread does.
        index = {event_id: i for i, event_id in enumerate(path)}
        near = {
            path[j]
            for event in members
            if event.id in index
            for j in range(
                max(0, index[event.id] - ADJACENT_REACH),
                min(len(path), index[event.id] + ADJACENT_REACH + 1),
            )
        }
        rows = {r.id: r for r in self.store.events_by_ids(sorted(near))}
        if len(rows) < len(near):  # purged meanwhile: the stretch reaches further
            rows = {r.id: r for r in self.store.events_by_ids(path)}
        ordered = [rows[i] for i in path if i in rows]
        position = {event.id: i for i, event in enumerate(ordered)}
        out: dict[int, Neighbours] = {}
        for event in members:
            i = position.get(event.id)
            if i is None:
                continue
            # The same reach as the sequence-order lookup: a neighbour is close by.
            before = reversed(ordered[max(0, i - ADJACENT_REACH) : i])
            after = ordered[i + 1 : i + 1 + ADJACENT_REACH]
            out[event.id] = (
                tuple(e for e in before if in_scope(e, self.scope))[:per_side],
                tuple(e for e in after if in_scope(e, self.scope))[:per_side],
            )
        return out


def in_scope(event: SearchEvent, scope: EventScope) -> bool:
    """Python twin of :meth:`EventScope.where`, for rows read without it (time
    filters aside: spread is off whenever a structural filter is given)."""
    if not event.searchable:
        return False
    if scope.session_ids is not None and event.session_id not in scope.session_ids:
        return False
    if scope.roles and event.role not in scope.roles:
        return False
    if scope.types and event.type not in scope.types:
        return False
    if scope.tools and event.tool_name not in scope.tools:
        return False
    if scope.outcomes and event.outcome not in scope.outcomes:
        return False
    if not scope.include_generated and event.generated:
        return False
    return not (event.source_kind and event.source_kind in scope.exclude_source_kinds)
