"""The work section: tool calls and results, and where we were."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memplug.recall.assemble.draft import Draft
from memplug.recall.assemble.models import (
    ANSWERED,
    NOT_SPECIFIC,
    ON_THE_WAY,
    ONLY_OK,
    RECENT,
    VISIBLE,
    Entry,
)
from memplug.recall.assemble.render import VisibleText, work_visible
from memplug.recall.assemble.sections.base import SectionBase

if TYPE_CHECKING:
    from memplug.recall.retrieve.strength import QueryTerms
    from memplug.recall.retrieve.work import WorkFound, WorkHit


# Records the query names that only worked (a read, a command, a search): the best
# this many are enough to say where the work was; the rest of the budget is for what
# changed or failed.
PLAIN_RECORDS = 3
# Actions whose record says only "→ ok" when they simply worked (a read names a file,
# an edit what changed, a delegation its task).
_ONLY_OK = frozenset({"ran", "searched", "called"})
NO_STEP = "the request asks for no step"


class WorkSections(SectionBase):
    """Section 6 of the message (mixed into the Assembler)."""

    def _work_section(
        self,
        draft: Draft,
        work: WorkFound | None,
        session_id: str,
        visible: VisibleText,
        *,
        recent: bool = False,
        terms: QueryTerms | None = None,
        steps: bool = False,
        results_only: bool = False,
    ) -> None:
        """Work records, within ``assembly.workBudgetTokens`` of the remaining budget:
        the ones the query names, or with ``recent``, where the session was. A record
        the query names says something when it changed a file, did not simply work, or
        its target (the file, the command) names what the query does; a request that
        names nothing specific names no record. Records that only worked come in only
        for ``steps``, a question a step itself may answer (``asks_for_steps``); none
        for ``results_only``, a request that asks nothing about earlier work. Where we
        were is what changed or failed last, never a read or a run that worked."""
        if work is None:
            return
        hits = work.recent if recent else work.relevant
        if recent:
            hits = _few_plain(draft, hits, 0, "where we were is what changed or failed")
        elif results_only:
            for hit in hits:
                draft.omit(hit.ref, "work", ON_THE_WAY, hit.score, "a tool call")
            return
        elif terms is not None:
            hits = tuple(h for h in hits if self._says_something(draft, h, terms))
            hits = _few_plain(draft, hits, PLAIN_RECORDS if steps else 0)
        if not hits:
            return
        cap = min(draft.remaining, self.config.assembly.work_budget_tokens)
        rest = draft.remaining - cap
        draft.remaining = cap
        entries = [
            Entry(h.ref, "work", self.work_line(h), 0, RECENT if h.recent else h.row.action)
            for h in hits
        ]
        title = self.title("work", entries)
        for rank, (hit, entry) in enumerate(zip(hits, entries, strict=True)):
            if visible and work_visible(hit, session_id, work.compacted_at):
                draft.omit(hit.ref, "work", VISIBLE, hit.score, "after the latest compaction")
                continue
            draft.offer(
                "work",
                title,
                hit.ref,
                entry.line,
                kind=entry.kind,
                score=hit.score,
                why=hit.why,
                group=self.session_heading(hit.row.session_id),
                # Grouped by session, still in rank order within each group.
                position=rank,
            )
        draft.remaining += rest
        # What the work budget left out stays out: a top-up is for the other sections.
        draft.deferred = [d for d in draft.deferred if d[1] != "work"]

    @staticmethod
    def _says_something(draft: Draft, hit: WorkHit, terms: QueryTerms) -> bool:
        if not terms.specific:
            draft.omit(hit.ref, "work", NOT_SPECIFIC, hit.score, hit.why)
            return False
        row = hit.row
        plain = row.outcome == "succeeded" and row.action in _ONLY_OK
        if plain and not terms.found(row.target).specific:
            draft.omit(hit.ref, "work", ONLY_OK, hit.score, row.action)
            return False
        return True

    def _where_we_were(
        self,
        draft: Draft,
        work: WorkFound | None,
        session_id: str,
        visible: VisibleText,
        answered: bool,
    ) -> None:
        """After a compaction, the last records before it — for a step whose request
        nothing else in memory answers ("ok, carry on"); where something does, they
        would only cost the step its tokens."""
        if work is None or not work.recent:
            return
        if answered:
            for hit in work.recent:
                draft.omit(hit.ref, "work", ANSWERED)
            return
        self._work_section(draft, work, session_id, visible, recent=True)

    def work_line(self, hit: WorkHit) -> str:
        """A record's line under its session's heading: what the call did, how it ended."""
        labels, row = self.labels, hit.row
        target = row.target
        if row.action in ("ran", "searched"):
            target = "`" + target.replace("`", "'") + "`"
        elif row.action == "delegated":
            target = '"' + target + '"'
        elif row.action == "called":
            target = row.tool
        line = f"- [ev :{row.seq}] {labels[f'work.{row.action}']} {target}"
        ended = []
        if row.outcome is None:
            ended.append(labels["outcome.none"])
        elif row.outcome != "succeeded" or row.action in ("ran", "delegated"):
            ended.append(labels.get(f"outcome.{row.outcome}", row.outcome))
        if row.exit_code is not None:
            ended.append(labels["outcome.exit"].format(code=row.exit_code))
        return line + (" → " + labels["sep"].join(ended) if ended else "")


def _few_plain(
    draft: Draft, hits: tuple[WorkHit, ...], most: int, none_because: str = NO_STEP
) -> tuple[WorkHit, ...]:
    """At most ``most`` records that only worked (or were interrupted), in rank order;
    every change and every failure. ``none_because``: the detail when ``most`` is 0."""
    kept: list[WorkHit] = []
    plain = 0
    for hit in hits:
        row = hit.row
        # An interrupted call (the person stopped it) found nothing either.
        only_ran = row.outcome in ("succeeded", "aborted")
        if only_ran and row.action not in ("edited", "wrote", "delegated"):
            plain += 1
            if plain > most:
                detail = f"past the first {most} records that only worked" if most else none_because
                draft.omit(hit.ref, "work", ONLY_OK, hit.score, detail)
                continue
        kept.append(hit)
    return tuple(kept)
