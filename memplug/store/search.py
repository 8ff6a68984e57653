"""SQL for retrieval: candidates from events_fts / memory_fts / bounded LIKE, branch rows,
neighbours and the reads behind ``expand``.

Everything here is a plain read. Every query is bounded (a ``LIMIT``, an id window or
a row count) and pinned to a :class:`Snapshot`, so a page of results never moves when
events are appended after it was taken. Ranking lives in :mod:`memplug.recall.retrieve`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from memplug.base.terms import QuerySignals, Term
from memplug.store.db import Database
from memplug.store.fts import MatchPlan, build_match
from memplug.store.records import (
    BranchRow,
    EventScope,
    ItemScope,
    LightEvent,
    Neighbours,
    ScanMatches,
    ScopeStats,
    SearchEvent,
    SearchItem,
    Snapshot,
    TermMatches,
)

_EVENT_FIELDS = (
    "id",
    "session_id",
    "seq",
    "type",
    "role",
    "turn",
    "event_time",
    "tool_name",
    "outcome",
    "is_error",
    "source_kind",
    "generated",
    "searchable",
    "truncated",
    "text_chars",
    "content_hash",
    "entry_id",
    "parent_id",
    "project",
    "text",
)
_EVENT_SELECT = ", ".join(f"e.{name}" for name in _EVENT_FIELDS)

_ITEM_FIELDS = (
    "rid",
    "id",
    "session_id",
    "project",
    "kind",
    "content",
    "status",
    "evidence_type",
    "superseded_by",
    "subject_key",
    "source_refs_json",
    "conditions_json",
    "numbers_json",
    "derived_from_seq",
    "content_hash",
    "extractor",
)
_ITEM_SELECT = ", ".join(f"m.{name}" for name in _ITEM_FIELDS)


_LIGHT_SELECT = (
    "e.id, e.session_id, e.seq, e.type, e.role, e.generated, e.source_kind, e.text_chars"
)


def event_scope_where(scope: EventScope, alias: str = "e") -> tuple[str, list[Any]]:
    """The SQL condition of ``scope`` (``AND``-joined, never empty) and its parameters."""
    clauses = [f"{alias}.searchable = 1"]
    params: list[Any] = []

    def one_of(column: str, values: Sequence[Any]) -> None:
        if len(values) == 1:
            clauses.append(f"{alias}.{column} = ?")
        else:
            clauses.append(f"{alias}.{column} IN ({', '.join('?' for _ in values)})")
        params.extend(values)

    if scope.session_ids is not None:
        if not scope.session_ids:
            clauses.append("0")
        else:
            one_of("session_id", scope.session_ids)
    if scope.roles:
        one_of("role", scope.roles)
    if scope.types:
        one_of("type", scope.types)
    if scope.tools:
        one_of("tool_name", scope.tools)
    if scope.outcomes:
        one_of("outcome", scope.outcomes)
    # julianday() compares "…:00Z" and "…:00.5Z" correctly where text would not.
    if scope.since is not None:
        clauses.append(f"julianday({alias}.event_time) >= julianday(?)")
        params.append(scope.since)
    if scope.until is not None:
        clauses.append(f"julianday({alias}.event_time) < julianday(?)")
        params.append(scope.until)
    if not scope.include_generated:
        clauses.append(f"{alias}.generated = 0")
    if scope.exclude_source_kinds:
        marks = ", ".join("?" for _ in scope.exclude_source_kinds)
        clauses.append(f"({alias}.source_kind IS NULL OR {alias}.source_kind NOT IN ({marks}))")
        params.extend(scope.exclude_source_kinds)
    return " AND ".join(clauses), params


def item_scope_where(scope: ItemScope, alias: str = "m") -> tuple[str, list[Any]]:
    marks = ", ".join("?" for _ in scope.statuses) or "NULL"
    clauses = [f"{alias}.status IN ({marks})"]
    params: list[Any] = list(scope.statuses)
    if scope.session_ids is not None:
        if not scope.session_ids:
            clauses.append("0")
        else:
            clauses.append(f"{alias}.session_id IN ({', '.join('?' for _ in scope.session_ids)})")
            params.extend(scope.session_ids)
    return " AND ".join(clauses), params


class SearchStore:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.conn = db.conn

    def match_plan(self, signals: QuerySignals, *, match: str = "any") -> MatchPlan:
        """How this store finds the terms: FTS5 MATCH strings, or a bounded ``LIKE``."""
        return build_match(signals, match=match)

    # -- snapshot and scope ------------------------------------------------------

    def snapshot(self) -> Snapshot:
        row = self.conn.execute(
            "SELECT (SELECT coalesce(max(id), 0) FROM events), "
            "(SELECT coalesce(max(rid), 0) FROM memory_items)"
        ).fetchone()
        return Snapshot(int(row[0]), int(row[1])) if row else Snapshot(0, 0)

    def session_project(self, session_id: str) -> tuple[bool, str | None]:
        """``(exists, project)`` for a session."""
        row = self.conn.execute(
            "SELECT project FROM sessions WHERE session_id = ?", (session_id,)
        ).fetchone()
        if row is None:
            return False, None
        return True, (str(row[0]) if row[0] is not None else None)

    def session_origin(self, session_id: str) -> str | None:
        """What captured a session (``claude-code``, ``codex``, ``import``, …); one
        indexed row, unlike ``EventPort.session``, which counts the session's events."""
        row = self.conn.execute(
            "SELECT origin FROM sessions WHERE session_id = ?", (session_id,)
        ).fetchone()
        return str(row[0]) if row is not None and row[0] is not None else None

    def project_sessions(self, project: str) -> list[str]:
        return [
            str(r[0])
            for r in self.conn.execute(
                "SELECT session_id FROM sessions WHERE project = ? ORDER BY session_id", (project,)
            )
        ]

    def agent_sessions(self, agent: str) -> list[str]:
        """Sessions holding an event the host says ``agent`` made (``agent_id`` in the
        extras; the LIKE skips parsing the rows that name no agent)."""
        rows = self.conn.execute(
            "SELECT DISTINCT session_id FROM events WHERE extra_json LIKE '%\"agent_id\"%'"
            " AND json_valid(extra_json) AND json_extract(extra_json, '$.agent_id') = ?"
            " ORDER BY session_id",
            (agent,),
        )
        return [str(r[0]) for r in rows]

    def scope_stats(self, session_ids: Sequence[str] | None) -> ScopeStats:
        """Sizes from ``checkpoints``: cheap, and the same in every database holding
        the same events (sequence numbers are the host's, not ours)."""
        sql = (
            "SELECT c.session_id, coalesce(c.last_event_seq, 0) FROM checkpoints c "
            "JOIN sessions s USING (session_id)"
        )
        params: list[Any] = []
        if session_ids is not None:
            if not session_ids:
                return ScopeStats(0, 0)
            sql += f" WHERE c.session_id IN ({', '.join('?' for _ in session_ids)})"
            params.extend(session_ids)
        last = {str(sid): int(seq) for sid, seq in self.conn.execute(sql, params)}
        return ScopeStats(
            events=sum(max(1, s) for s in last.values()), sessions=len(last), last_seq=last
        )

    def truncated(
        self, session_ids: Sequence[str] | None, needles: Sequence[str] | None = None
    ) -> bool:
        """Whether an event in scope was capped where the index cannot see: with
        ``needles`` (lower case), one holding a needle in its archived text but not in
        its indexed head (an event the index missed although it would have matched;
        others' tails cannot change the answer); without, any capped event (a regex
        could match anything in a tail). Read from ``archive``, which is small."""
        if session_ids is not None and not session_ids:
            return False
        scoped = (
            f" AND a.session_id IN ({', '.join('?' for _ in session_ids)})"
            if session_ids is not None
            else ""
        )
        if needles is None:
            sql = "SELECT 1 FROM archive a WHERE 1" + scoped
            return (
                self.conn.execute(sql + " LIMIT 1", list(session_ids or ())).fetchone() is not None
            )
        wanted = sorted({n for n in needles if n})
        if not wanted:
            return False
        # CROSS JOIN keeps the archive (capped events only, usually none) as the outer
        # loop, each row finding its event by key: left to the planner, the query walked
        # every in-scope event (140 ms at 100k events).
        rows = self.conn.execute(
            "SELECT CAST(a.text AS BLOB), CAST(e.text AS BLOB) FROM archive a CROSS JOIN events e "
            "ON e.session_id = a.session_id AND e.seq = CAST(substr(a.ref, 5) AS INTEGER) "
            "AND a.ref = 'seq:' || e.seq WHERE 1" + scoped,
            list(session_ids or ()),
        )
        # A needle found in the head is found by the index; only the tail is unseen.
        # Tested here, not with SQL's instr(), which compares at every offset (3 ms for
        # ten needles over seven archived texts): as UTF-8 bytes, whose lower() is
        # SQL's, ASCII only, and which need no decoding.
        encoded = [needle.encode() for needle in wanted]
        for archived, head in rows:
            archived, head = archived.lower(), head.lower()
            if any(needle in archived and needle not in head for needle in encoded):
                return True
        return False

    def last_seq_at(self, session_id: str, snap: Snapshot) -> int | None:
        """The session's last sequence number as of ``snap`` (appends after it do not
        count, so recency is the same on every page of one search)."""
        row = self.conn.execute(
            "SELECT max(seq) FROM events WHERE session_id = ? AND id <= ?",
            (session_id, snap.max_event_id),
        ).fetchone()
        return int(row[0]) if row and row[0] is not None else None

    # -- event candidates ----------------------------------------------------------

    def event_matches_all(
        self, plan: MatchPlan, scope: EventScope, snap: Snapshot, limit: int
    ) -> list[LightEvent]:
        """The most recent ``limit`` in-scope events matching every group of ``plan``
        that the index serves (none when it serves no group).

        Walking the index by descending rowid stops after ``limit`` rows, where ranking
        by ``bm25()`` would have to score every match first (60 ms for a common word
        over 100k events, against 0.6 ms).
        """
        expression = plan.all_expression()
        if expression is None:
            return []
        ids = self._event_ids(expression, None, scope, snap, limit)
        rows = self.light_events(ids)
        return [rows[i] for i in ids]

    def event_term_matches(
        self, plan: MatchPlan, term: Term, scope: EventScope, snap: Snapshot, limit: int
    ) -> TermMatches:
        """The newest in-scope events holding ``term``, one of ``plan.indexed``, and how
        many hold it: the terms of one query overlap, so retrieval reads each row once
        afterwards with :meth:`light_events`."""
        ids = self._event_ids(plan.expression(term), plan.contains(term), scope, snap, limit + 1)
        return _term_matches(ids, limit, snap.max_event_id)

    def _event_ids(
        self,
        expression: str,
        contains: str | None,
        scope: EventScope,
        snap: Snapshot,
        limit: int,
    ) -> list[int]:
        """The expression may only narrow the search; ``contains`` is then the exact
        test (see ``fts.term_expression``)."""
        where, params = event_scope_where(scope)
        return newest_match_ids(
            self.conn, "events_fts", "events e", "e.id", "e.text", expression,
            max_id=snap.max_event_id, where=where, params=params, limit=limit,
            contains=contains,
        )  # fmt: skip

    def light_events(self, ids: Sequence[int]) -> dict[int, LightEvent]:
        rows = rows_by_ids(self.conn, f"SELECT {_LIGHT_SELECT} FROM events e", "e.id", ids)
        return {row[0]: LightEvent(*row) for row in rows}

    def event_scan_matches(
        self,
        plan: MatchPlan,
        scope: EventScope,
        snap: Snapshot,
        limit: int,
        scan_rows: int,
    ) -> ScanMatches:
        """Events whose text contains any of ``plan.scanned``, scanning at most the
        newest ``scan_rows`` event ids (``LIKE`` cannot use the trigram index for needles
        under three characters, so this is a table scan and must be bounded)."""
        needle_patterns = plan.scan_patterns()
        if not needle_patterns:
            return ScanMatches([])
        where, params = event_scope_where(scope)
        low = max(0, snap.max_event_id - scan_rows)
        likes = " OR ".join("e.text LIKE ? ESCAPE '\\'" for _ in needle_patterns)
        sql = (
            f"SELECT {_EVENT_SELECT} FROM events e NOT INDEXED "
            f"WHERE e.id > ? AND e.id <= ? AND {where} AND ({likes}) "
            "ORDER BY e.id DESC LIMIT ?"
        )
        rows = [
            SearchEvent(*row)
            for row in self.conn.execute(
                sql, [low, snap.max_event_id, *params, *needle_patterns, limit]
            )
        ]
        cut = False
        if low > 0:
            older = self.conn.execute(
                f"SELECT 1 FROM events e WHERE e.id <= ? AND {where} LIMIT 1", [low, *params]
            ).fetchone()
            cut = older is not None
        return ScanMatches(rows, cut)

    def event_scan(
        self, scope: EventScope, snap: Snapshot, max_rows: int, before_id: int | None = None
    ) -> Iterator[SearchEvent]:
        """In-scope events newest first (the haystack for regex mode), at most ``max_rows``."""
        where, params = event_scope_where(scope)
        top = snap.max_event_id if before_id is None else min(before_id - 1, snap.max_event_id)
        sql = (
            f"SELECT {_EVENT_SELECT} FROM events e WHERE e.id <= ? AND {where} "
            "ORDER BY e.id DESC LIMIT ?"
        )
        for row in self.conn.execute(sql, [top, *params, max_rows]):
            yield SearchEvent(*row)

    def events_by_ids(self, ids: Sequence[int]) -> list[SearchEvent]:
        if not ids:
            return []
        out: list[SearchEvent] = []
        unique = sorted(set(ids))
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            marks = ", ".join("?" for _ in chunk)
            out.extend(
                SearchEvent(*row)
                for row in self.conn.execute(
                    f"SELECT {_EVENT_SELECT} FROM events e WHERE e.id IN ({marks})", chunk
                )
            )
        return out

    def events_by_refs(self, refs: Sequence[tuple[str, int]]) -> list[SearchEvent]:
        """The events at ``refs`` that exist, in ``(session, seq)`` order (one query per
        200 refs, not one per ref)."""
        found: dict[tuple[str, int], SearchEvent] = {}
        for row in rows_by_refs(self.conn, _EVENT_SELECT, refs):
            event = SearchEvent(*row)
            found[(event.session_id, event.seq)] = event
        return [found[ref] for ref in sorted(set(refs)) if ref in found]

    def neighbours(
        self,
        session_id: str,
        seq: int,
        scope: EventScope,
        snap: Snapshot,
        *,
        before: int,
        after: int,
    ) -> tuple[list[SearchEvent], list[SearchEvent]]:
        """In-scope events just before and just after ``seq`` in the session's own order."""
        where, params = event_scope_where(scope)
        earlier: list[SearchEvent] = []
        later: list[SearchEvent] = []
        if before > 0:
            earlier = [
                SearchEvent(*row)
                for row in self.conn.execute(
                    f"SELECT {_EVENT_SELECT} FROM events e WHERE e.session_id = ? AND e.seq < ? "
                    f"AND e.id <= ? AND {where} ORDER BY e.seq DESC LIMIT ?",
                    [session_id, seq, snap.max_event_id, *params, before],
                )
            ]
            earlier.reverse()
        if after > 0:
            later = [
                SearchEvent(*row)
                for row in self.conn.execute(
                    f"SELECT {_EVENT_SELECT} FROM events e WHERE e.session_id = ? AND e.seq > ? "
                    f"AND e.id <= ? AND {where} ORDER BY e.seq LIMIT ?",
                    [session_id, seq, snap.max_event_id, *params, after],
                )
            ]
        return earlier, later

    def adjacent(
        self,
        refs: Sequence[tuple[str, int]],
        scope: EventScope,
        snap: Snapshot,
        reach: int = 4,
        per_side: int = 1,
    ) -> dict[tuple[str, int], Neighbours]:
        """For each ``(session, seq)``: the ``per_side`` nearest in-scope events before
        and after it (nearest first), looking at most ``reach`` sequence numbers away
        (one query for all refs). Light rows: the caller reads the text of the few it
        keeps."""
        found: dict[tuple[str, int], tuple[list[LightEvent], list[LightEvent]]] = {
            ref: ([], []) for ref in refs
        }
        if not refs:
            return {}
        where, params = event_scope_where(scope)
        unique = sorted(set(refs))
        for start in range(0, len(unique), 200):
            chunk = unique[start : start + 200]
            values = ", ".join("(?, ?)" for _ in chunk)
            flat: list[Any] = [x for ref in chunk for x in ref]
            rows = self.conn.execute(
                f"WITH v(sid, sq) AS (VALUES {values}) "
                f"SELECT v.sid, v.sq, {_LIGHT_SELECT} FROM v JOIN events e "
                "ON e.session_id = v.sid AND e.seq BETWEEN v.sq - ? AND v.sq + ? "
                f"WHERE e.seq != v.sq AND e.id <= ? AND {where}",
                [*flat, reach, reach, snap.max_event_id, *params],
            )
            for row in rows:
                key = (str(row[0]), int(row[1]))
                event = LightEvent(*row[2:])
                found[key][0 if event.seq < key[1] else 1].append(event)
        return {
            ref: (
                tuple(sorted(before, key=lambda e: -e.seq)[:per_side]),
                tuple(sorted(after, key=lambda e: e.seq)[:per_side]),
            )
            for ref, (before, after) in found.items()
        }

    # -- branches -----------------------------------------------------------------

    def has_entry_ids(self, session_id: str) -> bool:
        row = self.conn.execute(
            "SELECT 1 FROM events WHERE session_id = ? AND entry_id IS NOT NULL LIMIT 1",
            (session_id,),
        ).fetchone()
        return row is not None

    def branch_rows(self, session_id: str, snap: Snapshot) -> list[BranchRow]:
        rows = self.conn.execute(
            # instr first: most events carry no such flag, and it spares the JSON parse.
            "SELECT id, seq, entry_id, parent_id, CASE WHEN instr(extra_json, 'is_sidechain') "
            "THEN coalesce(json_extract(extra_json, '$.is_sidechain'), 0) = 1 ELSE 0 END, "
            "type, call_id FROM events WHERE session_id = ? AND id <= ? ORDER BY seq",
            (session_id, snap.max_event_id),
        )
        return [BranchRow(int(r[0]), int(r[1]), r[2], r[3], bool(r[4]), *r[5:]) for r in rows]

    def session_fingerprint(self, session_id: str, snap: Snapshot) -> tuple[int, int]:
        row = self.conn.execute(
            "SELECT count(*), coalesce(max(id), 0) FROM events WHERE session_id = ? AND id <= ?",
            (session_id, snap.max_event_id),
        ).fetchone()
        return (int(row[0]), int(row[1])) if row else (0, 0)

    # -- memory items ---------------------------------------------------------------

    def item_matches_all(
        self, plan: MatchPlan, scope: ItemScope, snap: Snapshot, limit: int
    ) -> list[SearchItem]:
        """:meth:`event_matches_all` for memory items."""
        expression = plan.all_expression()
        if expression is None:
            return []
        rids = self._item_rids(expression, None, scope, snap, limit)
        rows = self.items_by_rids(rids)
        return [rows[r] for r in rids]

    def item_term_matches(
        self, plan: MatchPlan, term: Term, scope: ItemScope, snap: Snapshot, limit: int
    ) -> TermMatches:
        """:meth:`event_term_matches` for memory items, the rows read once afterwards
        with :meth:`items_by_rids`."""
        rids = self._item_rids(plan.expression(term), plan.contains(term), scope, snap, limit + 1)
        return _term_matches(rids, limit, snap.max_item_rid)

    def _item_rids(
        self,
        expression: str,
        contains: str | None,
        scope: ItemScope,
        snap: Snapshot,
        limit: int,
    ) -> list[int]:
        where, params = item_scope_where(scope)
        return newest_match_ids(
            self.conn, "memory_fts", "memory_items m", "m.rid", "m.content", expression,
            max_id=snap.max_item_rid, where=where, params=params, limit=limit,
            contains=contains, scope_index="memory_items_rid_scope",
        )  # fmt: skip

    def items_by_rids(self, rids: Sequence[int]) -> dict[int, SearchItem]:
        rows = rows_by_ids(self.conn, f"SELECT {_ITEM_SELECT} FROM memory_items m", "m.rid", rids)
        return {row[0]: SearchItem(*row) for row in rows}

    def item_scan_matches(
        self, plan: MatchPlan, scope: ItemScope, snap: Snapshot, limit: int
    ) -> list[SearchItem]:
        """Items whose content holds any of ``plan.scanned`` (a bounded ``LIKE``)."""
        needle_patterns = plan.scan_patterns()
        if not needle_patterns:
            return []
        where, params = item_scope_where(scope)
        likes = " OR ".join("m.content LIKE ? ESCAPE '\\'" for _ in needle_patterns)
        sql = (
            f"SELECT {_ITEM_SELECT} FROM memory_items m WHERE m.rid <= ? AND {where} "
            f"AND ({likes}) ORDER BY m.rid DESC LIMIT ?"
        )
        return [
            SearchItem(*row)
            for row in self.conn.execute(sql, [snap.max_item_rid, *params, *needle_patterns, limit])
        ]

    def item_scan(self, scope: ItemScope, snap: Snapshot, max_rows: int) -> list[SearchItem]:
        where, params = item_scope_where(scope)
        sql = (
            f"SELECT {_ITEM_SELECT} FROM memory_items m WHERE m.rid <= ? AND {where} "
            "ORDER BY m.rid DESC LIMIT ?"
        )
        return [
            SearchItem(*row)
            for row in self.conn.execute(sql, [snap.max_item_rid, *params, max_rows])
        ]

    def item_by_id(self, item_id: str) -> SearchItem | None:
        row = self.conn.execute(
            f"SELECT {_ITEM_SELECT} FROM memory_items m WHERE m.id = ?", (item_id,)
        ).fetchone()
        return SearchItem(*row) if row else None

    def item_count(self, scope: ItemScope, snap: Snapshot) -> int:
        where, params = item_scope_where(scope)
        row = self.conn.execute(
            f"SELECT count(*) FROM memory_items m WHERE m.rid <= ? AND {where}",
            [snap.max_item_rid, *params],
        ).fetchone()
        return int(row[0]) if row else 0

    # -- expand -------------------------------------------------------------------

    def archived_text(self, session_id: str, seq: int) -> str | None:
        row = self.conn.execute(
            "SELECT text FROM archive WHERE session_id = ? AND ref = ?",
            (session_id, f"seq:{seq}"),
        ).fetchone()
        return str(row[0]) if row else None

    def session_in_scope(
        self, session_id: str, scope: EventScope, snap: Snapshot
    ) -> list[SearchEvent]:
        """A session's in-scope events in seq order (expand along a branch path)."""
        where, params = event_scope_where(scope)
        return [
            SearchEvent(*row)
            for row in self.conn.execute(
                f"SELECT {_EVENT_SELECT} FROM events e WHERE e.session_id = ? AND e.id <= ? "
                f"AND {where} ORDER BY e.seq",
                [session_id, snap.max_event_id, *params],
            )
        ]


