"""Extraction: explicit cues in captured events → memory items, their lifecycle and
task state (see docs/extraction.md).

Derived state is a pure function of a session's events, taken in seq order, and of the
actions a person took (``memory retract`` / ``memory promote``), each replayed at the
extraction checkpoint it was taken at. Every timestamp written here is an event's own
time or an action's recorded time, never the clock at derivation, so a rebuild — or
the same events delivered in another order — gives the same rows.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

from msgspec import Struct, field

from memplug.base.clock import utc_now
from memplug.base.config import Config
from memplug.base.errors import NotFound, UsageError
from memplug.base.refs import EventRef, event_ref, row_scope
from memplug.base.text import sha256_hex, short_hash
from memplug.base.vocab import CHOICE_PREFIX, MEMORY_KINDS, choice_keys_agree
from memplug.derive.cues import RULES_BY_ID, Candidate, canonical, content_words
from memplug.derive.cues.structural import MEMORY_FILE, STRUCTURAL_BY_ID, Reading, TaskChange
from memplug.derive.dialogue import is_user_statement as is_user_statement
from memplug.derive.rederive import LIVE_RETRIES as LIVE_RETRIES
from memplug.derive.rederive import PLANNED_EVENTS_PER_MS as PLANNED_EVENTS_PER_MS
from memplug.derive.rederive import READ_TYPES as READ_TYPES
from memplug.derive.rederive import Deriving, ExtractReport, Follower
from memplug.store.ports import Storage
from memplug.store.records import ActionRow, EventRow, ItemRow

ACTOR_CLI = "cli"
ACTOR_API = "api"
PROMOTE_KINDS: tuple[str, ...] = tuple(k for k in MEMORY_KINDS if k != "proposal")


def item_id(session_id: str, content_hash: str, kind: str) -> str:
    """``mem_<session part>_<hash16>``: from the session, the content and the kind only."""
    part = re.sub(r"[^a-z0-9]", "", session_id.lower())[:8] or short_hash(session_id, length=8)
    return f"mem_{part}_{short_hash(session_id, content_hash, kind)}"


def content_hash(content: str) -> str:
    return sha256_hex(canonical(content))


class _Context(Struct):
    """The event (or action) causing the changes being written."""

    session_id: str
    seq: int | None
    at: str | None
    actor: str
    project: str | None = None
    created: set[str] = field(default_factory=set)
    agent: str | None = None
    # The refs of the assistant messages an option pick may have resolved against.
    offered: tuple[str, ...] = ()
    # Other events the statement is read from: a tool result's call.
    linked: tuple[str, ...] = ()


class Extractor(Deriving):
    """The rules' effects: items created, revised, superseded, disputed, retracted and
    promoted, and task state; the loop that feeds it events is :class:`Deriving`."""

    def __init__(self, store: Storage, config: Config, followers: Sequence[Follower] = ()) -> None:
        self.store = store
        self.items = store.items
        self.config = config
        self.followers = tuple(followers)

    def _apply(
        self,
        event: EventRow,
        candidates: list[Candidate],
        report: ExtractReport,
        offered: tuple[str, ...] = (),
    ) -> None:
        # As `sessions.project` is derived, but from this event alone, so that delivery
        # batches cannot change it.
        ctx = _Context(
            event.session_id,
            event.seq,
            event.event_time,
            "",
            event.project_key,
            agent=event.agent,
            offered=offered,
        )
        tasks: list[Candidate] = []
        for candidate in candidates:
            ctx.actor = f"extractor:{candidate.rule}"
            if candidate.is_retraction:
                self._retract_named(candidate, ctx, report)
            elif candidate.is_task:
                tasks.append(candidate)
            else:
                self._apply_item(candidate, ctx, report)
        if tasks:
            self._apply_tasks(tasks, ctx, report)

    def _apply_record(
        self, event: EventRow, reading: Reading, linked: tuple[str, ...], report: ExtractReport
    ) -> None:
        """What a tool call and its result state (a structural rule): items, retractions
        of removed memory-file lines, and the task list; ``linked``: the other events it
        is read from (the call, and earlier attempts at the same edit that failed)."""
        ctx = _Context(event.session_id, event.seq, event.event_time, "", event.project_key,
                       agent=event.agent, linked=linked)  # fmt: skip
        for candidate in reading.candidates:
            ctx.actor = f"extractor:{candidate.rule}"
            if candidate.is_retraction:
                self._retract_named(candidate, ctx, report)
            else:
                self._apply_item(candidate, ctx, report)
        if reading.tasks is not None:
            self._apply_task_change(reading.tasks, ctx, report)

    # -- items ---------------------------------------------------------------------------

    def _apply_item(self, cand: Candidate, ctx: _Context, report: ExtractReport) -> None:
        chash = content_hash(cand.content)
        targets, reason = self._targets(cand, ctx, chash)
        kind = cand.kind or _inherited_kind(targets)
        if kind is None:
            if cand.is_correction:
                report.skipped.append(
                    _skip(
                        ctx,
                        cand,
                        "a correction with no kind of its own and no earlier item it could replace",
                    )
                )
            return
        assert ctx.seq is not None  # items come from events; actions only change status
        ref = event_ref(ctx.session_id, ctx.seq)
        item = self.items.active_by_hash(ctx.session_id, chash)
        if item is not None:
            # Said again: one more source for the same item, not a second item.
            if ref in item.source_refs:
                return
            item = self.items.update(
                item.id,
                source_refs_json=_refs([*item.source_refs, *_sources(cand, ctx)]),
                updated_at=ctx.at,
            )
            self._event(item, "revised", ctx, {"rule": cand.rule, "added_ref": ref})
            report.revised += 1
        else:
            memory_id = item_id(ctx.session_id, chash, kind)
            earlier = self.items.get(memory_id)
            if earlier is not None:
                # The same statement again after it was replaced or withdrawn.
                item = self.items.update(
                    memory_id,
                    status="active",
                    superseded_by=None,
                    source_refs_json=_refs([*earlier.source_refs, *_sources(cand, ctx)]),
                    updated_at=ctx.at,
                )
                self._event(item, "reactivated", ctx, {"rule": cand.rule, "was": earlier.status})
                report.reactivated += 1
            else:
                item = self._create(cand, kind, chash, memory_id, ctx, targets, reason)
                report.created += 1
        self._resolve(item, [t for t in targets if t.id != item.id], reason, cand, ctx, report)

    def _create(
        self,
        cand: Candidate,
        kind: str,
        chash: str,
        memory_id: str,
        ctx: _Context,
        targets: list[ItemRow],
        reason: str | None,
    ) -> ItemRow:
        assert ctx.seq is not None
        scope: dict[str, Any] = {"session": ctx.session_id}
        if ctx.project:
            scope["project"] = ctx.project
        item = self.items.insert(
            id=memory_id,
            session_id=ctx.session_id,
            project=ctx.project,
            row_scope=row_scope(ctx.project, ctx.session_id),
            agent=ctx.agent,
            kind=kind,
            content=cand.content,
            conditions=cand.conditions,
            scope=scope,
            numbers=[n.to_dict() for n in cand.numbers],
            source_refs=_refs(_sources(cand, ctx)),
            evidence_type=cand.evidence
            or ("user_explicit" if cand.role == "user" else "assistant_proposal"),
            status="active",
            subject_key=cand.subject_key,
            content_hash=chash,
            extractor=cand.rule,
            derived_from_seq=ctx.seq,
            at=ctx.at,
        )
        ctx.created.add(item.id)
        detail: dict[str, Any] = {"rule": cand.rule}
        if cand.subject_key:
            detail["subject_key"] = cand.subject_key
        if cand.is_correction:
            detail["correction"] = {
                "rule": cand.correction_rule,
                "names": cand.correction_target,
                "matched_by": reason,
                "target": [t.id for t in targets] or None,
            }
        if cand.restatement:
            detail["restates"] = [t.id for t in targets]
        self._event(item, "created", ctx, detail)
        return item

    def _targets(
        self, cand: Candidate, ctx: _Context, chash: str
    ) -> tuple[list[ItemRow], str | None]:
        """The items a statement replaces or contradicts, and how they were found."""
        live = ("active", "disputed")
        if cand.subject_key:
            same = [i for i in self._same_subject(ctx.session_id, cand.subject_key)
                    if i.status in live and i.content_hash != chash]  # fmt: skip
            if same:
                return same, "subject_key"
        if cand.role != "user" or not cand.is_correction:
            return [], None
        pool = [
            i for i in self.items.session_items(ctx.session_id, live) if i.content_hash != chash
        ]
        if cand.correction_rule == MEMORY_FILE.ref and cand.correction_target:
            # A changed line of a memory file replaces the item made from that very line.
            old = content_hash(cand.correction_target)
            return [i for i in pool if i.content_hash == old][-1:], "replaced_line"
        if cand.kind is None:
            # A bare correction can only take the kind of a statement the user made.
            pool = [i for i in pool if i.evidence_type == "user_explicit"]
        named = cand.correction_target or (cand.subject_key if cand.kind is None else None)
        if named:
            found = _naming(pool, named, cand.kind)
            if found:
                return [_latest(found)], "names"
        # "use apple container instead of docker" replaces what names docker, not the
        # container-first decision that merely shares a word with it.
        if cand.kind is not None and not cand.correction_target:
            words = content_words(cand.content)
            found = [i for i in pool if i.kind == cand.kind and words & content_words(i.content)]
            if found:
                return [_latest(found)], "same_kind"
        return [], None

    def _same_subject(self, session_id: str, key: str) -> list[ItemRow]:
        """The session's items of the subject ``key``: the same key, or for a choice
        another key that names the same choice (``vocab.choice_keys_agree``)."""
        if not key.startswith(CHOICE_PREFIX):
            return self.items.by_subject(session_id, key)
        return [
            i
            for i in self.items.session_items(session_id, ("active", "disputed"))
            if i.subject_key and choice_keys_agree(key, i.subject_key)
        ]

    def _resolve(
        self,
        item: ItemRow,
        targets: list[ItemRow],
        reason: str | None,
        cand: Candidate,
        ctx: _Context,
        report: ExtractReport,
    ) -> None:
        if not targets:
            return
        if cand.correction_rule:
            # The replacement is the correction cue's doing, whatever gave the kind.
            ctx.actor = f"extractor:{cand.correction_rule}"
        if cand.role == "assistant":
            # A newer proposal replaces an older one; one that contradicts what the user
            # said leaves both standing, disputed, until the user settles it.
            users = [t for t in targets if t.evidence_type != "assistant_proposal"]
            for target in targets:
                if target not in users:
                    item = self._supersede(target, item, ctx, reason, report)
            if users:
                self._dispute([item, *users], ctx, report)
            return
        together = [] if cand.is_correction else [t for t in targets if t.id in ctx.created]
        for target in targets:
            if target not in together:
                item = self._supersede(target, item, ctx, reason, report)
        if together:
            # Two values for one subject in one message: nothing says which one holds.
            self._dispute([item, *together], ctx, report)

    def _supersede(
        self,
        old: ItemRow,
        new: ItemRow,
        ctx: _Context,
        reason: str | None,
        report: ExtractReport,
    ) -> ItemRow:
        old = self.items.update(
            old.id, status="superseded", superseded_by=new.id, updated_at=ctx.at
        )
        self._event(old, "superseded", ctx, {"by": new.id, "reason": reason})
        report.superseded += 1
        if old.id not in new.supersedes:
            new = self.items.update(new.id, supersedes_json=[*new.supersedes, old.id])
        return new

    def _dispute(self, group: Sequence[ItemRow], ctx: _Context, report: ExtractReport) -> None:
        ids = [i.id for i in group]
        for member in group:
            fresh = self.items.get(member.id)
            assert fresh is not None
            if fresh.status != "disputed":
                fresh = self.items.update(fresh.id, status="disputed", updated_at=ctx.at)
            self._event(fresh, "disputed", ctx, {"with": [i for i in ids if i != member.id]})
            report.disputed += 1

    # -- retraction and promotion -----------------------------------------------------------

    def _retract_named(self, cand: Candidate, ctx: _Context, report: ExtractReport) -> None:
        assert cand.retraction_target is not None
        pool = self.items.session_items(ctx.session_id, ("active", "disputed"))
        if cand.rule == MEMORY_FILE.ref:
            # A line removed from a memory file withdraws the item made from that line.
            old = content_hash(cand.retraction_target)
            exact = [i for i in pool if i.content_hash == old]
            if not exact:
                report.skipped.append(_skip(ctx, cand, "no item was made from the removed line"))
                return
            self._retract(exact[-1], ctx, {"rule": cand.rule, "removed": cand.retraction_target},
                          report)  # fmt: skip
            return
        words = content_words(cand.retraction_target)
        need = _needed(words)
        scored = []
        for item in pool:
            overlap = len(words & content_words(item.content))
            if overlap >= need:
                same_key = cand.subject_key is not None and item.subject_key == cand.subject_key
                scored.append(((overlap, same_key, item.last_seq, item.rid), item))
        if not scored:
            report.skipped.append(_skip(ctx, cand, "nothing active matches what it names"))
            return
        target = max(scored, key=lambda pair: pair[0])[1]
        self._retract(target, ctx, {"rule": cand.rule, "names": cand.retraction_target}, report)

    def _retract(
        self, item: ItemRow, ctx: _Context, detail: dict[str, Any], report: ExtractReport
    ) -> ItemRow:
        was = item.status
        item = self.items.update(item.id, status="retracted", updated_at=ctx.at)
        self._event(item, "retracted", ctx, detail)
        report.retracted += 1
        if was == "disputed" and item.subject_key:
            rest = [
                i
                for i in self.items.by_subject(item.session_id, item.subject_key)
                if i.status == "disputed"
            ]
            if (
                len(rest) == 1
                and self.items.active_by_hash(item.session_id, rest[0].content_hash) is None
            ):
                survivor = self.items.update(rest[0].id, status="active", updated_at=ctx.at)
                self._event(
                    survivor, "reactivated", ctx, {"reason": "dispute settled", "by": item.id}
                )
                report.reactivated += 1
        return item

    def _promote(
        self,
        item: ItemRow,
        kind: str,
        ctx: _Context,
        detail: dict[str, Any],
        report: ExtractReport,
    ) -> ItemRow:
        before = item
        item = self.items.update(
            item.id, kind=kind, evidence_type="user_explicit", status="active", updated_at=ctx.at
        )
        self._event(
            item,
            "promoted",
            ctx,
            {**detail, "from_kind": before.kind, "to_kind": kind, "was": before.status},
        )
        report.promoted += 1
        if item.subject_key:
            for rival in self.items.by_subject(item.session_id, item.subject_key):
                if rival.status == "disputed" and rival.id != item.id:
                    item = self._supersede(rival, item, ctx, "promoted", report)
        return item

    def _promote_problem(self, item: ItemRow, kind: str) -> str | None:
        if item.evidence_type != "assistant_proposal" or item.kind != "proposal":
            return f"{item.id} is not an assistant proposal; only proposals can be promoted"
        if item.status not in ("active", "disputed"):
            return (
                f"{item.id} is {item.status}; only an active or disputed proposal can be promoted"
            )
        if kind not in PROMOTE_KINDS:
            return f"cannot promote to {kind!r}; choose one of {', '.join(PROMOTE_KINDS)}"
        clash = self.items.active_by_hash(item.session_id, item.content_hash)
        if clash is not None and clash.id != item.id:
            return f"{clash.id} already holds the same content as an active item"
        return None

    def retract(
        self, memory_id: str, *, actor: str = ACTOR_API, note: str | None = None
    ) -> ItemRow:
        """Retract an item on a person's word; recorded in ``memory_actions``."""
        with self.store.write_transaction():
            item = self._item(memory_id)
            if item.status == "retracted":
                raise UsageError(f"{memory_id} is already retracted")
            action = self._record(item, "retract", actor, {"note": note} if note else {})
            self._replay(action, ExtractReport())
            return self._item(memory_id)

    def correct(
        self, memory_id: str, replaced_by: str, *, actor: str = ACTOR_API, note: str | None = None
    ) -> ItemRow:
        """Mark an item superseded by ``replaced_by`` (the item a person's correction made):
        recorded in ``memory_actions`` as a retraction naming its replacement, so a rebuild
        replays it."""
        with self.store.write_transaction():
            item = self._item(memory_id)
            if item.status not in ("active", "disputed"):
                raise UsageError(f"{memory_id} is {item.status}; only a standing item is corrected")
            params: dict[str, Any] = {"replaced_by": replaced_by}
            if note:
                params["note"] = note
            action = self._record(item, "retract", actor, params)
            self._replay(action, ExtractReport())
            return self._item(memory_id)

    def _replaced(
        self, item: ItemRow, by: str, ctx: _Context, detail: dict[str, Any], report: ExtractReport
    ) -> None:
        item = self.items.update(item.id, status="superseded", superseded_by=by, updated_at=ctx.at)
        self._event(item, "superseded", ctx, {**detail, "by": by, "reason": "corrected"})
        report.superseded += 1

    def promote(
        self,
        memory_id: str,
        *,
        kind: str = "decision",
        actor: str = ACTOR_API,
        note: str | None = None,
    ) -> ItemRow:
        """Make an assistant proposal a ``user_explicit`` item of ``kind``."""
        with self.store.write_transaction():
            item = self._item(memory_id)
            problem = self._promote_problem(item, kind)
            if problem:
                raise UsageError(problem)
            params: dict[str, Any] = {"kind": kind}
            if note:
                params["note"] = note
            action = self._record(item, "promote", actor, params)
            self._replay(action, ExtractReport())
            return self._item(memory_id)

    def _record(self, item: ItemRow, action: str, actor: str, params: dict[str, Any]) -> ActionRow:
        anchor = self.items.extracted_through(item.session_id)
        params = {"session_id": item.session_id, "after_seq": anchor, **params}
        return self.items.add_action(item.id, action, actor=actor, at=utc_now(), params=params)

    def _replay(self, action: ActionRow, report: ExtractReport) -> None:
        """Apply a recorded action; one whose item no longer qualifies changes nothing."""
        item = self.items.get(action.memory_id)
        params = action.params
        session_id = str(params.get("session_id") or (item.session_id if item else ""))
        ctx = _Context(session_id, None, action.at, action.actor)
        detail: dict[str, Any] = {"action": action.id}
        if params.get("note"):
            detail["note"] = params["note"]
        report.actions += 1
        if item is None:
            report.skipped.append({"action": action.id, "reason": "the item no longer exists"})
        elif action.action == "retract" and params.get("replaced_by"):
            # A correction: withdrawn in favour of the item that states it right.
            if item.status not in ("active", "disputed"):
                report.skipped.append({"action": action.id, "reason": f"already {item.status}"})
            else:
                self._replaced(item, str(params["replaced_by"]), ctx, detail, report)
        elif action.action == "retract":
            if item.status == "retracted":
                report.skipped.append({"action": action.id, "reason": "already retracted"})
            else:
                self._retract(item, ctx, detail, report)
        elif action.action == "promote":
            kind = str(params.get("kind") or "decision")
            problem = self._promote_problem(item, kind)
            if problem:
                report.skipped.append({"action": action.id, "reason": problem})
            else:
                self._promote(item, kind, ctx, detail, report)

    # -- task state ---------------------------------------------------------------------------

    def _apply_tasks(self, cands: list[Candidate], ctx: _Context, report: ExtractReport) -> None:
        assert ctx.seq is not None
        state = self.items.task_state(ctx.session_id) or {}

        goal = _bare(state["goal"]) if state.get("goal") else None
        lists = {
            name: [_bare(e) for e in state.get(key, [])]
            for name, key in (("progress", "progress"), ("blockers", "blockers"),
                              ("open_items", "open_items"), ("superseded", "superseded_goals"))
        }  # fmt: skip

        def holds(name: str, key: str) -> bool:
            return any(canonical(e["text"]) == key for e in lists[name])

        def drop(name: str, key: str) -> None:
            lists[name] = [e for e in lists[name] if canonical(e["text"]) != key]

        for cand in cands:
            entry = {"text": cand.content, "seq": ctx.seq}
            key = canonical(cand.content)
            if cand.kind == "goal":
                if goal is None or canonical(goal["text"]) != key:
                    if goal is not None:
                        lists["superseded"].append({**goal, "until_seq": ctx.seq})
                    goal = entry
            elif cand.kind == "progress":
                if not holds("progress", key):
                    lists["progress"].append(entry)
                drop("open_items", key)
            elif cand.kind == "blocker":
                if not holds("blockers", key):
                    lists["blockers"].append(entry)
            elif cand.kind == "unblocked":
                drop("blockers", key)
            elif cand.kind == "open_item" and not holds("open_items", key):
                lists["open_items"].append(entry)
            report.task_updates += 1
        self.items.save_task_state(
            ctx.session_id,
            goal=goal,
            progress=lists["progress"],
            blockers=lists["blockers"],
            open_items=lists["open_items"],
            superseded=lists["superseded"],
            updated_by_seq=ctx.seq,
            updated_at=ctx.at,
        )

    def _apply_task_change(self, change: TaskChange, ctx: _Context, report: ExtractReport) -> None:
        """The agent's task list as it last wrote it: done tasks are the progress, the
        rest the open items (in progress first); the goal and blockers stay as stated."""
        assert ctx.seq is not None
        state = self.items.task_state(ctx.session_id) or {}
        tasks: dict[str, dict[str, Any]] = {}
        if not change.replaces_all:
            for name in ("progress", "open_items"):
                for entry in state.get(name, []):
                    if entry.get("task"):
                        tasks[str(entry["task"])] = {**entry, "done": name == "progress"}
        for todo in change.entries:
            known = tasks.get(todo.key)
            text = todo.text or (known or {}).get("text", "")
            if not text or todo.status == "deleted":
                tasks.pop(todo.key, None)
                continue
            seq = known["seq"] if known and known.get("text") == text else ctx.seq
            tasks[todo.key] = {"text": text, "seq": seq, "task": todo.key,
                               "done": todo.status == "completed",
                               "now": todo.status == "in_progress"}  # fmt: skip

        def saved(done: bool, now: bool) -> list[dict[str, Any]]:
            return [{"text": t["text"], "seq": t["seq"], "task": t["task"]}
                    for t in tasks.values() if t["done"] == done and t["now"] == now]  # fmt: skip

        done = saved(True, False) + saved(True, True)
        now, later = saved(False, True), saved(False, False)
        listed = (*done, *now, *later)
        # What a person stated in words stays beside the agent's list.
        said = {name: [e for e in state.get(name, []) if not e.get("task")]
                for name in ("progress", "open_items")}  # fmt: skip
        self.items.save_task_state(
            ctx.session_id,
            goal=_bare(state["goal"]) if state.get("goal") else None,
            progress=[*map(_bare, said["progress"]), *done],
            blockers=[_bare(e) for e in state.get("blockers", [])],
            open_items=[*map(_bare, said["open_items"]), *now, *later],
            superseded=[_bare(e) for e in state.get("superseded_goals", [])],
            updated_by_seq=ctx.seq,
            updated_at=ctx.at,
        )
        report.task_updates += len(listed) or 1

    # -- reading ----------------------------------------------------------------------------------

    def _item(self, memory_id: str) -> ItemRow:
        item = self.items.get(memory_id)
        if item is None:
            raise NotFound(f"no memory item {memory_id}")
        return item

    def _event(self, item: ItemRow, event: str, ctx: _Context, detail: dict[str, Any]) -> None:
        self.items.add_event(
            item.id,
            item.session_id,
            event,
            at=ctx.at,
            actor=ctx.actor,
            source_seq=ctx.seq,
            detail=detail,
        )

    def inspect(self, ref: str) -> dict[str, Any]:
        """One item (``mem_…``) or one event (``SESSION:SEQ``), with everything known."""
        if ref.startswith("mem_"):
            return self.inspect_item(ref)
        return self.inspect_event(*EventRef.parse(ref, what="an item id or SESSION:SEQ reference"))

    def inspect_item(self, memory_id: str) -> dict[str, Any]:
        item = self._item(memory_id)
        data: dict[str, Any] = {"object": "memory", **item.as_dict()}
        # An id is read wherever it is; this says where that is (`scope` is the item's
        # own {session, project} record).
        data["in_scope"] = item.row_scope
        rule_id = item.extractor.split("@")[0]
        rule = RULES_BY_ID.get(rule_id) or STRUCTURAL_BY_ID.get(rule_id)
        data["rule"] = {"ref": item.extractor, "summary": rule.summary if rule else None}
        data["sources"] = [self._source(ref) for ref in item.source_refs]
        data["chain"] = {"older": self._older(item), "newer": self._newer(item)}
        data["lifecycle"] = self.items.events_of(memory_id)
        data["actions"] = [a.as_dict() for a in self.items.actions_of(memory_id)]
        data["assemblies"] = self.store.logs.mentioning(memory_id)
        return data

    def inspect_event(self, session_id: str, seq: int) -> dict[str, Any]:
        event = self.store.events.get(session_id, seq)
        if event is None:
            raise NotFound(f"no event {event_ref(session_id, seq)}")
        data: dict[str, Any] = {"object": "event", "ref": event.ref}
        for name in ("session_id", "seq", "type", "event_time", "turn", "step", "role",
                     "source_kind", "source_form", "tool_name", "call_id", "outcome",
                     "entry_id", "parent_id", "cwd", "project", "store", "content_hash",
                     "ingested_at"):  # fmt: skip
            data[name] = getattr(event, name)
        data["in_scope"] = row_scope(event.project_key, event.session_id)
        data["agent"] = event.agent
        data["is_error"] = None if event.is_error is None else bool(event.is_error)
        data["generated"] = bool(event.generated)
        data["searchable"] = bool(event.searchable)
        data["truncated"] = bool(event.truncated)
        data["text_chars"] = event.text_chars
        data["text"] = self.store.events.full_text(event)
        data["extracted_as"] = self.role_of(event)
        data["items"] = [
            {"id": i.id, "kind": i.kind, "status": i.status, "content": i.content}
            for i in self.items.citing(session_id, seq)
        ]
        data["pending_extraction"] = next(
            (p for p in self.items.pending(session_id) if p["seq"] == seq), None
        )
        data["assemblies"] = self.store.logs.mentioning(event.ref)
        return data

    def _source(self, ref: str) -> dict[str, Any]:
        session_id, seq = EventRef.parse(ref)
        event = self.store.events.get(session_id, seq)
        if event is None:
            return {"ref": ref, "missing": True}
        return {
            "ref": ref,
            "type": event.type,
            "role": event.role,
            "time": event.event_time,
            "turn": event.turn,
            "text": self.store.events.full_text(event),
        }

    def _older(self, item: ItemRow) -> list[dict[str, Any]]:
        """What this item replaced, and what that replaced, depth first."""
        out: list[dict[str, Any]] = []
        seen = {item.id}
        stack = list(reversed(item.supersedes))
        while stack:
            memory_id = stack.pop()
            if memory_id in seen:
                continue
            seen.add(memory_id)
            older = self.items.get(memory_id)
            if older is None:
                continue
            out.append(_link(older))
            stack.extend(reversed(older.supersedes))
        return out

    def _newer(self, item: ItemRow) -> list[dict[str, Any]]:
        """What replaced this item, and what replaced that, until the current one."""
        out: list[dict[str, Any]] = []
        seen = {item.id}
        current = item.superseded_by
        while current and current not in seen:
            seen.add(current)
            newer = self.items.get(current)
            if newer is None:
                break
            out.append(_link(newer))
            current = newer.superseded_by
        return out


