"""The storage API: the only package that holds SQL (with ``memplug.db``).

``Store`` composes one sub-store per concern; services above talk to these and never
to SQLite directly.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from memplug.db import Database
from memplug.store.events import EventRow, EventStore, InsertResult

if TYPE_CHECKING:
    from memplug.store.admin import AdminStore
    from memplug.store.items import ItemStore
    from memplug.store.logs import LogStore
    from memplug.store.search import SearchStore

__all__ = ["EventRow", "InsertResult", "Store"]

# Tables `memory status` counts, in the order it shows them.
REPORT_TABLES: tuple[str, ...] = (
    "events",
    "sessions",
    "archive",
    "memory_items",
    "memory_events",
    "task_state",
    "checkpoints",
    "pending_extraction",
    "assembly_logs",
    "error_log",
)


class Store:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.conn = db.conn
        self.events = EventStore(db)

    @cached_property
    def items(self) -> ItemStore:
        from memplug.store.items import ItemStore

        return ItemStore(self.db)

    @cached_property
    def search(self) -> SearchStore:
        from memplug.store.search import SearchStore

        return SearchStore(self.db)

    @cached_property
    def logs(self) -> LogStore:
        from memplug.store.logs import LogStore

        return LogStore(self.db)

    @cached_property
    def admin(self) -> AdminStore:
        from memplug.store.admin import AdminStore

        return AdminStore(self.db)

    def counts(self) -> dict[str, int]:
        counts = {}
        for table in REPORT_TABLES:
            row = self.conn.execute(f"SELECT count(*) FROM {table}").fetchone()
            counts[table] = int(row[0]) if row else 0
        return counts
