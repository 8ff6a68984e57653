"""SQL for `memory purge`: deleting for good, from every table and index that holds text.

Purge is the only path that deletes evidence. Deleting the rows is not enough for the
promise that purged text is gone from the file:

* ``secure_delete`` makes SQLite overwrite the freed cells and pages with zeros, so
  the bytes do not linger in free space;
* an FTS5 delete only appends tombstones to the index: the old segments still hold the
  text's trigrams until ``optimize`` merges every segment into one;
* under WAL the old page images sit in the ``-wal`` file until a checkpoint copies the
  new ones back and ``TRUNCATE`` cuts the log to zero bytes;
* VACUUM (optional) rewrites the whole file, which also clears free space left by
  deletions made before ``secure_delete`` was on (log retention, for example).

Every step is reported, so a checkpoint that could not finish because another process
held the database open is a visible fact, not a silent gap.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any, cast

import apsw

from memplug.base.refs import EventRef
from memplug.store.db import Database
from memplug.store.records import PurgeCounts, PurgePlan

# Tables keyed by session_id, in deletion order (children before what they point at).
# `memory_actions` has no session column and `assembly_logs` can mention a session
# from another session's row, so both are handled apart.
SESSION_TABLES: tuple[str, ...] = (
    "memory_events",
    "memory_items",
    "task_state",
    "work_records",
    "pending_extraction",
    "checkpoints",
    "archive",
    "events",
    "error_log",
    "sessions",
)
# Derived from events; wiped for a session that loses only some of its events, then
# derived again from what is left (see ``memplug.reports.purge``).
DERIVED_TABLES: tuple[str, ...] = (
    "memory_events",
    "memory_items",
    "task_state",
    "timeline_entries",
    "graph_entities",
    "graph_edges",
    "work_records",
)
# Everything `--all` empties. `meta` and `schema_migrations` describe the file, not data.
ALL_TABLES: tuple[str, ...] = (
    *SESSION_TABLES,
    "memory_actions",
    "assembly_logs",
)
FTS_INDEXES: tuple[str, ...] = ("events_fts", "memory_fts", "work_fts")
# Where a host adapter stopped reading a transcript, and how its record ids map to
# events: no text, and deleting them would make the next hook read the transcript from
# its start and capture the purged session all over again.
KEPT_TABLES: tuple[str, ...] = ("host_cursors", "host_links")


class AdminStore:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.conn = db.conn

    # -- planning -----------------------------------------------------------------

    def plan_sessions(self, session_ids: Sequence[str]) -> PurgePlan:
        """The plan for ``--session``. A session the database does not hold is listed as
        missing, not an error: a purge interrupted after its delete committed is then
        finished by running it again (the index merge and WAL truncation still run)."""
        wanted = tuple(dict.fromkeys(session_ids))
        present = set(self._known_sessions(wanted))
        found = tuple(s for s in wanted if s in present)
        missing = tuple(s for s in wanted if s not in present)
        return PurgePlan("session", found, events=self._count_events(found), missing=missing)

    def plan_before(self, cutoff_epoch: float, within: Sequence[str] | None = None) -> PurgePlan:
        """The plan for ``--before``: events whose own time is earlier than the cutoff
        (only in the sessions ``within`` when given: a tombstone from the sync server)."""
        rows = self.conn.execute(
            "SELECT session_id, count(*), "
            "sum(unixepoch(event_time, 'subsec') < ?), sum(event_time IS NULL) "
            "FROM events GROUP BY session_id ORDER BY session_id",
            (cutoff_epoch,),
        ).fetchall()
        if within is not None:
            wanted = set(within)
            rows = [row for row in rows if row[0] in wanted]
        whole, partial = [], {}
        events = undated = 0
        for session_id, total, before, no_time in rows:
            before, no_time = int(before or 0), int(no_time or 0)
            undated += no_time
            events += before
            if before and before == total:
                whole.append(str(session_id))
            elif before:
                partial[str(session_id)] = before
        return PurgePlan("before", tuple(whole), partial, events, undated)

    def plan_all(self) -> PurgePlan:
        sessions = tuple(
            str(r[0])
            for r in self.conn.execute(
                "SELECT session_id FROM sessions UNION SELECT DISTINCT session_id FROM events "
                "ORDER BY 1"
            )
        )
        return PurgePlan("all", sessions, events=self._count_events(None))

    def _known_sessions(self, session_ids: Sequence[str]) -> list[str]:
        found = []
        for session_id in session_ids:
            row = self.conn.execute(
                "SELECT 1 FROM sessions WHERE session_id = ?1 "
                "UNION ALL SELECT 1 FROM events WHERE session_id = ?1 LIMIT 1",
                (session_id,),
            ).fetchone()
            if row:
                found.append(session_id)
        return found

    def _count_events(self, session_ids: Sequence[str] | None) -> int:
        if session_ids is None:
            row = self.conn.execute("SELECT count(*) FROM events").fetchone()
        elif not session_ids:
            return 0
        else:
            marks = ", ".join("?" for _ in session_ids)
            row = self.conn.execute(
                f"SELECT count(*) FROM events WHERE session_id IN ({marks})", tuple(session_ids)
            ).fetchone()
        return int(row[0]) if row else 0

    # -- deleting (inside the caller's write transaction) ---------------------------

    def _zero_freed_space(self) -> None:
        """Zero freed cells and pages on this connection before deleting.

        ``Database.open`` already turns it on for writing; every delete sets it again so
        that "deleted for good" does not rest on how the connection was opened."""
        self.conn.execute("PRAGMA secure_delete = ON")

    def delete_sessions(self, session_ids: Sequence[str]) -> PurgeCounts:
        """Remove every row of these sessions, and assembly logs that mention them."""
        self._zero_freed_space()
        counts = PurgeCounts(sessions=tuple(session_ids))
        if not session_ids:
            return counts
        self._with_ids(session_ids)
        counts.add("memory_actions", self._delete_actions_of_sessions())
        for table in SESSION_TABLES:
            counts.add(table, self._delete_where_session(table))
        for table in self._other_session_tables():
            counts.add(table, self._delete_where_session(table))
        counts.add("assembly_logs", self._delete_logs_mentioning(session_ids))
        counts.add("memory_items", self._delete_items_citing(session_ids, None))
        counts.add(
            "meta",
            self._delete_session_meta() + self._delete_core_cache() + self._forget_watermarks(),
        )
        return counts

    def delete_before(
        self, cutoff_epoch: float, within: Sequence[str] | None = None
    ) -> PurgeCounts:
        """Remove events earlier than the cutoff, whole sessions when nothing is left.

        A session that keeps some events loses all its derived state, which the caller
        derives again from the events that remain: an item, a task state or a log can
        quote any earlier event, and re-deriving is the one way that is both complete
        and identical to what the remaining events alone would give."""
        plan = self.plan_before(cutoff_epoch, within)
        counts = self.delete_sessions(plan.sessions)
        if not plan.partial:
            return counts
        partial = tuple(plan.partial)
        counts.partial = partial
        self._with_ids(partial)
        purged = self.conn.execute(
            "SELECT session_id, seq FROM events "
            "WHERE session_id IN (SELECT id FROM temp.purge_ids) "
            "AND unixepoch(event_time, 'subsec') < ?",
            (cutoff_epoch,),
        ).fetchall()
        refs = [(str(row[0]), cast(int, row[1])) for row in purged]
        self.conn.execute(
            "CREATE TEMP TABLE IF NOT EXISTS purge_refs (session_id TEXT, seq INTEGER, "
            "PRIMARY KEY (session_id, seq))"
        )
        self.conn.execute("DELETE FROM temp.purge_refs")
        self.conn.executemany("INSERT INTO temp.purge_refs VALUES (?, ?)", refs)
        counts.add(
            "archive",
            self._changes(
                "DELETE FROM archive WHERE (session_id, ref) IN "
                "(SELECT session_id, 'seq:' || seq FROM temp.purge_refs)"
            ),
        )
        counts.add(
            "events",
            self._changes(
                "DELETE FROM events WHERE (session_id, seq) IN "
                "(SELECT session_id, seq FROM temp.purge_refs)"
            ),
        )
        counts.add(
            "error_log",
            self._changes(
                "DELETE FROM error_log WHERE (session_id, seq) IN "
                "(SELECT session_id, seq FROM temp.purge_refs)"
            ),
        )
        for table in DERIVED_TABLES:
            counts.add(table, self._delete_where_session(table))
        counts.add(
            "pending_extraction",
            self._changes(
                "DELETE FROM pending_extraction WHERE (session_id, seq) IN "
                "(SELECT session_id, seq FROM temp.purge_refs)"
            ),
        )
        # Extraction starts again from the first remaining event.
        self.conn.execute(
            "UPDATE checkpoints SET last_extract_seq = NULL, last_assembly_seq = NULL "
            "WHERE session_id IN (SELECT id FROM temp.purge_ids)"
        )
        self.conn.execute(
            """
            UPDATE sessions SET
                first_time = (SELECT min(event_time) FROM events e
                              WHERE e.session_id = sessions.session_id),
                last_time = (SELECT max(event_time) FROM events e
                             WHERE e.session_id = sessions.session_id)
            WHERE session_id IN (SELECT id FROM temp.purge_ids)
            """
        )
        counts.add("assembly_logs", self._delete_logs_mentioning(partial))
        counts.add("memory_items", self._delete_items_citing(partial, set(refs)))
        counts.add("meta", self._delete_core_cache() + self._forget_watermarks())
        return counts

    def delete_all(self) -> PurgeCounts:
        """Empty every data table. The FTS indexes are emptied with them (triggers)."""
        self._zero_freed_space()
        counts = PurgeCounts(sessions=self.plan_all().sessions)
        for table in (*ALL_TABLES, *self._other_session_tables()):
            counts.add(table, self._changes(f'DELETE FROM "{table}"'))
        counts.add("meta", self._changes("DELETE FROM meta WHERE instr(key, ':') > 0"))
        return counts

    def drop_orphan_actions(self) -> int:
        """Person-made lifecycle actions whose item no longer exists after re-derivation."""
        return self._changes(
            "DELETE FROM memory_actions WHERE memory_id NOT IN (SELECT id FROM memory_items)"
        )

    # -- helpers --------------------------------------------------------------------

    def _changes(self, sql: str, params: Sequence[Any] = ()) -> int:
        self.conn.execute(sql, params)
        return int(self.conn.changes())

    def _with_ids(self, session_ids: Iterable[str]) -> None:
        """Load session ids into a temp table: no statement is limited by host parameters."""
        self.conn.execute("CREATE TEMP TABLE IF NOT EXISTS purge_ids (id TEXT PRIMARY KEY)")
        self.conn.execute("DELETE FROM temp.purge_ids")
        self.conn.executemany(
            "INSERT OR IGNORE INTO temp.purge_ids VALUES (?)", ((s,) for s in session_ids)
        )

    def _delete_where_session(self, table: str) -> int:
        return self._changes(
            f'DELETE FROM "{table}" WHERE session_id IN (SELECT id FROM temp.purge_ids)'
        )

    def _delete_session_meta(self) -> int:
        """Per-session bookkeeping in ``meta`` is keyed ``<name>:<session_id>``."""
        return self._changes(
            "DELETE FROM meta WHERE instr(key, ':') > 0 "
            "AND substr(key, instr(key, ':') + 1) IN (SELECT id FROM temp.purge_ids)"
        )

    def _forget_watermarks(self) -> int:
        """Deleting the newest events lets SQLite give their ids to new events, below a
        semantic model's watermark (``vectors_through:``): forget it, and the next
        embedding pass looks at every event once (store/vectors.py)."""
        return self._changes("DELETE FROM meta WHERE key GLOB 'vectors_through:*'")

    def _delete_core_cache(self) -> int:
        """Cached cores quote items of any session in their scope: all are made again."""
        from memplug.store.core import CoreStore

        return CoreStore(self.db).clear()

    def _delete_actions_of_sessions(self) -> int:
        return self._changes(
            "DELETE FROM memory_actions WHERE memory_id IN "
            "(SELECT id FROM memory_items WHERE session_id IN (SELECT id FROM temp.purge_ids))"
        )

    def _other_session_tables(self) -> list[str]:
        """Tables a later migration added with a ``session_id`` column: purge them too,
        so a new table cannot silently keep a purged session's data."""
        known = {*ALL_TABLES, *KEPT_TABLES}
        found = []
        for (name,) in self.conn.execute(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
            "AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name"
        ):
            if name in known or any(name.startswith(f"{fts}_") for fts in FTS_INDEXES):
                continue
            columns = {str(r[1]) for r in self.conn.execute(f'PRAGMA table_info("{name}")')}
            if "session_id" in columns:
                found.append(str(name))
        return found

    def _delete_logs_mentioning(self, session_ids: Sequence[str]) -> int:
        """Assembly logs of these sessions, and any other log that quotes or cites them.

        Logs are small and capped, and where a reference sits inside their JSON is the
        assembler's business, so each row is decoded and searched for a value naming
        the session (``S`` or ``S:<seq>``) rather than trusting one field's shape."""
        wanted = set(session_ids)
        doomed = []
        for row in self.conn.execute(
            "SELECT id, session_id, text, query_json, sections_json, included_json, "
            "omitted_json FROM assembly_logs"
        ):
            log_id, session_id, text, *blobs = row
            if session_id in wanted or _text_cites(text, wanted):
                doomed.append(log_id)
                continue
            if any(_json_names(blob, wanted) for blob in blobs):
                doomed.append(log_id)
        self.conn.executemany("DELETE FROM assembly_logs WHERE id = ?", ((i,) for i in doomed))
        return len(doomed)

    def _delete_items_citing(
        self, session_ids: Sequence[str], refs: set[tuple[str, int]] | None
    ) -> int:
        """Items of other sessions whose sources include a purged event.

        ``refs`` None means every event of ``session_ids`` is purged."""
        wanted = set(session_ids)
        doomed = []
        for rid, source_refs in self.conn.execute(
            "SELECT rid, source_refs_json FROM memory_items "
            "WHERE session_id NOT IN (SELECT id FROM temp.purge_ids)"
        ):
            if _json_names(source_refs, wanted, refs):
                doomed.append(rid)
        if not doomed:
            return 0
        self.conn.executemany(
            "DELETE FROM memory_events "
            "WHERE memory_id = (SELECT id FROM memory_items WHERE rid = ?)",
            ((r,) for r in doomed),
        )
        self.conn.executemany("DELETE FROM memory_items WHERE rid = ?", ((r,) for r in doomed))
        return len(doomed)

    # -- index and file hygiene (outside any transaction) ---------------------------

    def check_indexes(self) -> dict[str, str]:
        """``ok`` per FTS index, or what is wrong with it.

        ``events_fts`` indexes only rows with ``searchable = 1``, so FTS5's own check
        against the content table (rank 1) would flag every unindexed row; it gets the
        internal check plus a comparison of its document ids with the searchable rows."""
        report = {}
        for index in FTS_INDEXES:
            try:
                self.conn.execute(
                    f"INSERT INTO {index} ({index}, rank) VALUES ('integrity-check', ?)",
                    (0 if index == "events_fts" else 1,),
                )
            except apsw.CorruptError as error:
                report[index] = f"corrupt: {error}"
                continue
            report[index] = "ok"
        row = self.conn.execute(
            "SELECT (SELECT count(*) FROM (SELECT id FROM events_fts_docsize "
            "        EXCEPT SELECT id FROM events WHERE searchable = 1)), "
            "       (SELECT count(*) FROM (SELECT id FROM events WHERE searchable = 1 "
            "        EXCEPT SELECT id FROM events_fts_docsize))"
        ).fetchone()
        stale, missing = (int(row[0]), int(row[1])) if row else (0, 0)
        if report["events_fts"] == "ok" and (stale or missing):
            report["events_fts"] = f"{stale} stale and {missing} missing documents"
        return report

    def rebuild_index(self, index: str) -> None:
        """Re-create one FTS index from its content table, in one transaction."""
        with self.db.write_transaction():
            if index == "events_fts":
                # FTS5's own 'rebuild' would index every row, unsearchable ones too.
                self.conn.execute("INSERT INTO events_fts (events_fts) VALUES ('delete-all')")
                self.conn.execute(
                    "INSERT INTO events_fts (rowid, text) "
                    "SELECT id, text FROM events WHERE searchable = 1"
                )
            else:
                self.conn.execute(f"INSERT INTO {index} ({index}) VALUES ('rebuild')")

    def optimize_indexes(self) -> None:
        """Merge every FTS segment into one, dropping the entries of deleted rows."""
        with self.db.write_transaction():
            for index in FTS_INDEXES:
                self.conn.execute(f"INSERT INTO {index} ({index}) VALUES ('optimize')")

    def vacuum(self) -> None:
        self.conn.execute("VACUUM")

    def truncate_wal(self) -> dict[str, Any]:
        """Copy the WAL into the file and cut it to zero bytes, if no reader prevents it."""
        try:
            log_frames, done = self.conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_TRUNCATE)
        except apsw.BusyError:
            return {"complete": False, "busy": True}
        return {"complete": True, "busy": False, "wal_frames": log_frames, "checkpointed": done}

    def free_pages(self) -> int:
        row = self.conn.execute("PRAGMA freelist_count").fetchone()
        return int(row[0]) if row else 0


