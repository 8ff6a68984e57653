"""SQL for work records: what the agent did (tool, structural target, outcome)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from msgspec.structs import astuple

from memplug.base.terms import QuerySignals
from memplug.base.vocab import COMPACTION_TYPES
from memplug.store.db import Database
from memplug.store.fts import build_match
from memplug.store.records import WorkRow
from memplug.store.search import newest_match_ids, rows_by_ids

# Every stored event's type is one of vocab.EVENT_TYPES (HostEvent checks it).
_COMPACTIONS: tuple[str, ...] = tuple(sorted(COMPACTION_TYPES))


# The table's columns are the record's fields, in its order: a row is read as
# ``WorkRow(*row)`` and written as ``astuple(row)``.
_COLUMNS: tuple[str, ...] = WorkRow.__struct_fields__
_SELECT = f"SELECT {', '.join(_COLUMNS)} FROM work_records"
_INSERT = (
    f"INSERT OR IGNORE INTO work_records ({', '.join(_COLUMNS)}) "
    f"VALUES ({', '.join('?' for _ in _COLUMNS)})"
)


class WorkStore:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.conn = db.conn

    def insert(self, row: WorkRow) -> None:
        # A derivation pass writes one record per tool call: the statement is made once
        # and the row's fields, in _COLUMNS order, are its values.
        self.conn.execute(_INSERT, astuple(row))

    @contextmanager
    def deferred_index(self) -> Iterator[None]:
        """Index the records written inside the block once, at its end, instead of row by
        row (the trigram index was most of a record's cost). Run it inside a
        transaction: if the block raises, the rollback also takes the mark back."""
        row = self.conn.execute("SELECT coalesce(max(rid), 0) FROM work_records").fetchone()
        before = int(row[0]) if row else 0
        self.conn.execute(
            "INSERT INTO meta (key, value) VALUES ('work_fts_deferred', ?)", (str(before),)
        )
        yield
        self.conn.execute(
            "INSERT INTO work_fts (rowid, target, words) "
            "SELECT rid, target, words FROM work_records WHERE rid > ?",
            (before,),
        )
        self.conn.execute("DELETE FROM meta WHERE key = 'work_fts_deferred'")

    def set_result(self, row: WorkRow) -> bool:
        """Write what a result settled on its call's record (outcome, exit code, words);
        False when there is no such record."""
        self.conn.execute(
            "UPDATE work_records SET result_seq = ?, outcome = ?, exit_code = ?, words = ? "
            "WHERE session_id = ? AND seq = ?",
            (row.result_seq, row.outcome, row.exit_code, row.words, row.session_id, row.seq),
        )
        return bool(self.conn.changes())

    def get(self, session_id: str, seq: int) -> WorkRow | None:
        row = self.conn.execute(
            f"{_SELECT} WHERE session_id = ? AND seq = ?", (session_id, seq)
        ).fetchone()
        return WorkRow(*row) if row else None

    def by_call(self, session_id: str, call_id: str) -> WorkRow | None:
        # `+seq`: ordered by the plain column the planner walks the whole session in key
        # order instead of seeking the call index (this runs for every tool result).
        row = self.conn.execute(
            f"{_SELECT} WHERE session_id = ? AND call_id = ? ORDER BY +seq LIMIT 1",
            (session_id, call_id),
        ).fetchone()
        return WorkRow(*row) if row else None

    def clear(self, session_id: str) -> None:
        self.conn.execute("DELETE FROM work_records WHERE session_id = ?", (session_id,))

    def session_rows(self, session_id: str) -> list[WorkRow]:
        return [
            WorkRow(*r)
            for r in self.conn.execute(
                f"{_SELECT} WHERE session_id = ? ORDER BY seq", (session_id,)
            )
        ]

    def latest(self, session_id: str, before_seq: int, limit: int) -> list[WorkRow]:
        """The session's last ``limit`` records before ``before_seq``, newest first."""
        return [
            WorkRow(*r)
            for r in self.conn.execute(
                f"{_SELECT} WHERE session_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?",
                (session_id, before_seq, limit),
            )
        ]

    def match(
        self, signals: QuerySignals, session_ids: Sequence[str] | None, per_term: int
    ) -> list[WorkRow]:
        """In-scope records matching the query's index-served terms — each term's newest
        ``per_term`` matches, the bound the event searches keep — by session and seq.

        Each term's walk down the index stops after ``per_term`` rows. Ranking every
        match by ``bm25()`` instead grew with the records in scope: it scores each
        match, and first counts each term's matches over the whole index.
        """
        if session_ids is not None and not session_ids:
            return []
        where, params = "1", []
        if session_ids is not None:
            where = f"w.session_id IN ({', '.join('?' for _ in session_ids)})"
            params = list(session_ids)
        rids: set[int] = set()
        for _, expression in build_match(signals).fts:
            ids = newest_match_ids(
                self.conn, "work_fts", "work_records w", "w.rid", "w.words", expression,
                max_id=None, where=where, params=params, limit=per_term, contains=None,
                scope_index="work_records_rid_scope",
            )  # fmt: skip
            rids.update(ids)
        rows = rows_by_ids(
            self.conn, f"SELECT rid, {', '.join(_COLUMNS)} FROM work_records", "rid", list(rids)
        )
        return sorted((WorkRow(*row[1:]) for row in rows), key=lambda r: (r.session_id, r.seq))

    def count(self, session_ids: Sequence[str] | None) -> int:
        if session_ids is None:
            row = self.conn.execute("SELECT count(*) FROM work_records").fetchone()
        elif not session_ids:
            return 0
        else:
            row = self.conn.execute(
                "SELECT count(*) FROM work_records WHERE session_id IN "
                f"({', '.join('?' for _ in session_ids)})",
                list(session_ids),
            ).fetchone()
        return int(row[0]) if row else 0

    def latest_compaction(self, session_id: str) -> int | None:
        """The seq of the session's latest compaction event, if any."""
        # The types by name, not `LIKE 'compaction/%'`: the (session_id, type, seq) index
        # then answers each with one seek instead of the session's every event.
        row = self.conn.execute(
            "SELECT max(seq) FROM events WHERE session_id = ? AND type IN "
            f"({', '.join('?' for _ in _COMPACTIONS)})",
            (session_id, *_COMPACTIONS),
        ).fetchone()
        return int(row[0]) if row and row[0] is not None else None
