"""Running extraction and deriving a session again: the catch-up after capture, the
rebuild, the re-derivation an upgrade plans (docs/storage.md), and what derived state
records of the logic that made it (the extractor's version, the rules' digest, each
follower's name and version). :class:`memplug.derive.extract.Extractor` is this loop plus the
rules' effects on items, task state and a person's actions."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any, Protocol

from msgspec import Struct, field

from memplug.base.clock import utc_now
from memplug.base.config import Config
from memplug.base.errors import NotFound
from memplug.base.paths import project_key_of
from memplug.base.text import short_hash
from memplug.derive.cues import ALL_RULES, Candidate, analysed
from memplug.derive.cues.categories import categories_version
from memplug.derive.cues.structural import (
    EDIT_TOOLS,
    REMEMBER_SOURCE,
    STRUCTURAL_RULES,
    STRUCTURAL_TOOLS,
    Reading,
    edited_memory_file,
    read_record,
    remembered,
)
from memplug.derive.dialogue import TOOL_CALL, TOOL_RESULT, Dialogue, is_user_statement
from memplug.store.ports import ItemPort, Storage
from memplug.store.records import ActionRow, EventRow, ItemFact

# Only these event types are ever read; everything else is evidence, not statements.
READ_TYPES: tuple[str, ...] = ("user/message", "assistant/message")
# A failed event is retried on each capture of its session this many times; after
# that only `memory rebuild` retries it, so one bad event cannot make every capture
# re-derive its whole session forever.
LIVE_RETRIES = 5
# The extractor's own logic beside its rules (corrections, supersession, disputes, task
# state, replayed actions): raise it with a change that can change derived rows, and
# every database derived by the older logic is derived again (docs/storage.md).
EXTRACTOR_VERSION = 1
# The rate a re-derivation is planned with, events per millisecond: what a rebuild
# reaches on a shared, loaded two-core machine (docs/benchmarks.md, "Upgrades"); a
# bounded step also reads the clock after each session.
PLANNED_EVENTS_PER_MS = 5.0


class ExtractReport(Struct):
    """What one run did; ``skipped`` lists cues that changed nothing, and why."""

    sessions: list[str] = field(default_factory=list)
    events: int = 0
    created: int = 0
    revised: int = 0
    reactivated: int = 0
    superseded: int = 0
    disputed: int = 0
    retracted: int = 0
    promoted: int = 0
    task_updates: int = 0
    actions: int = 0
    rederived: list[str] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)

    _COUNTS = (
        "events created revised reactivated superseded disputed retracted promoted "
        "task_updates actions"
    ).split()

    def merge(self, other: ExtractReport) -> None:
        for name in self._COUNTS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.skipped.extend(other.skipped)

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"sessions": self.sessions}
        data.update((name, getattr(self, name)) for name in self._COUNTS)
        data.update(rederived=self.rederived, failed=self.failed, skipped=self.skipped)
        return data


class Follower(Protocol):
    """A view derived from the same events right after extraction (the timeline, the
    graph): it sees every event of a session once, in seq order, with the items that
    event created, and is cleared whenever the session is derived again.

    ``name`` and ``version`` are recorded with the derived state: raise the version with
    a change that can change the follower's rows, and databases derive them again."""

    name: str
    version: int

    def clear(self, session_id: str) -> None: ...

    def follow(self, event: EventRow, items: Sequence[ItemFact]) -> None:
        """``items``: the memory items ``event`` created, whatever their status now."""

    def prepare(self, event: EventRow) -> None:
        """Make the calls of served pure functions that following ``event`` will make
        (memplug/derive/ahead.py); nothing is written."""


# How events are keyed to projects (see versions()).
PROJECT_KEYS = 1