def _text_cites(text: str | None, sessions: set[str]) -> bool:
    """Whether injected text cites ``S:<seq>`` for one of ``sessions`` (``[ev S:12]``)."""
    if not text:
        return False
    return any(re.search(rf"(?<![\w.:-]){re.escape(s)}:\d", text) for s in sessions if s in text)


def _json_names(
    blob: str | None, sessions: set[str], refs: set[tuple[str, int]] | None = None
) -> bool:
    """Whether a JSON document holds a value naming one of ``sessions``.

    A string ``S`` or ``S:<seq>`` names session S; with ``refs`` given, only a
    ``S:<seq>`` in ``refs`` counts (a partial purge keeps the session's other events).
    Objects with ``session_id`` and ``seq`` keys count the same way."""
    if not blob:
        return False
    try:
        value = json.loads(blob)
    except ValueError:
        return any(s in blob for s in sessions)
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _names(item, sessions, refs):
                return True
        elif isinstance(item, dict):
            session_id, seq = item.get("session_id"), item.get("seq")
            if (
                isinstance(session_id, str)
                and session_id in sessions
                and (refs is None or (isinstance(seq, int) and (session_id, seq) in refs))
            ):
                return True
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _names(value: str, sessions: set[str], refs: set[tuple[str, int]] | None) -> bool:
    if refs is None and value in sessions:
        return True
    ref = EventRef.find(value)
    if ref is None or ref.session_id not in sessions:
        return False
    return refs is None or ref in refs
