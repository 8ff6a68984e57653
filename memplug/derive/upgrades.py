"""Derived state made by other code: which code derived it, and the pass that derives
it again, a session at a time, when the rules or the extractor change (docs/storage.md,
"Upgrades"). ``Memory`` wires it: a write that captured events gives it a bounded step,
a command a person runs lets it finish.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msgspec import Struct, field

from memplug.base.errors import DatabaseBusy

if TYPE_CHECKING:
    from memplug.base.config import Config
    from memplug.derive.extract import Extractor
    from memplug.store.ports import Storage

# The files that define the versions derived state records (the cue rules, the
# extractor, its followers). Their bytes are recorded beside the versions, so a command
# tells that nothing changed without importing (and compiling) the rules.
DERIVING_SOURCES: tuple[str, ...] = (
    "cues",
    "extract.py",
    "rederive.py",
    "dialogue.py",
    "timeline.py",
    "graph.py",
    "work.py",
)

SessionProgress = Callable[[int, int, str], None]


class UpgradeReport(Struct):
    """What :meth:`Upgrades.run` did. ``state``: ``current`` (nothing to do), ``done``
    (this call finished it), ``partial`` (the budget ran out; the next write or command
    goes on), ``busy`` (another process held the lock: it is likely doing the same),
    ``off`` (extraction is disabled)."""

    state: str
    sessions: list[str] = field(default_factory=list)
    events: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"state": self.state, "sessions": self.sessions, "events": self.events}


class Upgrades:
    """The derivation record of one open database (``meta.derived_with``, and the pass
    under way in ``meta.rederiving``). ``extractor`` is asked for only when the record
    does not already say the state is this code's: a command's check on open stays cheap."""

    def __init__(self, store: Storage, config: Config, extractor: Callable[[], Extractor]):
        self.store = store
        self.config = config
        self._extractor = extractor

    def state(self) -> dict[str, Any]:
        """Which code derived the state, against this code's versions (``Extractor.
        versions``); ``stale`` when they differ or a re-derivation is under way."""
        items = self.store.items
        recorded = items.derivation("derived_with")
        made_by = None if recorded is None else {k: v for k, v in recorded.items() if k != "source"}
        if made_by is not None and self.known_current():
            return {"stale": False, "code": made_by, "derived_with": made_by, "rederiving": None}
        code = self._extractor().versions()
        moving = items.derivation("rederiving")
        stale = self.config.extraction.enabled and (made_by != code or moving is not None)
        if stale and made_by is None and moving is None:
            stale = items.derived_anything()  # never derived: catch-up derives it anew
        return {"stale": stale, "code": code, "derived_with": made_by, "rederiving": moving}

    def known_current(self) -> bool:
        """Whether the recorded versions are this code's, told from the deriving source
        files' digest without importing them (a command's cheap check on open)."""
        items = self.store.items
        made = items.derivation("derived_with")
        return (
            made is not None
            and items.derivation("rederiving") is None
            and made.get("source") == source_digest()
            and made.get("proposals") == self.config.extraction.extract_proposals
        )

    def stamp(self, versions: dict[str, Any]) -> None:
        """Record, inside the caller's transaction, that ``versions`` made the state."""
        self.store.items.set_derivation("derived_with", {**versions, "source": source_digest()})
        self.store.items.set_derivation("rederiving", None)

    def run(
        self, *, budget_ms: float | None = None, progress: SessionProgress | None = None
    ) -> UpgradeReport:
        """Derive again, session by session in name order, what code with other versions
        derived; within ``budget_ms`` (None: to the end).

        Each session is one write transaction that also moves the pass's cursor
        (``meta.rederiving``), so a pass that is killed resumes where it stopped, and
        processes sharing the file take turns: each re-reads the cursor under the lock.
        A session whose planned cost does not fit what is left of the budget is left for
        the next write, or for the next command a person runs."""
        if not self.config.extraction.enabled:
            return UpgradeReport("off")
        report = UpgradeReport("partial")
        try:
            self._pass(report, budget_ms, progress)
        except DatabaseBusy:
            # Another process holds the lock, most likely doing this same work.
            report.state = "busy"
        return report

    def _pass(
        self, report: UpgradeReport, budget_ms: float | None, progress: SessionProgress | None
    ) -> None:
        state = self.state()
        if not state["stale"]:
            report.state = "current"
            if not self.known_current():
                # Never derived (what is derived from now on is this code's), or the same
                # versions from edited source files: recorded, so the next check is cheap.
                with self.store.write_transaction():
                    self.stamp(state["code"])
            return
        started = time.monotonic()
        total = 0
        if progress is not None:
            moving = self.store.items.derivation("rederiving") or {}
            after = moving.get("after") or ""
            total = sum(1 for s in self.store.items.derived_sessions() if s > after)
        while True:
            spent = (time.monotonic() - started) * 1000
            left = None if budget_ms is None else budget_ms - spent
            name = self._step(report, left, report.events / spent if spent else None)
            if name is None:
                return
            if progress is not None:
                progress(min(len(report.sessions) - 1, max(total - 1, 0)), total, name)

    def _step(
        self, report: UpgradeReport, left_ms: float | None, seen_rate: float | None
    ) -> str | None:
        """Re-derive the pass's next session in one transaction, or start or finish the
        pass; the session's name, or None when there is nothing more to do now. A session
        is planned at the slower of the planned rate and the rate this pass has seen
        (events per ms), so a loaded machine does not overrun the budget."""
        from memplug.derive.extract import PLANNED_EVENTS_PER_MS

        rate = min(PLANNED_EVENTS_PER_MS, seen_rate or PLANNED_EVENTS_PER_MS)
        extractor = self._extractor()
        items, code = self.store.items, extractor.versions()
        with self.store.write_transaction():
            state = self.state()
            if not state["stale"]:
                report.state = "done" if report.sessions else "current"
                return None
            moving = state["rederiving"]
            if moving is None or moving.get("to") != code:
                moving = {"to": code, "after": None}
            name = items.next_derived_session(moving["after"])
            if name is None:
                self.stamp(code)
                report.state = "done"
                return None
            events = items.event_count(name)
            if left_ms is not None and events / rate > left_ms:
                return None  # left for later: the report stays "partial"
            extractor.rederive(name)
            # Cached cores quote items of any session in their scope.
            self.store.core.clear()
            items.set_derivation("rederiving", {**moving, "after": name})
        report.sessions.append(name)
        report.events += events
        return name


@cache
def source_digest() -> str:
    """A digest of the files in ``DERIVING_SOURCES`` (read once per process)."""
    from hashlib import sha256

    root = Path(__file__).resolve().parent
    digest = sha256()
    for name in DERIVING_SOURCES:
        path = root / name
        for source in sorted(path.glob("*.py")) if path.is_dir() else [path]:
            digest.update(f"{source.name}\0".encode() + source.read_bytes() + b"\0")
    return digest.hexdigest()[:16]