def newest_match_ids(
    conn: Any,
    fts: str,
    table: str,
    id_column: str,
    text_column: str,
    expression: str,
    *,
    max_id: int | None,
    where: str,
    params: list[Any],
    limit: int,
    contains: str | None,
    scope_index: str | None = None,
) -> list[int]:
    """Ids of in-scope rows matching an FTS expression, newest first, at most ``limit``
    (and none above ``max_id``, a snapshot's bound, when given).

    Walking the index by descending rowid stops after ``limit`` rows. ``contains`` is
    the exact test when the expression could only narrow the search.

    ``scope_index`` names an index keyed by the rowid that holds every column ``where``
    reads (migration 0010): each match's scope is then tested on its small entry, not
    on the wide row. The condition is wrapped in ``+( )`` so that the planner probes
    the index by rowid alone instead of once per value of each ``IN`` list.
    """
    conditions = [f"{fts} MATCH ?"]
    values: list[Any] = [expression]
    if max_id is not None:
        conditions.append("f.rowid <= ?")
        values.append(max_id)
    joined = table
    if scope_index is not None and contains is None:
        joined = f"{table} INDEXED BY {scope_index}"
        where = f"+({where})"
    conditions.append(where)
    values.extend(params)
    if contains is not None:
        conditions.append(f"{text_column} LIKE ? ESCAPE '\\'")
        values.append(contains)
    sql = (
        f"SELECT {id_column} FROM {fts} f JOIN {joined} ON {id_column} = f.rowid "
        f"WHERE {' AND '.join(conditions)} ORDER BY f.rowid DESC LIMIT ?"
    )
    return [row[0] for row in conn.execute(sql, [*values, limit])]


