"""The one active-path walk: which events of a session lie on the branch the host is on.

A host that records a tree (Claude Code's ``uuid``/``parentUuid``) gives each event an
``entry_id`` and its parent's ``parent_id``; rewinds and resumes leave abandoned
branches behind. The rule (docs/claude-code.md, "Links, branches and compaction"):

* Events are taken in seq order — the host's own order, never the order memplug
  stored them in, so two databases agree.
* Sidechain events (a subagent's records inside its parent's transcript) are off the
  main path, unless the whole session is a sidechain: then they are the path.
* The leaf is the last event carrying an entry id. The walk follows ``parent_id``
  links from it; a parent that names no entry is a root and ends the walk. When two
  events carry the same entry id, the later one is the entry.
* A parent already visited is a cycle: the walk stops there and says so.
* An event with no entry id is on the path: nothing says it is off it.
* A tool result is on the path when its call is (Claude Code hangs each result of
  parallel calls off its own call, so all but one are siblings of the path).

The walk imports nothing beyond the standard library: the Claude Code hook runs it.
"""

from __future__ import annotations

from collections.abc import Iterable

from msgspec import Struct


class Link(Struct, frozen=True):
    """What the walk needs of one event."""

    seq: int
    entry_id: str | None = None
    parent_id: str | None = None
    sidechain: bool = False
    type: str | None = None
    call_id: str | None = None


class ActivePath(Struct, frozen=True):
    """The seqs on the active path, ascending, and whether a parent cycle cut the walk.

    ``branched`` is False when no event carried an entry id: then there is one path
    and every event (sidechains aside) is on it."""

    seqs: tuple[int, ...]
    cycle: bool
    branched: bool


def active_path(links: Iterable[Link]) -> ActivePath:
    """The active path through ``links`` (one session's events) by the rule above."""
    ordered = sorted(links, key=lambda link: link.seq)
    main = [link for link in ordered if not link.sidechain] or ordered
    by_entry = {link.entry_id: link for link in main if link.entry_id is not None}
    on_path = {link.seq for link in main if link.entry_id is None}
    leaf = next((link for link in reversed(main) if link.entry_id is not None), None)
    seen: set[str] = set()
    cycle = False
    node = leaf
    while node is not None and node.entry_id is not None:
        if node.entry_id in seen:
            cycle = True
            break
        seen.add(node.entry_id)
        on_path.add(node.seq)
        node = by_entry.get(node.parent_id) if node.parent_id is not None else None
    calls = {
        link.call_id
        for link in main
        if link.seq in on_path and link.type == "tool/call" and link.call_id is not None
    }
    on_path.update(
        link.seq for link in main if link.type == "tool/result" and link.call_id in calls
    )
    return ActivePath(tuple(sorted(on_path)), cycle, leaf is not None)


__all__ = ["ActivePath", "Link", "active_path"]
