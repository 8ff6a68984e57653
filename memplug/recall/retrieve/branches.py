"""Branches: the active path of a session whose events carry parent links (walked by
the one rule in :mod:`memplug.base.branches`), cached per session; the candidate pool keeps
to it (:func:`memplug.recall.retrieve.candidates.keep_active_paths`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from memplug.base import branches
from memplug.store.records import BranchRow, Snapshot

if TYPE_CHECKING:
    from memplug.store.ports import SearchPort


def active_path(rows: Sequence[BranchRow]) -> tuple[list[int], bool]:
    """Event ids on the session's active path, ascending, and whether a parent cycle
    cut the walk; empty when no event carries an entry id (then all are on it)."""
    walked = branches.active_path(
        branches.Link(r.seq, r.entry_id, r.parent_id, r.sidechain, r.type, r.call_id) for r in rows
    )
    if not walked.branched:
        return [], walked.cycle
    ids = {r.seq: r.id for r in rows}
    return sorted(ids[seq] for seq in walked.seqs), walked.cycle


class ActivePaths:
    """Active paths per session as of a snapshot, cached by the session's fingerprint
    (its event count and newest id), so a new event invalidates the entry."""

    def __init__(self, store: SearchPort) -> None:
        self.store = store
        self._paths: dict[tuple[str, int, int], tuple[list[int], bool]] = {}
        self._path_seqs: dict[tuple[str, int, int], frozenset[int]] = {}

    def path(self, session_id: str, snap: Snapshot) -> tuple[list[int], bool]:
        """Event ids on the parent-linked path from the session's leaf (root first),
        and whether a parent cycle stopped the walk. Empty when the session carries no
        entry ids: then every event is on the one path."""
        store = self.store
        if not store.has_entry_ids(session_id):
            return [], False
        count, max_id = store.session_fingerprint(session_id, snap)
        key = (session_id, count, max_id)
        cached = self._paths.get(key)
        if cached is not None:
            return cached
        rows = store.branch_rows(session_id, snap)
        path, cycle = active_path(rows)
        if len(self._paths) > 256:
            self._paths.clear()
        self._paths[key] = (path, cycle)
        on_path = set(path)
        self._path_seqs[key] = frozenset(r.seq for r in rows if r.id in on_path)
        return path, cycle

    def seqs(self, session_id: str, snap: Snapshot) -> frozenset[int] | None:
        """Sequence numbers on the session's active path; ``None`` when it has no branches."""
        path, _ = self.path(session_id, snap)
        if not path:
            return None
        count, max_id = self.store.session_fingerprint(session_id, snap)
        return self._path_seqs.get((session_id, count, max_id))
