"""`memory status`: what is in the database and whether it is healthy. Nothing is re-run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from memplug.base.paths import file_modes, hook_pending_file
from memplug.store.db import code_schema_version

if TYPE_CHECKING:
    from memplug.base.config import Config, LoadedConfig
    from memplug.semantic.service import Semantic
    from memplug.store.ports import Storage


class Opened(Protocol):
    """What a status report reads: an open store and the configuration it runs under
    (``memplug.memory.Memory`` is one)."""

    @property
    def store(self) -> Storage: ...
    @property
    def config(self) -> Config: ...
    @property
    def loaded(self) -> LoadedConfig: ...
    @property
    def semantic(self) -> Semantic: ...
    def derivation_state(self) -> dict[str, Any]: ...


def database_bytes(path: Path) -> int:
    total = 0
    for suffix in ("", "-wal"):
        candidate = Path(str(path) + suffix)
        if candidate.exists():
            total += candidate.stat().st_size
    return total


def missing_status(path: Path) -> dict[str, Any]:
    return {"exists": False, "path": str(path), "hook_pending": hook_pending(path)}


def hook_pending(path: Path, latest: int = 3) -> dict[str, Any]:
    """Errors hooks kept beside the database because it could not take them (a bad
    configuration stops every hook before it opens the database): their count and the
    newest few. A hook that later opens the database moves them into ``error_log``."""
    try:
        lines = hook_pending_file(path).read_text(encoding="utf-8").splitlines()
    except OSError:
        lines = []
    messages = []
    for raw in lines:
        try:
            messages.append(str(json.loads(raw)["message"]))
        except (ValueError, KeyError, TypeError):
            continue  # a torn line from a crashed writer says nothing usable
    return {"count": len(messages), "latest": messages[-latest:]}


def latest_validation(memory: Opened, session_id: str | None = None) -> dict[str, Any] | None:
    """The newest validation run (of a session), as ``memory validate --json`` prints it."""
    record = memory.store.skills.latest_validation(session_id)
    if record is None:
        return None
    return record.as_dict(memory.config.validation.max_repair_attempts)


def derivation(memory: Opened) -> dict[str, Any]:
    """Which code derived the memory, and when it is stale what will happen to it."""
    from memplug.derive.extract import PLANNED_EVENTS_PER_MS

    state = memory.derivation_state()
    made, code, moving = state["derived_with"], state["code"], state["rederiving"]
    report: dict[str, Any] = {"stale": state["stale"], "derived_with": made, "code": code}
    if not state["stale"]:
        return report
    items = memory.store.items
    after = (moving or {}).get("after") if (moving or {}).get("to") == code else None
    events = items.event_count(after=after)
    report["changed"] = sorted(
        k for k in {*code, *(made or {})} if (made or {}).get(k) != code.get(k)
    )
    report["events_left"] = events
    report["estimated_seconds"] = round(events / PLANNED_EVENTS_PER_MS / 1000, 1)
    seconds = report["estimated_seconds"]
    report["next"] = (
        f"the next memory command other than status derives {events:,} events again "
        f"(about {seconds if seconds >= 1 else 'a'} second{'s' if seconds >= 1 else ''}), "
        "keeping retractions and promotions; until then each hook does a bounded part"
    )
    return report


def sync_status(store: Storage) -> dict[str, Any] | None:
    """Where this database syncs and which projects it shares; None when it does not."""
    remote = store.sync.remote()
    if remote is None:
        return None
    return {
        "url": remote.url,
        "origin": remote.origin,
        "last_sync_at": remote.last_sync_at,
        "projects": [{"project": p.project, "unpushed": p.unpushed} for p in store.sync.projects()],
        **store.sync.summary(),
    }


def status(memory: Opened, *, check_integrity: bool = True) -> dict[str, Any]:
    store = memory.store
    path = store.path
    counts = store.counts()
    latest_assembly = None
    if counts["assembly_logs"]:
        latest_assembly = store.logs.latest_summary()
    compactions = store.events.compaction_counts()
    return {
        "exists": True,
        "path": str(path),
        "size_bytes": database_bytes(path),
        "schema_version": store.schema_version(),
        "code_schema_version": code_schema_version(),
        "permissions": file_modes(path),
        "counts": counts,
        "sessions": store.events.sessions(),
        "budget": {
            "min_budget_tokens": memory.config.assembly.min_budget_tokens,
            "soft_budget_tokens": memory.config.assembly.soft_budget_tokens,
            "budget_tokens": memory.config.assembly.budget_tokens,
        },
        "compaction": {
            "events": compactions,
            "detected": bool(compactions),
        },
        "latest_assembly": latest_assembly,
        "latest_validation": latest_validation(memory) if counts["validation_logs"] else None,
        # The semantic provider, its model, vector counts and lag (docs/semantic.md).
        "semantic": memory.semantic.status(),
        # Whether the derived memory was made by this code's rules (docs/storage.md).
        "derivation": derivation(memory),
        # Where each host transcript was last read (Claude Code hooks).
        "host_cursors": store.hosts.cursors(),
        # Team memory (docs/sync.md): the server, this machine's origin, shared projects.
        "sync": sync_status(store),
        "latest_errors": store.events.latest_errors(),
        "hook_pending": hook_pending(path),
        "integrity": store.integrity_check() if check_integrity else None,
        "config_file": memory.loaded.file,
    }
