"""SQL for the timeline and the entity graph (derived state; the rules are in
``memplug.derive.timeline`` and ``memplug.derive.graph``)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from memplug.base.text import canonical_json
from memplug.store.db import Database
from memplug.store.records import EdgeRow, EntityRow, EntryRow, ItemFact, ScopeFilter, ToolCallRow

TIMELINE_TABLES: tuple[str, ...] = ("timeline_entries", "graph_entities", "graph_edges")
_ENTRY_COLUMNS = "id, session_id, scope, kind, seq_from, seq_to, event_time, text, ref"
_EDGE_COLUMNS = (
    "session_id, src, relation, dst, scope, first_seq, last_seq, last_event_time, statements"
)
# The derived tables whose rows carry an agent tag (migration 0007).
AGENT_TABLES: tuple[str, ...] = ("memory_items", "timeline_entries", "graph_entities")


def scope_filter_where(where: ScopeFilter, alias: str) -> tuple[str, list[Any]]:
    """The SQL condition of a ScopeFilter (``1`` when it restricts nothing)."""
    if where.session_id is not None:
        return f"{alias}.session_id = ?", [where.session_id]
    if where.agent is not None:
        return f"{alias}.agent = ?", [where.agent]
    if where.scopes is not None:
        marks = ", ".join("?" for _ in where.scopes)
        return f"{alias}.scope IN ({marks})", list(where.scopes)
    return "1", []


class TimelineStore:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.conn = db.conn

    # -- writing (inside the extractor's transaction) ----------------------------------

    def clear(self, session_id: str) -> None:
        for table in TIMELINE_TABLES:
            self.conn.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))

    def add_entry(
        self,
        *,
        id: str,
        session_id: str,
        scope: str,
        kind: str,
        seq_from: int,
        seq_to: int,
        event_time: str | None,
        text: str,
        ref: str | None,
        entities: Sequence[str],
        agent: str | None = None,
    ) -> None:
        self.conn.execute(
            f"INSERT OR IGNORE INTO timeline_entries ({_ENTRY_COLUMNS}, entities_json, agent) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (id, session_id, scope, kind, seq_from, seq_to, event_time, text, ref,
             canonical_json(sorted(set(entities))), agent),
        )  # fmt: skip

    def note_entities(
        self,
        session_id: str,
        scope: str,
        seq: int,
        entities: Iterable[tuple[str, str, str]],
        agent: str | None = None,
    ) -> None:
        """Record ``(entity, type, name)`` mentions at ``seq``; the first spelling (and
        the agent of the first mention) stays."""
        self.conn.executemany(
            "INSERT INTO graph_entities (session_id, entity, type, name, scope, first_seq,"
            " last_seq, mentions, agent) VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?)"
            " ON CONFLICT (session_id, entity) DO UPDATE SET"
            " name = CASE WHEN excluded.first_seq < first_seq THEN excluded.name ELSE name END,"
            " agent = CASE WHEN excluded.first_seq < first_seq THEN excluded.agent ELSE agent END,"
            " first_seq = min(first_seq, excluded.first_seq),"
            " last_seq = max(last_seq, excluded.last_seq), mentions = mentions + 1",
            [(session_id, e, t, n, scope, seq, seq, agent) for e, t, n in entities],
        )

    def note_edges(
        self,
        session_id: str,
        scope: str,
        seq: int,
        event_time: str | None,
        edges: Iterable[tuple[str, str, str]],
        agent: str | None = None,
    ) -> None:
        """Record ``(src, relation, dst)`` statements made at ``seq`` (the agent of the
        first statement stays)."""
        self.conn.executemany(
            f"INSERT INTO graph_edges ({_EDGE_COLUMNS}, agent)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1, ?)"
            " ON CONFLICT (session_id, src, relation, dst) DO UPDATE SET"
            " agent = CASE WHEN excluded.first_seq < first_seq THEN excluded.agent ELSE agent END,"
            " first_seq = min(first_seq, excluded.first_seq),"
            " last_event_time = CASE WHEN excluded.last_seq > last_seq"
            "   THEN excluded.last_event_time ELSE last_event_time END,"
            " last_seq = max(last_seq, excluded.last_seq), statements = statements + 1",
            [(session_id, s, r, d, scope, seq, seq, event_time, agent) for s, r, d in edges],
        )

    # -- reading what derivation needs ----------------------------------------------------

    def tool_call(self, session_id: str, call_id: str, before: int) -> ToolCallRow | None:
        """The call a tool result at ``before`` answers (the latest before it, should an
        id repeat)."""
        row = self.conn.execute(
            "SELECT seq, tool_name, text, cwd FROM events WHERE session_id = ? AND call_id = ?"
            " AND type = 'tool/call' AND seq < ? ORDER BY seq DESC LIMIT 1",
            (session_id, call_id, before),
        ).fetchone()
        return ToolCallRow(int(row[0]), row[1], str(row[2]), row[3]) if row else None

    def items_after(self, session_id: str, after_seq: int) -> dict[int, list[ItemFact]]:
        """Items the session's events after ``after_seq`` created (by seq, in id order),
        whatever their status now."""
        rows = self.conn.execute(
            "SELECT derived_from_seq, id, kind, content, subject_key, numbers_json"
            " FROM memory_items WHERE session_id = ? AND derived_from_seq > ?"
            " ORDER BY derived_from_seq, id",
            (session_id, after_seq),
        )
        made: dict[int, list[ItemFact]] = {}
        for seq, *r in rows:
            fact = ItemFact(str(r[0]), str(r[1]), str(r[2]), r[3], tuple(json.loads(r[4] or "[]")))
            made.setdefault(int(seq), []).append(fact)
        return made

    # -- reading views -------------------------------------------------------------------

    def snapshot(self) -> int:
        """The highest event row id: a page token pins its result to what existed then."""
        row = self.conn.execute("SELECT coalesce(max(id), 0) FROM events").fetchone()
        return int(row[0]) if row else 0

    def entries(
        self,
        where: ScopeFilter,
        *,
        snap: int,
        item_kinds: Sequence[str],
        since: str | None = None,
        until: str | None = None,
        entity: str | None = None,
        kinds: Sequence[str] = (),
        offset: int = 0,
        limit: int = 20,
    ) -> tuple[int, list[EntryRow]]:
        """``(total, page)`` of entries in time order (event time, session, seq, id).

        An ``item`` entry shows as its item's kind, and only when that is in
        ``item_kinds``."""
        clause, params = scope_filter_where(where, "t")
        marks = ", ".join("?" for _ in item_kinds)
        sql = (
            " FROM timeline_entries t JOIN events e"
            " ON e.session_id = t.session_id AND e.seq = t.seq_to"
            " LEFT JOIN memory_items m ON t.kind = 'item' AND m.id = t.ref"
            f" WHERE {clause} AND e.id <= ? AND (t.kind != 'item' OR m.kind IN ({marks}))"
        )
        params += [snap, *item_kinds]
        if since is not None:
            sql += " AND t.event_time >= ?"
            params.append(since)
        if until is not None:
            sql += " AND t.event_time < ?"
            params.append(until)
        if entity is not None:
            sql += " AND EXISTS (SELECT 1 FROM json_each(t.entities_json) j WHERE j.value = ?)"
            params.append(entity)
        if kinds:
            sql += f" AND coalesce(m.kind, t.kind) IN ({', '.join('?' for _ in kinds)})"
            params.extend(kinds)
        total_row = self.conn.execute("SELECT count(*)" + sql, params).fetchone()
        rows = self.conn.execute(
            "SELECT t.id, t.session_id, t.scope, coalesce(m.kind, t.kind), t.seq_from,"
            " t.seq_to, t.event_time, t.text, t.ref, t.entities_json, e.ingested_at, m.status,"
            " t.agent" + sql
            + " ORDER BY coalesce(t.event_time, ''), t.session_id, t.seq_from, t.id"
            " LIMIT ? OFFSET ?",
            [*params, limit, offset],
        )  # fmt: skip
        page = [
            EntryRow(
                id=str(row[0]),
                session_id=str(row[1]),
                scope=str(row[2]),
                kind=str(row[3]),
                seq_from=int(row[4]),
                seq_to=int(row[5]),
                event_time=row[6],
                text=str(row[7]),
                ref=row[8],
                entities=tuple(_json_list(row[9])),
                ingested_at=row[10],
                ref_status=row[11],
                agent=row[12],
            )
            for row in rows
        ]
        return (int(total_row[0]) if total_row else 0), page

    def find_entities(self, ids: Sequence[str], name: str, where: ScopeFilter) -> list[EntityRow]:
        """Entities with one of ``ids`` or first spelt ``name`` (the graph's entry points)."""
        clause, params = scope_filter_where(where, "g")
        marks = ", ".join("?" for _ in ids) or "NULL"
        rows = self.conn.execute(
            "SELECT entity, min(type), min(name), count(*), sum(mentions) FROM graph_entities g"
            f" WHERE (entity IN ({marks}) OR name = ?) AND {clause}"
            " GROUP BY entity ORDER BY entity",
            [*ids, name, *params],
        )
        return [EntityRow(str(r[0]), str(r[1]), str(r[2]), int(r[3]), int(r[4])) for r in rows]

    def entity_ids_like(self, suffix: str, where: ScopeFilter, limit: int) -> list[str]:
        """Entity ids ending with ``suffix`` (a relative path names a file this way)."""
        clause, params = scope_filter_where(where, "g")
        rows = self.conn.execute(
            "SELECT DISTINCT entity FROM graph_entities g"
            f" WHERE substr(entity, -length(?)) = ? AND {clause} ORDER BY entity LIMIT ?",
            [suffix, suffix, *params, limit],
        )
        return [str(r[0]) for r in rows]

    def edges_touching(self, entities: Sequence[str], where: ScopeFilter) -> list[EdgeRow]:
        """Edges with either end in ``entities``."""
        if not entities:
            return []
        clause, params = scope_filter_where(where, "g")
        self.conn.execute("CREATE TEMP TABLE IF NOT EXISTS graph_wanted (id TEXT PRIMARY KEY)")
        self.conn.execute("DELETE FROM temp.graph_wanted")
        self.conn.executemany(
            "INSERT OR IGNORE INTO temp.graph_wanted VALUES (?)", ((e,) for e in entities)
        )
        rows = self.conn.execute(
            f"SELECT {_EDGE_COLUMNS} FROM graph_edges g WHERE {clause} AND"
            " (src IN (SELECT id FROM temp.graph_wanted)"
            " OR dst IN (SELECT id FROM temp.graph_wanted))"
            " ORDER BY src, relation, dst, session_id",
            params,
        )
        return [EdgeRow(*row) for row in rows]

    def edges_in_slot(self, src: str, relation: str, where: ScopeFilter) -> list[EdgeRow]:
        clause, params = scope_filter_where(where, "g")
        rows = self.conn.execute(
            f"SELECT {_EDGE_COLUMNS} FROM graph_edges g WHERE src = ? AND relation = ?"
            f" AND {clause} ORDER BY dst, session_id",
            [src, relation, *params],
        )
        return [EdgeRow(*row) for row in rows]

    def all_edges(self, where: ScopeFilter, relations: Sequence[str] = ()) -> list[EdgeRow]:
        clause, params = scope_filter_where(where, "g")
        sql = f"SELECT {_EDGE_COLUMNS} FROM graph_edges g WHERE {clause}"
        if relations:
            sql += f" AND relation IN ({', '.join('?' for _ in relations)})"
            params.extend(relations)
        rows = self.conn.execute(sql + " ORDER BY src, relation, dst, session_id", params)
        return [EdgeRow(*row) for row in rows]

    def lagging(self, where: ScopeFilter) -> list[str]:
        """Sessions in view whose derivation stands behind their events."""
        clause, params = scope_filter_where(where, "s")
        if where.agent is not None:
            # Sessions carry no agent: any session behind may hold the agent's events.
            clause, params = "1", []
        elif where.scopes is not None:
            # Sessions carry a project, not a scope: `project:<key>` is their project.
            projects = [s[len("project:") :] for s in where.scopes if s.startswith("project:")]
            marks = ", ".join("?" for _ in projects) or "NULL"
            clause, params = f"s.project IN ({marks})", projects
        rows = self.conn.execute(
            "SELECT s.session_id FROM sessions s JOIN checkpoints c USING (session_id)"
            f" WHERE {clause} AND coalesce(c.last_extract_seq, -1) < c.last_event_seq"
            " ORDER BY s.session_id",
            params,
        )
        return [str(r[0]) for r in rows]

    def agent_known(self, agent: str) -> bool:
        """Whether any derived row carries ``agent``."""
        return any(
            self.conn.execute(f"SELECT 1 FROM {table} WHERE agent = ? LIMIT 1", (agent,))
            .fetchone() is not None
            for table in AGENT_TABLES
        )  # fmt: skip


def _json_list(raw: str | None) -> list[str]:
    try:
        value = json.loads(raw or "[]")
    except ValueError:
        return []
    return [str(v) for v in value] if isinstance(value, list) else []
