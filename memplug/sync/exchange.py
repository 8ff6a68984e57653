"""Team memory: share the event log of chosen projects through PostgreSQL (docs/sync.md).

``memory sync`` sends this machine's purges (tombstones), pulls every other machine's
events and tombstones, then pushes this machine's new events of shared projects. What
arrives goes through the normal capture path and is derived here, so every machine
derives the same items from the same events; what leaves is redacted first.

This layer sits above the hosts: no hook can import it, so a hook never touches the
network.
"""

from __future__ import annotations

import re
import secrets
import socket
from collections.abc import Callable
from datetime import UTC, datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import Struct, field

from memplug.base.errors import UsageError
from memplug.base.redaction import redact_secrets
from memplug.base.refs import session_key
from memplug.base.text import sha256_hex
from memplug.capture.append import event_to_json
from memplug.capture.jsonl import dump_line, parse_line
from memplug.reports.purge import purge
from memplug.store.records import Remote
from memplug.sync.postgres import (
    PulledEvent,
    PulledTombstone,
    Server,
    ServerEvent,
    check_url,
)

if TYPE_CHECKING:
    from memplug.memory import Memory
    from memplug.store.records import EventRow

BATCH = 2_000
_ORIGIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
# Fields that name an event rather than say anything: never rewritten by redaction.
_IDENTITY = frozenset({"session_id", "seq", "type", "time"})

Progress = Callable[[str, int, int | None], None]


class SyncReport(Struct):
    pushed: int = 0
    pulled: int = 0
    conflicts: int = 0
    purges_applied: int = 0
    purges_sent: int = 0
    # Pulled events this file already held with the same content (a session both
    # machines captured); a cursor that delivered a row twice would show up here.
    already_held: int = 0
    sessions: set[str] = field(default_factory=set)

    def as_dict(self) -> dict[str, Any]:
        return {
            "pushed": self.pushed,
            "pulled": self.pulled,
            "conflicts": self.conflicts,
            "purges_applied": self.purges_applied,
            "purges_sent": self.purges_sent,
        }


def _remote(memory: Memory) -> Remote:
    remote = memory.store.sync.remote()
    if remote is None:
        raise UsageError("no sync server: run `memory sync init URL` first")
    return remote


def default_origin() -> str:
    """The host name and a random suffix: two machines with one name stay apart."""
    host = re.sub(r"[^A-Za-z0-9._-]", "-", socket.gethostname())[:40].strip("-.") or "machine"
    return f"{host}-{secrets.token_hex(3)}"


def init(memory: Memory, url: str, origin: str | None = None) -> dict[str, Any]:
    """Point this database at a server (its tables are made there if missing)."""
    check_url(url)
    # A machine keeps its origin across inits: its pushed rows stay its own.
    held = memory.store.sync.remote()
    origin = origin or (held.origin if held else default_origin())
    if not _ORIGIN.fullmatch(origin):
        raise UsageError(f"origin {origin!r}: letters, digits, '.', '_' or '-', at most 64")
    server = Server.connect(url)
    try:
        server.ensure_schema()
    finally:
        server.close()
    with memory.store.write_transaction():
        memory.store.sync.set_remote(url, origin)
    return {"url": url, "origin": origin}


def share(memory: Memory, project: str, shared: bool = True) -> dict[str, Any]:
    """Share a project (its events are pushed from the next sync on), or stop sharing."""
    _remote(memory)
    sync = memory.store.sync
    with memory.store.write_transaction():
        changed = sync.share(project) if shared else sync.unshare(project)
    known = bool(memory.store.events.project_sessions(project))
    return {"project": project, "shared": shared, "changed": changed, "known": known}


@lru_cache(maxsize=4096)
def _redacted_short(text: str) -> str:
    return redact_secrets(text, named=True)


def _redacted(value: Any) -> Any:
    if isinstance(value, str):
        # Short values (a role, a cwd, a tool name) repeat on every event: scan each once.
        return _redacted_short(value) if len(value) <= 256 else redact_secrets(value, named=True)
    if isinstance(value, list):
        return [_redacted(v) for v in value]
    if isinstance(value, dict):
        return {k: v if k in _IDENTITY else _redacted(v) for k, v in value.items()}
    return value


def outgoing(memory: Memory, row: EventRow, key: str) -> tuple[str, str]:
    """``(body, content hash)``: the event's generic JSONL line under its server key,
    every text redacted (``<private>`` spans were never stored)."""
    data = _redacted(event_to_json(row, memory.store.events.full_text(row)))
    data["session_id"] = key
    body = dump_line(data)
    return body, sha256_hex(body)


