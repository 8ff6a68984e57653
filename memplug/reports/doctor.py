"""`memory doctor`: what is wrong with a database, and what is safe to repair.

Each check is one line a person can act on: its state, what was found, and the command
that helps. Repairs are the ones that lose nothing: rebuilding a full-text index from
its table, deriving memory again from the events, and copying what can still be read
out of a corrupt file into a new one (``Memory.salvage``). The original file is never
written by a salvage; the new file's name is said, for the person to move into place.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from msgspec import Struct

from memplug.base.paths import file_modes, writable

if TYPE_CHECKING:
    from memplug.store.ports import Storage

State = Literal["ok", "warn", "fail", "fixed", "info"]


class Check(Struct, frozen=True):
    """One finding: ``name`` (a fixed word), its state, the detail and the way forward."""

    name: str
    state: State
    detail: str
    fix: str | None = None


class Examined(Protocol):
    """What the checks read and the repairs run (``memplug.memory.Memory`` is one)."""

    @property
    def store(self) -> Storage: ...
    def derivation_state(self) -> dict[str, Any]: ...
    def derive(self, session_ids: Any, *, upgrade_ms: float | None = ...) -> str | None: ...
    def upgrade_derived(self, *, budget_ms: float | None = ..., progress: Any = ...) -> Any: ...


def file_checks(path: Path) -> list[Check]:
    """Whether the file is there, a database at all, private, and writable."""
    if not path.exists():
        return [
            Check("file", "fail", f"no database at {path}", "a hook or `memory import` makes one")
        ]
    size = path.stat().st_size
    if size == 0:
        return [Check("file", "fail", f"{path} is empty", "a hook or `memory import` makes one")]
    checks = [Check("file", "ok", f"{path} ({size:,} bytes)")]
    modes = file_modes(path)
    shown = f"file {modes['file']}, folder {modes['dir']}"
    if not modes["private"]:
        fix = f"chmod 600 {path}; chmod 700 {path.parent}"
        checks.append(Check("modes", "warn", f"others may read it: {shown}", fix))
    else:
        checks.append(Check("modes", "ok", f"private: {shown}"))
    if not writable(path):
        detail = "this user cannot write it: memory is read and shown, nothing new is kept"
        checks.append(Check("writable", "warn", detail, f"check the owner of {path}"))
    return checks


def database_checks(memory: Examined, *, writable: bool) -> list[Check]:
    """Integrity, the full-text indexes, the schema and the derivation state."""
    store = memory.store
    found = store.integrity_check()
    if found == ["ok"]:
        checks = [Check("integrity", "ok", "SQLite finds nothing wrong")]
    else:
        detail = "; ".join(found[:3]) + (f" (and {len(found) - 3} more)" if len(found) > 3 else "")
        checks = [Check("integrity", "fail", detail, "memory doctor --repair (a salvage copy)")]
    if writable:
        for index, verdict in store.admin.check_indexes().items():
            state: State = "ok" if verdict == "ok" else "fail"
            checks.append(
                Check(
                    f"index {index}",
                    state,
                    verdict,
                    None if state == "ok" else "memory doctor --repair",
                )
            )
    else:
        checks.append(Check("indexes", "info", "not checked: the file is read-only here"))
    derivation = memory.derivation_state()
    lagging = store.events.lagging_sessions()
    if derivation["stale"] or lagging:
        detail = "derived by other rules" if derivation["stale"] else ""
        if lagging:
            detail += (
                "; " if detail else ""
            ) + f"{len(lagging)} session(s) not derived to their end"
        checks.append(Check("derivation", "warn", detail, "memory doctor --repair"))
    else:
        checks.append(Check("derivation", "ok", "current, every session derived"))
    return checks


def repair(memory: Examined, checks: list[Check]) -> list[Check]:
    """The checks again, each one this repaired marked ``fixed``."""
    store = memory.store
    out = []
    for check in checks:
        if check.state == "fail" and check.name.startswith("index "):
            store.admin.rebuild_index(check.name.removeprefix("index "))
            verdict = store.admin.check_indexes()[check.name.removeprefix("index ")]
            out.append(
                Check(check.name, "fixed" if verdict == "ok" else "fail", f"rebuilt: {verdict}")
            )
        elif check.name == "derivation" and check.state == "warn":
            memory.upgrade_derived(budget_ms=None)
            error = memory.derive(store.events.lagging_sessions(), upgrade_ms=None)
            out.append(Check(check.name, "fail" if error else "fixed", error or "derived again"))
        else:
            out.append(check)
    return out


def salvage_name(path: Path) -> Path:
    """A new file beside ``path`` for a salvage: ``NAME.salvaged.sqlite``, numbered after."""
    candidate = path.with_name(f"{path.stem}.salvaged{path.suffix or '.sqlite'}")
    number = 2
    while candidate.exists():
        candidate = path.with_name(f"{path.stem}.salvaged-{number}{path.suffix or '.sqlite'}")
        number += 1
    return candidate


def worst(checks: list[Check]) -> State:
    states = {c.state for c in checks}
    return "fail" if "fail" in states else "warn" if "warn" in states else "ok"