def rows_by_refs(conn: Any, columns: str, refs: Sequence[tuple[str, int]]) -> list[Any]:
    """``columns`` of the events ``e`` at ``(session_id, seq)`` refs that exist, each once:
    one query per 200 refs, not one per ref."""
    unique = sorted(set(refs))
    rows: list[Any] = []
    for start in range(0, len(unique), 200):
        chunk = unique[start : start + 200]
        values = ", ".join("(?, ?)" for _ in chunk)
        flat: list[Any] = [x for ref in chunk for x in ref]
        rows.extend(
            conn.execute(
                f"WITH v(sid, sq) AS (VALUES {values}) SELECT {columns} FROM v "
                "JOIN events e ON e.session_id = v.sid AND e.seq = v.sq",
                flat,
            )
        )
    return rows


def rows_by_ids(conn: Any, select: str, id_column: str, ids: Sequence[int]) -> list[Any]:
    """Rows for ``ids`` (first column the id), read in chunks under SQLite's bind limit."""
    unique = sorted(set(ids))
    rows: list[Any] = []
    for start in range(0, len(unique), 500):
        chunk = unique[start : start + 500]
        marks = ", ".join("?" for _ in chunk)
        rows.extend(conn.execute(f"{select} WHERE {id_column} IN ({marks})", chunk))
    return rows


def _term_matches(newest: list[int], limit: int, top: int) -> TermMatches:
    """Document frequency: exact when the term fit under ``limit``, else estimated.

    Over the limit only the newest ``limit`` matches were read; their density in the
    row range they span (row handles grow with insertion) stands for the density
    everywhere below ``top``, the snapshot's newest row.
    """
    if len(newest) <= limit:
        return TermMatches(newest, float(len(newest)))
    span = max(1, top - newest[limit - 1] + 1)
    return TermMatches(newest[:limit], float(limit) * top / span, estimated=True)