class Deriving:
    """The running half of the extractor: which events are read, in which order, with
    which dialogue, and what is recorded when one fails. What a statement or an action
    changes is the subclass's (``_apply``, ``_replay``)."""

    store: Storage
    items: ItemPort
    config: Config
    followers: tuple[Follower, ...]

    def versions(self) -> dict[str, Any]:
        """What the derived state depends on besides events and a person's actions: this
        extractor's version, a digest of every cue rule's id and version, each follower's
        version, and the one setting that changes what is derived."""
        versions: dict[str, Any] = {
            "extractor": EXTRACTOR_VERSION,
            "rules": short_hash(*sorted(rule.ref for rule in ALL_RULES)),
            "structure": short_hash(*sorted(rule.ref for rule in STRUCTURAL_RULES)),
            "categories": categories_version(),
            "proposals": self.config.extraction.extract_proposals,
            # 1: projects are git repositories; a database keyed by folders is re-keyed
            # as each session is derived again (_rekey).
            "projects": PROJECT_KEYS,
        }
        versions.update((follower.name, follower.version) for follower in self.followers)
        return versions

    # -- running -----------------------------------------------------------------------

    def run(
        self, session_ids: Iterable[str], *, before: Callable[[str], None] | None = None
    ) -> ExtractReport:
        """Extract what each session received since extraction last read it (after
        capture), in session order; ``before(session)`` is called as each one starts."""
        report = ExtractReport()
        for session_id in sorted(set(session_ids)):
            if before is not None:
                before(session_id)
            with self.store.write_transaction():
                self._catch_up(session_id, report)
        return report

    def rebuild(
        self,
        session_id: str | None = None,
        *,
        progress: Callable[[int, int, str], None] | None = None,
        before: Callable[[str], None] | None = None,
    ) -> ExtractReport:
        """Drop derived state and derive it again from events and recorded actions, in
        session order; ``progress(done, total, session)`` and ``before(session)`` are
        called as each session starts."""
        report = ExtractReport()
        with self.store.write_transaction():
            if session_id is not None:
                if session_id not in self.items.derived_sessions():
                    raise NotFound(f"no session {session_id!r} in this database")
                sessions = [session_id]
            else:
                sessions = self.items.derived_sessions()
                # Emptied first, so that row numbers start again as in a fresh database.
                for name in sessions:
                    self.items.clear_derived(name)
            for done, name in enumerate(sessions):
                if progress is not None:
                    progress(done, len(sessions), name)
                if before is not None:
                    before(name)
                self._rederive(name, report)
            # A new extractor may derive other items from the same events.
            self.store.core.clear()
        return report

    def rederive(self, session_id: str) -> ExtractReport:
        """Derive one session again from its events and recorded actions (a step of an
        upgrade; the caller's transaction, if any, holds it)."""
        report = ExtractReport()
        with self.store.write_transaction():
            self._rederive(session_id, report)
        return report

    def _rekey(self, session_id: str) -> None:
        """Events an older memplug stored under their folder go under their repository
        (``project_key_of`` on this machine), before the session is derived again, so
        its derived rows are the repository's too (docs/events.md, "Projects")."""
        events = self.store.events
        for project, cwd in events.places(session_id):
            key = project_key_of(project, cwd)
            if key != project:
                events.rekey(session_id, (project, cwd), key)

    def _catch_up(self, session_id: str, report: ExtractReport) -> None:
        through = self.items.extracted_through(session_id)
        if self.items.newest_seq(session_id) is None:
            return
        retry = [p for p in self.items.pending(session_id) if p["attempts"] < LIVE_RETRIES]
        # Anything but plain appending is handled by deriving the session again in seq
        # order: the one way the result cannot depend on delivery or failure history.
        if through is None or retry or self.items.arrived_late(session_id, through):
            self._rederive(session_id, report)
            return
        report.sessions.append(session_id)
        pending = {p["seq"] for p in self.items.pending(session_id)}
        events = self._events(session_id, through)
        dialogue = Dialogue.before(self.store.events, session_id, through + 1)
        for event in events:
            if event.type in READ_TYPES:
                self._process_safely(event, report, pending, dialogue)
            elif is_structural(event):
                self._guarded(event, report, pending, partial(self._tool_record, event))
            dialogue.see(event)
        self._follow(session_id, events, through, report, pending)
        self.items.mark_extracted(session_id)

    def _rederive(self, session_id: str, report: ExtractReport) -> None:
        self._rekey(session_id)
        self.items.clear_derived(session_id)
        report.sessions.append(session_id)
        report.rederived.append(session_id)
        actions = deque(
            sorted(self.items.session_actions(session_id), key=lambda a: (_anchor(a), a.id))
        )
        pending = {p["seq"] for p in self.items.pending(session_id)}
        events = self._events(session_id, -1)
        dialogue = Dialogue()
        for event in events:
            structural = is_structural(event)
            if event.type not in READ_TYPES and not structural:
                dialogue.see(event)
                continue
            # An action taken when extraction stood at seq N comes after event N and
            # before everything later, exactly as it happened.
            while actions and _anchor(actions[0]) < event.seq:
                self._replay(actions.popleft(), report)
            if structural:
                self._guarded(event, report, pending, partial(self._tool_record, event))
            else:
                self._process_safely(event, report, pending, dialogue)
            dialogue.see(event)
        while actions:
            self._replay(actions.popleft(), report)
        for follower in self.followers:
            follower.clear(session_id)
        self._follow(session_id, events, -1, report, pending)
        self.items.mark_extracted(session_id)

    def _process_safely(
        self,
        event: EventRow,
        report: ExtractReport,
        pending: set[int],
        dialogue: Dialogue,
    ) -> None:
        self._guarded(event, report, pending, lambda: self._statement(event, dialogue))

    def _guarded(
        self,
        event: EventRow,
        report: ExtractReport,
        pending: set[int],
        derive: Callable[[], ExtractReport | None],
    ) -> None:
        """Derive from one event; a failure is queued and the rest goes on.

        The broad catch is the point: whatever goes wrong with one event (a bug in a
        rule, an odd text) must not stop its session, and it is recorded, not hidden.
        """
        try:
            local = derive()
        except Exception as error:
            message = f"{type(error).__name__}: {error}"
            self.items.queue_failure(event.session_id, event.seq, message, utc_now())
            report.failed.append(
                {"session_id": event.session_id, "seq": event.seq, "error": message}
            )
            return
        report.events += 1
        if local is not None:
            report.merge(local)
        if event.seq in pending:
            self.items.clear_pending(event.session_id, event.seq)

    def _statement(self, event: EventRow, dialogue: Dialogue) -> ExtractReport | None:
        """A message's cues, applied inside a savepoint (a report only when it had any:
        most events have none)."""
        if _remembers(event):
            return self._remembered(event)
        asked = self._analysis(event, dialogue)
        if asked is None:
            return None
        question, offered = asked
        candidates = analysed(*question)
        if not candidates:
            return None
        local = ExtractReport()
        with self.store.transaction():
            self._apply(event, candidates, local, tuple(e.ref for e in offered))
        return local

    def _analysis(
        self, event: EventRow, dialogue: Dialogue
    ) -> tuple[tuple[str, str, bool, tuple[str, ...]], list[EventRow]] | None:
        """The arguments of a statement's cue analysis, and the assistant messages whose
        options it may pick; ``None`` when the statement is not read."""
        role = self.role_of(event)
        if role is None:
            return None
        agent = dialogue.listening(event)
        offered = dialogue.offered if agent and role == "user" else []
        full_text = self.store.events.full_text
        return (full_text(event), role, agent, tuple(full_text(e) for e in offered)), offered

    def prepare(self, session_id: str) -> None:
        """Make, for a session about to be derived from scratch, the calls of served pure
        functions that deriving it will make, with the same arguments, so that another
        process can hand their results over (memplug/derive/derive_ahead.py)."""
        dialogue = Dialogue()
        for event in self._events(session_id, -1):
            statement = event.type in READ_TYPES and not is_structural(event)
            if statement and not _remembers(event):
                asked = self._analysis(event, dialogue)
                if asked is not None:
                    analysed(*asked[0])
            for follower in self.followers:
                follower.prepare(event)
            dialogue.see(event)

    def _remembered(self, event: EventRow) -> ExtractReport | None:
        """An explicit remember: one item, of the kind it was captured with."""
        extra = json.loads(event.extra_json) if event.extra_json else {}
        kind = extra.get("kind") if isinstance(extra, dict) else None
        found = remembered(self.store.events.full_text(event), kind)
        if found is None:
            return None
        local = ExtractReport()
        with self.store.transaction():
            self._apply(event, [found], local)
        return local

    def _tool_record(self, result: EventRow) -> ExtractReport | None:
        """What a structural rule reads in a tool result and the call it answers."""
        call = None
        if result.call_id:
            found = self.store.timeline.tool_call(result.session_id, result.call_id, result.seq)
            call = self.store.events.get(result.session_id, found.seq) if found else None
        tool = str(result.tool_name)
        call_text = self.store.events.full_text(call) if call is not None else ""
        reading = read_record(tool, call_text, self.store.events.full_text(result), result.outcome)
        if not reading.candidates and reading.tasks is None:
            return None
        linked = (call.ref,) if call is not None else ()
        path = edited_memory_file(tool, call_text)
        if path is not None and call is not None:
            linked = (*self._failed_attempts(result.session_id, path, call.seq), *linked)
        local = ExtractReport()
        with self.store.transaction():
            self._apply_record(result, reading, linked, local)
        return local

    def _failed_attempts(self, session_id: str, path: str, before: int) -> tuple[str, ...]:
        """The calls that tried to write ``path`` since it was last written and failed on
        a tool error (not a person's refusal): what they held is what this call wrote."""
        events = self.store.events.session_events(session_id, types=(TOOL_CALL, TOOL_RESULT))
        # Only edit calls are read in full: most of a session's calls are something else.
        edits = (e for e in events if e.type == TOOL_CALL and e.tool_name in EDIT_TOOLS)
        calls = {e.call_id: e for e in edits if e.seq < before}
        failed: list[str] = []
        for event in events:
            call = calls.get(event.call_id) if event.type == TOOL_RESULT else None
            if call is None:
                continue
            if edited_memory_file(str(call.tool_name), self.store.events.full_text(call)) != path:
                continue
            if event.outcome == "failed":
                failed.append(call.ref)
            else:
                failed = []
        return tuple(failed)

    def _events(self, session_id: str, after_seq: int) -> list[EventRow]:
        """The events to derive from, read once: followers see every type."""
        types = None if self.followers else (*READ_TYPES, TOOL_CALL, TOOL_RESULT)
        return self.store.events.session_events(session_id, after_seq=after_seq, types=types)

    def _follow(
        self,
        session_id: str,
        events: Sequence[EventRow],
        after_seq: int,
        report: ExtractReport,
        pending: set[int],
    ) -> None:
        """Let every follower see the session's events after ``after_seq``; a failure is
        queued like an extraction failure (and retried the same way).

        All events go in one savepoint; only when that fails is each event tried in its
        own, to find the one at fault and keep the rest (a savepoint per event costs
        more than the followers' own work on most events)."""
        if not self.followers:
            return
        made = self.store.timeline.items_after(session_id, after_seq)
        failed: set[int] = set()
        try:
            # One pass writes many work records: they are indexed once, at its end.
            with self.store.transaction(), self.store.work.deferred_index():
                for event in events:
                    self._follow_one(event, made.get(event.seq, ()))
        except Exception:  # same reason as in _process_safely; found again below
            for event in events:
                try:
                    with self.store.transaction():
                        self._follow_one(event, made.get(event.seq, ()))
                except Exception as error:
                    message = f"{type(error).__name__}: {error}"
                    self.items.queue_failure(session_id, event.seq, message, utc_now())
                    report.failed.append(
                        {"session_id": session_id, "seq": event.seq, "error": message}
                    )
                    failed.add(event.seq)
        # Events extraction does not read can only have been queued by a follower.
        for event in events:
            if event.seq in pending and event.seq not in failed and event.type not in READ_TYPES:
                self.items.clear_pending(session_id, event.seq)

    def _follow_one(self, event: EventRow, items: Sequence[ItemFact]) -> None:
        for follower in self.followers:
            follower.follow(event, items)

    def role_of(self, event: EventRow) -> str | None:
        """Whose statement an event is, for extraction; ``None`` when it is not read."""
        if is_user_statement(event):
            return "user"
        if event.generated:
            return None
        if event.type == "assistant/message" and self.config.extraction.extract_proposals:
            return "assistant"
        return None

    def _apply(
        self,
        event: EventRow,
        candidates: list[Candidate],
        report: ExtractReport,
        offered: tuple[str, ...] = (),
    ) -> None:
        raise NotImplementedError

    def _apply_record(
        self, event: EventRow, reading: Reading, linked: tuple[str, ...], report: ExtractReport
    ) -> None:
        raise NotImplementedError

    def _replay(self, action: ActionRow, report: ExtractReport) -> None:
        raise NotImplementedError


def is_structural(event: EventRow) -> bool:
    """A tool result a structural rule reads (with the call it answers)."""
    return event.type == TOOL_RESULT and event.tool_name in STRUCTURAL_TOOLS and not event.generated


def _remembers(event: EventRow) -> bool:
    """An explicit ``remember``: one item as captured, not read for cues."""
    return event.source_kind == REMEMBER_SOURCE and not event.generated


def _anchor(action: ActionRow) -> int:
    value = action.params.get("after_seq")
    return int(value) if isinstance(value, int) else -1