def _sources(cand: Candidate, ctx: _Context) -> list[str]:
    """The events an item comes from: the statement, and for an option pick the
    assistant message whose option it chose."""
    assert ctx.seq is not None
    refs = [*ctx.linked, event_ref(ctx.session_id, ctx.seq)]
    if cand.picked is not None and cand.picked < len(ctx.offered):
        refs.insert(0, ctx.offered[cand.picked])
    return refs


def _bare(entry: dict[str, Any]) -> dict[str, Any]:
    """A task entry as it is saved: without the ref the store adds when read back."""
    return {k: v for k, v in entry.items() if k != "ref"}


def _refs(refs: Iterable[str]) -> list[str]:
    """Distinct refs in (session, seq) order."""

    def key(ref: str) -> tuple[str, int]:
        return EventRef.find(ref) or (ref, 0)

    return sorted(set(refs), key=key)


def _needed(words: frozenset[str]) -> int:
    """How many of a named phrase's words an item must hold to be the one it names."""
    return len(words) if len(words) <= 3 else math.ceil(len(words) / 2)


def _naming(pool: Sequence[ItemRow], named: str, kind: str | None) -> list[ItemRow]:
    words = content_words(named)
    if not words:
        return []
    need = _needed(words)
    return [
        i
        for i in pool
        if (kind is None or i.kind == kind) and len(words & content_words(i.content)) >= need
    ]


def _latest(items: Sequence[ItemRow]) -> ItemRow:
    return max(items, key=lambda i: (i.last_seq, i.rid))


def _inherited_kind(targets: Sequence[ItemRow]) -> str | None:
    users = [t for t in targets if t.evidence_type == "user_explicit"]
    return _latest(users).kind if users else None


def _skip(ctx: _Context, cand: Candidate, reason: str) -> dict[str, Any]:
    return {"session_id": ctx.session_id, "seq": ctx.seq, "rule": cand.rule,
            "sentence": cand.sentence, "reason": reason}  # fmt: skip


def _link(item: ItemRow) -> dict[str, Any]:
    return {"id": item.id, "kind": item.kind, "status": item.status, "content": item.content,
            "subject_key": item.subject_key, "derived_from_seq": item.derived_from_seq}  # fmt: skip
