"""The resident project core: what must reach the model whatever the query's words.

A small, deterministic section (assembly section 0, ``memory core``) made of the
standing memory of a scope — a project's sessions (a session with no project: itself),
or every session for the global core: its active constraints, the task state of its
latest session, its latest decisions and its open questions, each line with its
``[mem …]`` / ``[ev …]`` provenance.

Lines come in one documented total order (see :func:`ordered`) and are taken in that
order while they fit ``assembly.coreBudgetTokens``; the rest are omitted with a reason.
The ordered lines are cached (``CoreStore``) under the version of their inputs — item
lifecycle, item rows, task states in scope — and the labels they were rendered with,
so a step reads a cached core instead of making it again.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from msgspec import Struct, field
from msgspec.structs import asdict

from memplug.base.refs import EventRef
from memplug.base.text import estimate_tokens, short_hash
from memplug.base.vocab import choice_keys_agree
from memplug.recall.assemble import (
    OVER_CORE_BUDGET,
    REPLACED_LATER,
    AssemblyRequest,
    TaskLine,
    item_candidate,
    item_line,
    labels_for,
    one_line,
    task_line,
    task_state_from,
)
from memplug.recall.retrieve.models import RankedItem

if TYPE_CHECKING:
    from memplug.base.config import Config
    from memplug.store.ports import Storage
    from memplug.store.records import ItemRow

# The order of the core, by kind: rules that must never be broken, where the work
# stands, what was decided, what is still open.
CORE_ORDER: tuple[str, ...] = ("constraint", "task", "decision", "open_question")
ITEM_KINDS: tuple[str, ...] = ("constraint", "decision", "open_question")
# What the user stated or confirmed; an unconfirmed proposal is never standing memory.
CORE_EVIDENCE: tuple[str, ...] = ("user_explicit", "skill", "artifact_verified", "inferred")
# At most this many candidate lines are kept in order (the budget takes far fewer).
MAX_LINES = 200
# Bumped when lines are made or rendered differently: a core cached by older code is
# then made again rather than read back.
FORMAT = 2
# How long a step waits for the write lock to cache a core it has just made.
CACHE_WAIT_MS = 50
WHY = {
    "constraint": "active constraint",
    "decision": "decision, newest first",
    "open_question": "open question, newest first",
}


class ProjectCoreLine(Struct, frozen=True):
    """One candidate line of the core, rendered, with what it costs and why it is there."""

    ref: str
    kind: str
    text: str
    line: str
    why: str
    tokens: int
    # SESSION:SEQ of the events it says (a line whose sources are all in the model's
    # context is left out of a step's message).
    sources: tuple[str, ...] = ()
    session_id: str = ""
    # The newer item of another session that states the same subject (a later choice of
    # the same kind): this line is then left out, with that reason.
    replaced_by: str = ""


class Core(Struct, frozen=True):
    """The ordered candidate lines of one scope, and the selection under a budget."""

    scope: str
    project: str | None
    lines: tuple[ProjectCoreLine, ...]
    version: str
    cached: bool = False

    def select(
        self, budget: int, skip: Callable[[ProjectCoreLine], str | None] | None = None
    ) -> tuple[list[ProjectCoreLine], list[tuple[ProjectCoreLine, str]]]:
        """Lines in order while they fit ``budget``; a line that does not fit is omitted
        and later, smaller ones may still be taken. ``skip`` names a reason to leave a
        line out before it costs anything (visible in context, shown elsewhere)."""
        chosen: list[ProjectCoreLine] = []
        omitted: list[tuple[ProjectCoreLine, str]] = []
        left = budget
        for line in self.lines:
            reason = REPLACED_LATER if line.replaced_by else None
            if reason is None and skip is not None:
                reason = skip(line)
            if reason is None and line.tokens > left:
                reason = OVER_CORE_BUDGET
            if reason is not None:
                omitted.append((line, reason))
                continue
            chosen.append(line)
            left -= line.tokens
        return chosen, omitted

    def as_dict(self, budget: int) -> dict[str, Any]:
        """The documented JSON shape of ``memory core --json``."""
        chosen, omitted = self.select(budget)
        return {
            "project": self.project,
            "scope": self.scope,
            "lines": [{"ref": c.ref, "kind": c.kind, "text": c.text, "why": c.why} for c in chosen],
            "tokens": sum(c.tokens for c in chosen),
            "budget": budget,
            "omitted": [_omitted(c, r) for c, r in omitted],
            "version": self.version,
        }


class CoreScope(Struct):
    """Which sessions a core is made from, and the key it is cached under."""

    key: str
    project: str | None
    session_ids: tuple[str, ...] | None = field(default=None)


def core_for(store: Storage, config: Config, request: AssemblyRequest) -> Core | None:
    """The resident core a step gets (assembly's core provider): its session's scope, or
    the project the host names when the session has no events yet; None when off."""
    if config.assembly.core_budget_tokens <= 0:
        return None
    scope = scope_for_session(store, request.session_id, config.assembly.scope)
    if scope.session_ids == () and request.project is not None:
        scope = scope_for_project(store, request.project)
    return resident_core(store, config, scope)


def scope_for_session(store: Storage, session_id: str, mode: str) -> CoreScope:
    """The core a step of ``session_id`` gets under ``assembly.scope`` = ``mode``."""
    exists, project = store.search.session_project(session_id)
    if mode == "global":
        return CoreScope("global", None, None)
    if mode == "project" and project is not None:
        return scope_for_project(store, project)
    return CoreScope(f"session:{session_id}", project, (session_id,) if exists else ())


def scope_for_project(store: Storage, project: str | None) -> CoreScope:
    """A project's core, or (``None``) the global one over every session."""
    if project is None:
        return CoreScope("global", None, None)
    return CoreScope(f"project:{project}", project, tuple(store.search.project_sessions(project)))


def resident_core(store: Storage, config: Config, scope: CoreScope) -> Core:
    """The scope's core: from the cache when its inputs have not changed since it was
    made, else made now and cached (best effort: a busy or read-only file only costs
    the next step the same work)."""
    labels = labels_for(config.assembly.locale)
    rendering = short_hash(repr((FORMAT, sorted(labels.items()))))
    version = f"{store.core.version(scope.session_ids)}|{rendering}"
    cached = store.core.cached(scope.key)
    if cached is not None and cached.get("version") == version:
        lines = tuple(ProjectCoreLine(**_line_fields(d)) for d in cached.get("lines") or ())
        return Core(scope.key, scope.project, lines, version, cached=True)
    lines = tuple(ordered(store, scope, labels))
    with contextlib.suppress(Exception):
        payload = {"version": version, "lines": [asdict(line) for line in lines]}
        store.core.save(scope.key, payload, wait_ms=CACHE_WAIT_MS)
    return Core(scope.key, scope.project, lines, version)


def _line_fields(data: Mapping[str, Any]) -> dict[str, Any]:
    fields = dict(data)
    fields["sources"] = tuple(fields.get("sources") or ())
    return fields


def ordered(store: Storage, scope: CoreScope, labels: Mapping[str, str]) -> list[ProjectCoreLine]:
    """Every candidate line, in the core's total order: by kind (:data:`CORE_ORDER`);
    task lines in field order (goal, done, blocked, next); items newest first by the
    host time of the event that stated them, then by session id, seq and item id (all
    descending, so the order is total and the same in every database)."""
    # Only the first MAX_LINES lines are kept, so at most that many of a kind are read
    # whole (the store returns them in the order above) and lines are made only until
    # there are MAX_LINES: a project's items run to thousands.
    rows = store.core.items(scope.session_ids, ITEM_KINDS, CORE_EVIDENCE, MAX_LINES)
    by_kind: dict[str, list[ItemRow]] = {kind: [] for kind in ITEM_KINDS}
    for row, _ in rows:
        by_kind[row.kind].append(row)
    out: list[ProjectCoreLine] = []
    for kind in CORE_ORDER:
        if kind == "task":
            out.extend(_task_lines(store, scope, labels))
        else:
            room = max(0, MAX_LINES - len(out))
            newer = _replacements(by_kind[kind][:room])
            out.extend(
                _item_line(row, labels, newer.get(row.id, "")) for row in by_kind[kind][:room]
            )
    return out[:MAX_LINES]


def _replacements(rows: list[ItemRow]) -> dict[str, str]:
    """Which rows (newest first) a newer row of another session replaces: the same
    subject key, or a choice key that names the same choice (``choice_keys_agree``).
    Supersession inside a session is the extractor's; across sessions it is read here,
    so that each session's derived rows stay a function of its own events."""
    replaced: dict[str, str] = {}
    for index, row in enumerate(rows):
        if not row.subject_key:
            continue
        for newer in rows[:index]:
            key = newer.subject_key or ""
            same = key == row.subject_key or choice_keys_agree(key, row.subject_key)
            if same and newer.session_id != row.session_id and newer.id not in replaced:
                replaced[row.id] = newer.id
                break
    return replaced


def _omitted(line: ProjectCoreLine, reason: str) -> dict[str, Any]:
    out = {"ref": line.ref, "kind": line.kind, "reason": reason}
    if line.replaced_by:
        out["by"] = line.replaced_by
    return out


def _item_line(row: ItemRow, labels: Mapping[str, str], replaced_by: str = "") -> ProjectCoreLine:
    item = item_candidate(RankedItem.of(row))
    line = item_line(item, labels)
    return ProjectCoreLine(
        ref=row.id,
        kind=row.kind,
        text=one_line(row.content),
        line=line,
        why=WHY[row.kind],
        tokens=estimate_tokens(line + "\n"),
        sources=tuple(f"{s}:{n}" for s, n in item.source_refs),
        session_id=row.session_id,
        replaced_by=replaced_by,
    )


def _task_lines(
    store: Storage, scope: CoreScope, labels: Mapping[str, str]
) -> list[ProjectCoreLine]:
    session = store.core.latest_task_session(scope.session_ids)
    if session is None:
        return []
    state = task_state_from(store.items.task_state(session))
    out: list[ProjectCoreLine] = []
    counters: dict[str, int] = {}
    for entry in state.lines:
        index = counters.get(entry.field, 0)
        counters[entry.field] = index + 1
        line = task_line(entry, labels)
        out.append(
            ProjectCoreLine(
                ref=f"task:{session}:{entry.field}:{index}",
                kind="task",
                text=one_line(entry.text),
                line=line,
                why=f"task state ({entry.field}) of {session}, the latest in scope",
                tokens=estimate_tokens(line + "\n"),
                sources=_sources(entry),
                session_id=session,
            )
        )
    return out


def _sources(entry: TaskLine) -> tuple[str, ...]:
    return (entry.ref,) if entry.ref and EventRef.find(entry.ref) is not None else ()


__all__ = [
    "CORE_ORDER",
    "OVER_CORE_BUDGET",
    "Core",
    "CoreScope",
    "ProjectCoreLine",
    "core_for",
    "resident_core",
    "scope_for_project",
    "scope_for_session",
]
