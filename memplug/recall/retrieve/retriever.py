"""The :class:`Retriever` facade: ``search``, ``page``, ``retrieve`` and ``expand`` over
one database, each delegating to the module that does the work."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from msgspec.structs import replace

from memplug.base.call_tokens import decode_token, unpack_query
from memplug.base.config import Config as _Config
from memplug.base.errors import NotFound, ValidationError
from memplug.recall.query import parse_query
from memplug.recall.retrieve.adjacency import Adjacency
from memplug.recall.retrieve.branches import ActivePaths
from memplug.recall.retrieve.candidates import Collector
from memplug.recall.retrieve.coverage import UNKNOWN_SESSION, coverage, next_steps, stale
from memplug.recall.retrieve.evidence import Selection, successors
from memplug.recall.retrieve.expand import EXPAND_MAX_CHARS, Expander
from memplug.recall.retrieve.models import Coverage, ExpandResult, RetrievalResult, SearchPage
from memplug.recall.retrieve.ranking import HARD_LIMIT, Ranking
from memplug.recall.retrieve.request import parse_request, resolve_scope
from memplug.recall.retrieve.scoring import Scorer
from memplug.recall.retrieve.strength import QueryTerms
from memplug.recall.retrieve.work import WorkFinder, WorkFound
from memplug.store.records import EventScope, ItemScope, Snapshot

if TYPE_CHECKING:
    from memplug.base.config import Config
    from memplug.recall.retrieve.search import Search
    from memplug.semantic.service import Semantic, SemanticHits
    from memplug.store.ports import SearchPort, Storage, WorkPort


class Retriever:
    """Ranked retrieval over one database; see :mod:`memplug.recall.retrieve` for the API."""

    def __init__(
        self,
        store: Storage | SearchPort,
        config: Config | None = None,
        semantic: Semantic | None = None,
    ) -> None:
        # A Storage holds its search port as `.search`; a bare search port (which has
        # none) has no work records either. Duck-typed: testing the Protocol would put
        # memplug.store.ports on the prompt hook's imports.
        storage = cast("Storage", store) if hasattr(store, "search") else None
        self.search_store: SearchPort = (
            storage.search if storage is not None else cast("SearchPort", store)
        )
        if config is None:
            config = _Config()
        self.config = config
        # The semantic provider's side (None when it is off): its candidates join the
        # lexical ones, weighted by `semantic.weight`.
        self.semantic = semantic if semantic is not None and semantic.enabled else None
        # Read at each call, not bound into helpers: tests and callers may replace it.
        self.ranking = Ranking(config.retrieval)
        if self.semantic is not None:
            self.ranking = replace(
                self.ranking,
                semantic_weight=config.semantic.weight,
                semantic_rank_k=config.semantic.rank_k,
            )
        self._paths = ActivePaths(self.search_store)
        self.work_store: WorkPort | None = storage.work if storage is not None else None

    def search(
        self,
        query: str,
        *,
        session: str | None = None,
        scope: str | None = None,
        mode: str = "literal",
        match: str = "any",
        role: str | Sequence[str] | None = None,
        type: str | Sequence[str] | None = None,
        tool: str | Sequence[str] | None = None,
        outcome: str | Sequence[str] | None = None,
        since: str | None = None,
        until: str | None = None,
        branches: str = "active",
        limit: int | None = None,
    ) -> SearchPage:
        """Search events and memory items; see the package docstring for the shape."""
        args = {
            "query": query,
            "session": session,
            "scope": scope,
            "mode": mode,
            "match": match,
            "role": role,
            "type": type,
            "tool": tool,
            "outcome": outcome,
            "since": since,
            "until": until,
            "branches": branches,
            "limit": limit,
        }
        request = parse_request(args, self.ranking.config.regex_max_pattern_bytes)
        snap = self.search_store.snapshot()
        return self._search().page(request, snap, 0, None)

    def page(self, token: str, query: str | None = None) -> SearchPage:
        """Follow a ``next`` token: the same call, the same snapshot, the next page.
        ``query`` is the search's query again, for a token that carries only its digest
        (a query over ``TOKEN_QUERY_CHARS``)."""
        data = decode_token(token)
        if data.get("op") != "search":
            raise ValidationError("this token is not a search page token (use expand)")
        try:
            args = unpack_query(dict(data["a"]), query)
            e, m = (int(x) for x in data["snap"])
            offset = int(data["o"])
            scope_size = float(data["n"])
            delivered = str(data["h"])
        except (KeyError, TypeError, ValueError):
            raise ValidationError("malformed memplug call token") from None
        request = parse_request(args, self.ranking.config.regex_max_pattern_bytes)
        snap = Snapshot(e, m)
        try:
            return self._search().page(request, snap, max(0, offset), scope_size, delivered)
        except NotFound as error:
            # The session the search was about is gone: purged since the first page.
            return SearchPage(total=0, hits=[], next=None, coverage=stale(str(error)))

    def retrieve(
        self,
        session_id: str,
        task_text: str,
        *,
        scope: str = "project",
        limit: int | None = None,
        branches: str = "active",
    ) -> RetrievalResult:
        """Memory items and raw evidence for the step's task text (for assembly)."""
        store, ranking = self.search_store, self.ranking
        limit = min(HARD_LIMIT, max(1, limit or ranking.limit))
        signals = parse_query(task_text)
        exists, _ = store.session_project(session_id)
        if not exists:
            return RetrievalResult(
                session_id=session_id,
                items=(),
                evidence=(),
                omitted=(),
                coverage=Coverage(
                    complete=True,
                    reasons=[UNKNOWN_SESSION],
                    next_steps=next_steps([UNKNOWN_SESSION]),
                ),
                signals=signals.to_json(),
            )
        resolved = resolve_scope(store, scope, session_id)
        snap = store.snapshot()
        event_scope = EventScope(session_ids=resolved.session_ids, include_generated=False)
        item_scope = ItemScope(session_ids=resolved.session_ids)
        collector = Collector(store, ranking, self._paths, event_scope, item_scope, snap)
        found = self._similar(task_text, event_scope, snap)
        pool = collector.collect(signals, "any", resolved, branches, semantic=found)
        scorer = Scorer(signals, pool, ranking, store)
        adjacency = Adjacency(store, self._paths, event_scope, snap, branches)
        selection = Selection(store, ranking, limit)
        items = selection.items(scorer.items())
        evidence = selection.events(scorer.events(adjacency, anchor=resolved.anchor))
        evidence += selection.sources(items)
        return RetrievalResult(
            session_id=session_id,
            items=tuple(items),
            evidence=tuple(evidence),
            omitted=tuple(selection.omitted),
            coverage=coverage(pool.reasons),
            signals=self._signals(signals.to_json()),
            successors=successors(store, items),
            terms=None
            if signals.empty
            else QueryTerms(signals, pool.event_df, pool.event_n, ranking),
        )

    def work(
        self, session_id: str, task_text: str, *, scope: str = "project", limit: int, recent: int
    ) -> WorkFound:
        """Work records for a step: those its task text names, and — when none is named
        and the session was compacted — the last ``recent`` before the compaction."""
        exists, _ = self.search_store.session_project(session_id)
        if not exists or self.work_store is None:
            return WorkFound()
        resolved = resolve_scope(self.search_store, scope, session_id)
        finder = WorkFinder(
            self.work_store, self.search_store, self._paths, self.ranking.config.candidate_budget
        )
        compacted = self.work_store.latest_compaction(session_id)
        relevant = finder.relevant(parse_query(task_text), resolved.session_ids, limit)
        if relevant:
            return WorkFound(tuple(relevant), (), compacted)
        return WorkFound((), tuple(finder.recent(session_id, compacted, recent)), compacted)

    def expand(
        self,
        target: str,
        *,
        before: int = 0,
        after: int = 0,
        max_chars: int = EXPAND_MAX_CHARS,
        branches: str | None = None,
    ) -> ExpandResult:
        """Full text around a hit, in chunks; see the package docstring."""
        expander = Expander(self.search_store, self._paths)
        return expander.expand(target, before, after, max_chars, branches)

    def _signals(self, signals: dict[str, Any]) -> dict[str, Any]:
        """The query signals as logged; with a provider on, its name (explain uses it)."""
        if self.semantic is not None:
            signals["semantic"] = self.config.semantic.provider
        return signals

    def _similar(self, text: str, scope: EventScope, snap: Snapshot) -> SemanticHits | None:
        if self.semantic is None:
            return None
        return self.semantic.similar(text, scope, snap, self.config.semantic.candidates)

    def _search(self) -> Search:
        # Not imported at the top: the prompt hook retrieves, it does not search.
        from memplug.recall.retrieve.search import Search

        pull = self.ranking.config
        weights = {
            **pull.role_weights,
            "tool": pull.search_tool_weight,
            # What the host wrote into a person's turn is raw output too, on this path.
            "host": pull.search_tool_weight,
            "assistant": pull.search_assistant_weight,
        }
        ranking = replace(self.ranking, config=replace(pull, role_weights=weights))
        return Search(self.search_store, ranking, self._paths, self._similar)
