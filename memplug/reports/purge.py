"""`memory purge`: delete captured data for good, and say exactly what was done.

The order matters: rows go in one transaction (so a crash leaves all or nothing);
sessions that kept some events are derived again; then the FTS indexes are checked
and merged so no segment keeps deleted text, the file is optionally vacuumed, and the
WAL is checkpointed and truncated so no old page image survives beside the file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any, Protocol

from msgspec import Struct, field

from memplug.base.errors import UsageError
from memplug.store.records import PurgePlan

if TYPE_CHECKING:
    from memplug.store.ports import Storage


class Derivable(Protocol):
    """An open store and the way to derive memory again for sessions that kept some
    events (``memplug.memory.Memory`` is one)."""

    @property
    def store(self) -> Storage: ...
    def derive(self, session_ids: Iterable[str]) -> str | None: ...


class PurgeReport(Struct):
    plan: PurgePlan
    deleted: dict[str, int] = field(default_factory=dict)
    rederived: tuple[str, ...] = ()
    indexes: dict[str, str] = field(default_factory=dict)
    rebuilt: tuple[str, ...] = ()
    vacuumed: bool = False
    checkpoint: dict[str, Any] = field(default_factory=dict)
    free_pages: int = 0
    # Pages already free when the purge began: zeroed when every earlier writer had
    # secure_delete on (any memplug that sets it); --vacuum clears them regardless.
    free_pages_before: int = 0
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.plan.as_dict(),
            "deleted": dict(sorted(self.deleted.items())),
            "rederived_sessions": list(self.rederived),
            "indexes": self.indexes,
            "rebuilt_indexes": list(self.rebuilt),
            "vacuumed": self.vacuumed,
            "checkpoint": self.checkpoint,
            "free_pages": self.free_pages,
            "free_pages_before": self.free_pages_before,
            "warnings": self.warnings,
        }


def parse_cutoff(value: str) -> float:
    """``--before`` as a Unix time: a date (midnight UTC) or an ISO-8601 date-time.

    A date-time without a zone is UTC, the zone memplug stores event times in."""
    text = value.strip()
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            moment = datetime(day.year, day.month, day.day, tzinfo=UTC)
        else:
            moment = datetime.fromisoformat(text)
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)
    except ValueError:
        raise UsageError(
            f"--before {value!r} is not a date (YYYY-MM-DD) or ISO-8601 date-time"
        ) from None
    return moment.timestamp()


def plan_purge(
    memory: Derivable,
    *,
    sessions: Sequence[str] = (),
    before: str | None = None,
    everything: bool = False,
) -> PurgePlan:
    """What a purge would remove; exactly one of the three scopes must be given."""
    chosen = sum((bool(sessions), before is not None, everything))
    if chosen != 1:
        raise UsageError("give exactly one of --session, --before or --all")
    admin = memory.store.admin
    if sessions:
        return admin.plan_sessions(sessions)
    if before is not None:
        return admin.plan_before(parse_cutoff(before))
    return admin.plan_all()


# What a purge does, in order; `progress` names each as it starts.
_STAGES = (
    "deleting rows",
    "deriving partly purged sessions again",
    "checking the indexes",
    "merging the indexes",
    "truncating the write-ahead log",
)
_VACUUM = "vacuuming the file"


def purge(
    memory: Derivable,
    *,
    sessions: Sequence[str] = (),
    before: str | None = None,
    everything: bool = False,
    vacuum: bool = False,
    progress: Callable[[int, int, str], None] | None = None,
    within: Sequence[str] | None = None,
    tombstones: bool = True,
) -> PurgeReport:
    """Delete the chosen scope from every table, index, free page and the WAL;
    ``progress(done, total, stage)`` is called as each stage starts.

    Shared sessions (docs/sync.md) leave tombstones for the sync server unless
    ``tombstones`` is off (a tombstone from the server being carried out); ``within``
    limits ``before`` to those sessions."""
    stages = [*_STAGES[:-1], *([_VACUUM] if vacuum else []), _STAGES[-1]]

    def stage(name: str) -> None:
        if progress is not None:
            progress(stages.index(name), len(stages), name)

    plan = plan_purge(memory, sessions=sessions, before=before, everything=everything)
    if within is not None and before is not None:
        plan = memory.store.admin.plan_before(parse_cutoff(before), within)
    admin = memory.store.admin
    free_before = admin.free_pages()
    stage(_STAGES[0])
    with memory.store.write_transaction():
        if tombstones:
            purged = None if everything else (*plan.sessions, *plan.partial)
            cutoff = None if before is None else parse_cutoff(before)
            memory.store.sync.record_purge(purged, cutoff)
        if everything:
            counts = admin.delete_all()
        elif before is not None:
            counts = admin.delete_before(parse_cutoff(before), within)
        else:
            # Missing ones too: a session can have left rows (an assembly log) without
            # events, and deleting nothing costs nothing.
            counts = admin.delete_sessions(plan.sessions + plan.missing)
    report = PurgeReport(plan=plan, deleted=counts.deleted, rederived=counts.partial)
    stage(_STAGES[1])
    if counts.partial:
        memory.derive(counts.partial)
        with memory.store.write_transaction():
            orphans = admin.drop_orphan_actions()
        if orphans:
            report.deleted["memory_actions"] = report.deleted.get("memory_actions", 0) + orphans

    stage(_STAGES[2])
    report.indexes = admin.check_indexes()
    broken = tuple(name for name, state in report.indexes.items() if state != "ok")
    for index in broken:
        admin.rebuild_index(index)
    if broken:
        report.rebuilt = broken
        report.indexes = admin.check_indexes()
    stage(_STAGES[3])
    admin.optimize_indexes()
    if vacuum:
        stage(_VACUUM)
        admin.vacuum()
        report.vacuumed = True
    stage(_STAGES[-1])
    report.checkpoint = admin.truncate_wal()
    report.free_pages = admin.free_pages()
    if not report.checkpoint["complete"]:
        report.warnings.append(
            "another process holds the database open, so the write-ahead log could not be "
            "truncated: it may keep purged text until the next checkpoint"
        )
    report.free_pages_before = free_before
    return report