def run(
    memory: Memory, *, push: bool = True, pull: bool = True, progress: Progress | None = None
) -> SyncReport:
    """One sync: tombstones out, then pull, then push. Each batch commits on both sides
    before the next, so an interrupted sync is completed by running it again."""
    remote = _remote(memory)
    server = Server.connect(remote.url)
    report = SyncReport()
    try:
        server.ensure_schema()
        if push:
            _send_tombstones(memory, server, remote, report)
        if pull:
            _pull(memory, server, remote, report, progress)
        if push:
            _push(memory, server, remote, report, progress)
    finally:
        server.close()
    with memory.store.write_transaction():
        memory.store.sync.set_cursors(synced=True)
    return report


def _send_tombstones(memory: Memory, server: Server, remote: Remote, report: SyncReport) -> None:
    outbox = memory.store.sync.outbox()
    if not outbox:
        return
    server.send_tombstones([(t.session_key, t.before_epoch) for t in outbox], remote.origin)
    with memory.store.write_transaction():
        memory.store.sync.mark_sent([t.id for t in outbox])
    report.purges_sent += len(outbox)


def _push(
    memory: Memory, server: Server, remote: Remote, report: SyncReport, progress: Progress | None
) -> None:
    sync = memory.store.sync
    for project in sync.projects():
        done, after = 0, project.pushed_id
        while rows := sync.unpushed_events(project.project, after, BATCH):
            events = []
            for row, epoch in rows:
                key = session_key(row.session_id, remote.origin, False)
                body, digest = outgoing(memory, row, key)
                events.append(
                    ServerEvent(key, row.seq, remote.origin, project.project, epoch, digest, body)
                )
            result = server.push(events)
            after = rows[-1][0].id
            with memory.store.write_transaction():
                sync.set_pushed(project.project, after)
            report.pushed += result.pushed
            report.conflicts += result.conflicts
            done += len(rows)
            if progress is not None:
                progress(f"pushing {project.project}", done, project.unpushed)


def _local_id(key: str, origin: str) -> str:
    return key.removeprefix(f"{origin}/")


def _pull(
    memory: Memory, server: Server, remote: Remote, report: SyncReport, progress: Progress | None
) -> None:
    horizon = server.horizon()
    cursor = remote.pull_cursor
    while page := server.pull_events(cursor, horizon, remote.origin, BATCH):
        _take_page(memory, remote, page, report)
        cursor = page[-1].cursor
        if progress is not None:
            progress("pulling", report.pulled, None)
    if report.sessions:
        memory.derive(report.sessions)
    tombstones = server.pull_tombstones(remote.tombstone_cursor, horizon)
    for tombstone in tombstones:
        report.purges_applied += _apply_tombstone(memory, remote, tombstone)
        with memory.store.write_transaction():
            memory.store.sync.set_cursors(tombstones=tombstone.cursor)


def _take_page(memory: Memory, remote: Remote, page: list[PulledEvent], report: SyncReport) -> None:
    """Capture one page of pulled events and move the cursor past it, in one transaction
    (a rerun after a crash reads the page again; capture ignores what it already has)."""
    events, new_sessions, conflicts = [], [], 0
    events_store = memory.store.events
    seen: dict[str, bool] = {}
    with memory.store.write_transaction():
        for item in page:
            local = _local_id(item.session_key, remote.origin)
            if local not in seen:
                seen[local] = events_store.session(local) is not None
                if not seen[local]:
                    new_sessions.append((local, item.origin))
            held = events_store.get(local, item.seq) if seen[local] else None
            if held is not None:
                if outgoing(memory, held, item.session_key)[1] != item.content_hash:
                    conflicts += 1
                    report.conflicts += memory.store.sync.add_conflict(
                        local, item.seq, item.origin, item.content_hash, item.body
                    )
                continue
            event = parse_line(item.body.encode("utf-8"))
            events.append(msgspec.structs.replace(event, session_id=local))
        result = memory.store_events(events, origin="sync", bulk=True)
        memory.store.sync.mark_pulled(new_sessions)
        memory.store.sync.set_cursors(pull=page[-1].cursor)
    report.pulled += result.new
    report.already_held += len(page) - len(events) - conflicts + result.present
    report.sessions.update(result.sessions)


def _apply_tombstone(memory: Memory, remote: Remote, tombstone: PulledTombstone) -> int:
    """Carry out a purge another machine made; 1 when this file held any of it."""
    local = _local_id(tombstone.session_key, remote.origin)
    if tombstone.origin == remote.origin or memory.store.events.session(local) is None:
        return 0
    if tombstone.before_epoch is None:
        purge(memory, sessions=[local], tombstones=False)
    else:
        cutoff = datetime.fromtimestamp(tombstone.before_epoch, UTC).isoformat()
        purge(memory, before=cutoff, within=[local], tombstones=False)
    return 1
