"""The Assembler facade: one attempt = retrieve, build, render and log."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memplug.base.clock import utc_now
from memplug.base.config import Config
from memplug.base.errors import AssemblyFailed
from memplug.base.vocab import GENERATED_SOURCE_KINDS, MEMPLUG_SOURCE_KIND
from memplug.recall.assemble.draft import Draft, Meter, Packed
from memplug.recall.assemble.models import (
    ALREADY_INJECTED,
    LOG_WAIT_MS,
    NOTHING_TO_QUALIFY,
    OVER_BUDGET,
    SECTIONS,
    UNKNOWN_SESSION,
    VISIBLE,
    AssemblyRequest,
    AssemblyResult,
    Candidates,
    CandidateSource,
    CoreProvider,
    Coverage,
    Entry,
    Omission,
    ResidentCore,
    TaskState,
)
from memplug.recall.assemble.relevance import (
    asks_about_earlier_work,
    asks_for_steps,
    generic_request,
)
from memplug.recall.assemble.render import (
    Injected,
    VisibleText,
    labels_for,
    task_text_from_messages,
)
from memplug.recall.assemble.sections.core import CoreSections
from memplug.recall.assemble.sections.evidence import EvidenceSections
from memplug.recall.assemble.sections.items import ItemSections
from memplug.recall.assemble.sections.notice import NoticeSection
from memplug.recall.assemble.sections.work import WorkSections

if TYPE_CHECKING:
    from memplug.store.ports import Storage


# A degradation notice needs this many searched sources beside it: a lone line is a
# match, not a search whose gaps are worth a line of their own.
QUALIFIED_SOURCES = 2


class Assembler(CoreSections, ItemSections, EvidenceSections, WorkSections, NoticeSection):
    """Builds the step's message from candidates, under the configured budget."""

    def __init__(
        self,
        config: Config,
        source: CandidateSource | None = None,
        store: Storage | None = None,
        core: CoreProvider | None = None,
    ) -> None:
        self.config = config
        self.source = source
        self.store = store
        self.core = core
        self.labels = labels_for(config.assembly.locale)
        self.generated_kinds = GENERATED_SOURCE_KINDS | frozenset(
            config.capture.generated_source_kinds
        )

    # -- the whole attempt --------------------------------------------------------

    def run(self, request: AssemblyRequest) -> AssemblyResult:
        """Retrieve, build and log one attempt.

        A failed attempt is logged too (uninjected, with its error) and then raised as
        :class:`AssemblyFailed`: the host path (plugin, hook) records it and injects
        nothing; ``memory assemble`` reports it. Nothing here swallows it.
        """
        started = time.perf_counter()
        try:
            result = self._attempt(request)
        except Exception as error:
            failed = self.failure(request, f"{type(error).__name__}: {error}")
            self._finish(failed, started, request)
            raise _failure_error(failed) from error
        self._finish(result, started, request)
        return result

    def _attempt(self, request: AssemblyRequest) -> AssemblyResult:
        task_text = self.task_text(request)
        if self.source is None:
            raise RuntimeError("no candidate source is configured")
        candidates = self.source.candidates(self._reader(request), task_text)
        task_state = self.source.task_state(request.session_id)
        core = self.core(request) if self.core is not None else None
        return self.build(request, task_text, candidates, task_state, core)

    def _reader(self, request: AssemblyRequest) -> str:
        """The session retrieval reads through: the step's own; for the first step of a
        new session (no event of it stored yet) one of the project its host names, so
        that it is answered from the project as its second step would be."""
        session_id, project = request.session_id, request.project
        if project is None or self.store is None or self.config.assembly.scope != "project":
            return session_id
        exists, _ = self.store.search.session_project(session_id)
        if exists:
            return session_id
        sessions = self.store.search.project_sessions(project)
        return sessions[-1] if sessions else session_id

    def _finish(self, result: AssemblyResult, started: float, request: AssemblyRequest) -> None:
        result.duration_ms = round((time.perf_counter() - started) * 1000, 3)
        self.log(result, wait_ms=request.log_wait_ms)

    def failure(self, request: AssemblyRequest, message: str) -> AssemblyResult:
        return AssemblyResult(
            session_id=request.session_id,
            injected=False,
            text="",
            budget=self.config.assembly.budget_tokens,
            used_tokens=0,
            token_source="exact" if request.token_meter is not None else "estimate",
            coverage=Coverage(complete=False, reasons=["assembly failed"]),
            query_text=request.query or "",
            errors=[message],
            turn=request.turn,
            step=request.step,
            trigger=request.trigger,
        )

    def log(self, result: AssemblyResult, *, wait_ms: int | None = None) -> None:
        """Write the attempt to ``assembly_logs``. A failure to log (another writer holds
        the lock past :data:`LOG_WAIT_MS`, a full disk) is added to the result's errors
        for the caller to report, never raised: the step's message is still good."""
        if self.store is None:
            return
        try:
            result.assembly_id = self.store.logs.insert(
                result.to_log(utc_now()),
                retention=self.config.diagnostics.assembly_log_retention,
                wait_ms=LOG_WAIT_MS if wait_ms is None else max(1, wait_ms),
            )
        except Exception as error:
            result.errors.append(f"could not log the assembly ({type(error).__name__}: {error})")

    def task_text(self, request: AssemblyRequest) -> str:
        """The step's task text: explicit query, else the latest real user input (after
        a compaction: the summary's account of the work at hand, and the latest request
        that asks for something — never a "continue")."""
        if request.query is not None:
            return request.query
        found = task_text_from_messages(request.messages, self.generated_kinds)
        if request.summary is not None:
            if found is None or generic_request(found):
                found = self._latest_user_text(request.session_id) if self.store else None
            return "\n".join(t for t in (request.summary, found) if t)
        if found is not None:
            return found
        if self.store is not None:
            return self._latest_user_text(request.session_id)
        return ""

    def _latest_user_text(self, session_id: str) -> str:
        """The session's latest real user message that asks for something, read in
        widening windows from the end (a long session must not be read whole to find
        its last prompt); the latest real one when none does."""
        assert self.store is not None
        info = self.store.events.session(session_id)
        last = int(info["last_event_seq"]) if info and info["last_event_seq"] is not None else 0
        for window in (256, 8192, None):
            after = -1 if window is None else last - window
            events = self.store.events.session_events(
                session_id, after_seq=after, types=["user/message"]
            )
            real = [e.text for e in events if not e.generated]
            for text in reversed(real):
                if not generic_request(text):
                    return text
            if after < 0:
                return real[-1] if real else ""
        return ""

    # -- the pure part ------------------------------------------------------------

    def build(
        self,
        request: AssemblyRequest,
        task_text: str,
        candidates: Candidates,
        task_state: TaskState,
        core: ResidentCore | None = None,
    ) -> AssemblyResult:
        """Pack candidates into sections under the budget; same input ⇒ same bytes."""
        self.asking_session, self.origins = request.session_id, {}
        self.labels = labels_for(self.config.assembly.locale, request.pull)
        has_query = bool(task_text.strip())
        strict = not asks_about_earlier_work(task_text)
        # A compaction's step (its query built from the summary) brings back what the
        # context lost, the talk on the way included: only a request is served by
        # results alone.
        recovering = request.summary is not None and not request.query
        packed = self._pack(
            request,
            candidates,
            task_state,
            core,
            reserve_insufficient=has_query,
            strict=strict,
            steps=asks_for_steps(task_text),
            results_only=(
                strict
                and not recovering
                and self.config.assembly.precise
                and bool(candidates.tool_refs())
            ),
        )
        if has_query and packed.answered:
            # The statement is not needed: its room goes to what the budget left out.
            if not packed.mandatory and not any(
                e.section == "notice" for e in packed.draft.entries
            ):
                packed.draft.opened.discard("notice")
            packed.draft.top_up(packed.reserve)
        cfg = self.config.assembly
        meter, draft = packed.meter, packed.draft
        content = [e for e in draft.entries if e.section != "notice"]
        notices = [e for e in draft.entries if e.section == "notice"]
        notices += self._qualifying(draft, packed.mandatory, content)
        if (
            has_query
            and not generic_request(task_text)
            and not packed.answered
            and (content or notices or not cfg.skip_when_empty)
        ):
            line = "- " + self.labels["notice.insufficient"]
            if draft.injected and draft.injected.said("", line, by_ref=False):
                draft.omit("notice:insufficient", "notice", ALREADY_INJECTED)
            else:
                notices.append(
                    Entry(
                        "notice:insufficient", "notice", line, meter(line + "\n"), why="no evidence"
                    )
                )
        entries = content + notices
        inject = bool(entries) or not cfg.skip_when_empty
        text = self.render(entries, packed.header) if inject else ""
        used = meter(text) if inject else 0
        # A host's meter need not add up over lines: drop content from the end until it fits.
        while inject and used > packed.budget and content:
            dropped = content.pop()
            entries.remove(dropped)
            draft.omit(dropped.ref, dropped.section, OVER_BUDGET, dropped.score, "measured text")
            text = self.render(entries, packed.header)
            used = meter(text)
        return AssemblyResult(
            session_id=request.session_id,
            injected=inject,
            text=text,
            budget=packed.budget,
            used_tokens=used,
            token_source=meter.source,
            included=entries if inject else [],
            omitted=draft.omitted,
            coverage=candidates.coverage,
            sections=self._sections(entries if inject else [], draft.omitted),
            query_text=task_text,
            signals=dict(candidates.signals),
            errors=packed.errors + meter.errors,
            turn=request.turn,
            step=request.step,
            trigger=request.trigger,
            why_not=None if inject else self._why_not(request, candidates, draft, has_query),
        )

    @staticmethod
    def _qualifying(
        draft: Draft, notices: Sequence[Entry], content: Sequence[Entry]
    ) -> list[Entry]:
        """The degradation notices worth saying: beside the searched evidence whose
        absence they qualify (memory items and quoted events; the core, work records and
        where we were come from elsewhere), and not again while the same notice is
        still in the context. The index only points: a pull reports its own coverage
        (``memory search``'s coverage line and what to do next)."""
        # The coverage reasons are the event search's; work records have their own index.
        evidence = sum(e.section in ("memory", "evidence") for e in content) >= QUALIFIED_SOURCES
        kept = []
        for notice in notices:
            if not evidence:
                draft.omit(notice.ref, "notice", NOTHING_TO_QUALIFY, detail=notice.why)
            elif draft.injected and draft.injected.said(notice.ref, notice.line, by_ref=False):
                draft.omit(notice.ref, "notice", ALREADY_INJECTED, detail=notice.why)
            else:
                kept.append(notice)
        return kept

    def _why_not(
        self, request: AssemblyRequest, candidates: Candidates, draft: Draft, has_query: bool
    ) -> str:
        """Why a healthy attempt injected nothing, in words explain can show."""
        if UNKNOWN_SESSION in candidates.coverage.reasons:
            return f"session {request.session_id!r} has no events yet: nothing to recall"
        if any(o.reason == VISIBLE for o in draft.omitted):
            return "what matched is still in the model's context"
        if not has_query:
            return "no query text, and nothing resident"
        return "nothing in scope matched the query, and nothing resident is missing"

    def _pack(
        self,
        request: AssemblyRequest,
        candidates: Candidates,
        task_state: TaskState,
        core: ResidentCore | None,
        *,
        reserve_insufficient: bool,
        strict: bool = False,
        steps: bool = False,
        results_only: bool = False,
    ) -> Packed:
        """``strict``: the request asks no question about earlier work, so the agent's
        announcements on the way, even naming what they touch, are not what it needs;
        ``steps``: a step itself may answer it, so records that only worked may too;
        ``results_only``: ``strict``, in a session of tool work, outside a compaction's
        step — what was stated or concluded is quoted, not what was said or run on the
        way to it (docs/assembly.md, "Results, not the way to them")."""
        labels = self.labels
        meter = Meter(request.token_meter)
        budget = self.config.assembly.budget_tokens
        visible = VisibleText(request.messages)
        injected = Injected.of(request.messages, MEMPLUG_SOURCE_KIND)
        draft = Draft(budget=budget, meter=meter, visible=visible, injected=injected)

        # The header and the notices that must be said are paid for first.
        mandatory: list[Entry] = []
        if not candidates.coverage.complete:
            reasons = (
                labels["sep"].join(
                    labels.get(f"incomplete.{r}", r) for r in candidates.coverage.reasons
                )
                or "unknown"
            )
            line = "- " + labels["notice.incomplete"].format(reasons=reasons)
            mandatory.append(
                Entry("notice:incomplete", "notice", line, meter(line + "\n"), why="coverage")
            )
        statement = (
            meter("- " + labels["notice.insufficient"] + "\n") if reserve_insufficient else 0
        )
        notice_title = 0
        if mandatory or reserve_insufficient:
            notice_title = meter("\n" + labels["section.notice"] + "\n")
            draft.opened.add("notice")
        # The full header once per context: while it is still there, a short one refers to it.
        header = labels["header.again" if visible.contains(labels["header"]) else "header"]
        reserved = (
            meter(header + "\n") + sum(e.tokens for e in mandatory) + statement + notice_title
        )
        # What the statement holds back, returned when the query is answered.
        reserve = statement + (0 if mandatory else notice_title)
        errors: list[str] = []
        draft.remaining = budget - reserved
        if draft.remaining < 0:
            errors.append(
                f"budget of {budget} tokens is smaller than the header and notices ({reserved})"
            )
            draft.remaining = 0

        # Retrieval's own omissions (below min score, …) are part of the account.
        draft.omitted.extend(candidates.omitted)
        if core is not None:
            self._core_section(draft, core, task_state, visible, request.standing)
        self._task_section(draft, task_state, visible, candidates.work)
        self._skill_sections(draft, candidates)
        texts = self._source_texts(candidates) if visible else {}
        superseded = self._memory_section(draft, candidates, visible, texts)
        # Work is filled before raw evidence so that its own budget is there to spend;
        # it is still rendered after it, in section order.
        terms = candidates.terms if self.config.assembly.precise else None
        self._work_section(
            draft,
            candidates.work,
            request.session_id,
            visible,
            terms=terms,
            steps=steps,
            results_only=results_only,
        )
        carried = self._carried(draft, candidates, core, task_state)
        self._evidence_section(
            draft, candidates, visible, carried, request.query, strict, results_only
        )
        # What a request that names nothing specific matched ("continue" in an old
        # message) answers nothing: where we were is what it needs.
        answered = draft.answered() and (candidates.terms is None or candidates.terms.specific)
        self._where_we_were(draft, candidates.work, request.session_id, visible, answered)
        self._notice_section(draft, candidates, superseded, visible, texts)
        return Packed(budget, meter, draft, mandatory, answered, errors, reserve, header)

    def render(self, entries: Sequence[Entry], header: str | None = None) -> str:
        """Header, then each non-empty section's title and lines, in section order."""
        parts = [self.labels["header"] if header is None else header]
        for section in SECTIONS:
            chosen = [e for e in entries if e.section == section]
            if chosen:
                parts.append("")
                parts.append(self.title(section, chosen))
                parts.extend(_grouped(chosen))
        return "\n".join(parts)

    def _sections(
        self, entries: Sequence[Entry], omitted: Sequence[Omission]
    ) -> list[dict[str, Any]]:
        out = []
        for section in SECTIONS:
            inc = [e for e in entries if e.section == section]
            out.append(
                {
                    "name": section,
                    "title": self.title(section, inc).lstrip("# "),
                    "included": len(inc),
                    "omitted": sum(1 for o in omitted if o.section == section),
                    "tokens": sum(e.tokens for e in inc),
                }
            )
        return out


def _grouped(entries: Sequence[Entry]) -> list[str]:
    """A section's lines; grouped ones under their heading, the groups in the order of
    their first line (the best ranked), the lines of a group in order of position."""
    out: list[str] = []
    groups: dict[str, list[Entry]] = {}
    for entry in entries:
        if entry.group is None:
            out.append(entry.line)
        elif entry.group not in groups:
            groups[entry.group] = [entry]
            out.append(entry.group)
        else:
            groups[entry.group].append(entry)
    for heading, members in groups.items():
        at = out.index(heading) + 1
        members.sort(key=lambda e: (e.position, e.ref))
        out[at:at] = [e.line for e in members]
    return out


def _failure_error(result: AssemblyResult) -> AssemblyFailed:
    """What a failed attempt raises: its errors, and where ``memory explain`` finds it."""
    errors = "; ".join(result.errors)
    if result.assembly_id is None:
        return AssemblyFailed(f"the assembly failed: {errors}")
    return AssemblyFailed(
        f"assembly {result.assembly_id} failed: {errors} "
        f"(memory explain --assembly {result.assembly_id})",
        result.assembly_id,
    )
