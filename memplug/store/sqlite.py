"""The storage port and its SQLite implementation: the only package that holds SQL
(with ``memplug.store.db``).

``memplug.store.ports`` states what the services need, as Protocols; ``Store`` is the
SQLite implementation of ``ports.Storage`` and composes one sub-store per concern.
Services above type against the ports and never talk to SQLite directly.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from memplug.store.db import Database
from memplug.store.events import EventStore
from memplug.store.records import EventRow, InsertResult
from memplug.store.search import SearchStore

if TYPE_CHECKING:
    from memplug.store.admin import AdminStore
    from memplug.store.core import CoreStore
    from memplug.store.hosts import HostStore
    from memplug.store.items import ItemStore
    from memplug.store.logs import LogStore
    from memplug.store.skills import SkillStore
    from memplug.store.sync import SyncStore
    from memplug.store.timeline import TimelineStore
    from memplug.store.vectors import VectorStore
    from memplug.store.work import WorkStore

__all__ = ["EventRow", "InsertResult", "Store"]

# Tables `memory status` counts, in the order it shows them.
REPORT_TABLES: tuple[str, ...] = (
    "events",
    "sessions",
    "archive",
    "memory_items",
    "memory_events",
    "task_state",
    "work_records",
    "checkpoints",
    "pending_extraction",
    "assembly_logs",
    "error_log",
    "skill_files",
    "rules",
    "validation_logs",
    "timeline_entries",
    "graph_entities",
    "graph_edges",
)


class Store:
    """The SQLite implementation of :class:`memplug.store.ports.Storage`."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.conn = db.conn
        self.events = EventStore(db)

    @property
    def path(self) -> Path:
        return self.db.path

    # -- transactions ---------------------------------------------------------------

    def transaction(self) -> AbstractContextManager[object]:
        return self.db.transaction()

    def write_transaction(self) -> AbstractContextManager[object]:
        return self.db.write_transaction()

    def lock_wait(self, ms: int | None) -> AbstractContextManager[None]:
        return self.db.lock_wait(ms)

    def set_lock_wait(self, ms: int | None = None) -> None:
        self.db.set_lock_wait(ms)

    def truncate_wal(self) -> None:
        self.db.checkpoint()

    def schema_version(self) -> int:
        return self.db.schema_version()

    def integrity_check(self) -> list[str]:
        return self.db.integrity_check()

    # -- sub-stores ----------------------------------------------------------------

    @cached_property
    def items(self) -> ItemStore:
        from memplug.store.items import ItemStore

        return ItemStore(self.db)

    @cached_property
    def search(self) -> SearchStore:
        return SearchStore(self.db)

    @cached_property
    def logs(self) -> LogStore:
        from memplug.store.logs import LogStore

        return LogStore(self.db)

    @cached_property
    def hosts(self) -> HostStore:
        from memplug.store.hosts import HostStore

        return HostStore(self.db)

    @cached_property
    def timeline(self) -> TimelineStore:
        from memplug.store.timeline import TimelineStore

        return TimelineStore(self.db)

    @cached_property
    def vectors(self) -> VectorStore:
        from memplug.store.vectors import VectorStore

        return VectorStore(self.db)

    @cached_property
    def work(self) -> WorkStore:
        from memplug.store.work import WorkStore

        return WorkStore(self.db)

    @cached_property
    def core(self) -> CoreStore:
        from memplug.store.core import CoreStore

        return CoreStore(self.db)

    @cached_property
    def admin(self) -> AdminStore:
        from memplug.store.admin import AdminStore

        return AdminStore(self.db)

    @cached_property
    def skills(self) -> SkillStore:
        from memplug.store.skills import SkillStore

        return SkillStore(self.db)

    @cached_property
    def sync(self) -> SyncStore:
        from memplug.store.sync import SyncStore

        return SyncStore(self.db)

    def counts(self) -> dict[str, int]:
        counts = {}
        for table in REPORT_TABLES:
            row = self.conn.execute(f"SELECT count(*) FROM {table}").fetchone()
            counts[table] = int(row[0]) if row else 0
        return counts
