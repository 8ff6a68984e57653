"""Retrieval: ranked memory items and raw evidence, with coverage; ``search`` and ``expand``.

Local, model-free and deterministic: the same events, items and config give the same
ranking in any database that holds them (ties break by stable identity, never by
rowid; recency is measured in the events' own sequence numbers).

Three entry points on :class:`Retriever`:

``retrieve(session_id, task_text, *, scope="project", limit=None, branches="active")``
    What the assembler calls before a step. Returns a :class:`RetrievalResult`::

        items     [RankedItem]   memory items, best first (superseded ones included,
                                 scored x0.4, so the notice can name them)
        evidence  [RankedEvent]  raw events: ranked hits plus the source events of the
                                 selected items (``why = "source:<item id>"``);
                                 generated text (memplug's own injections, compaction
                                 summaries, harness reminders) is never evidence
        omitted   [Omitted]      candidates left out, each with its reason
        successors {id: RankedItem}  what superseded items were superseded by
        coverage  Coverage       {complete, reasons[]}: empty is authoritative only
                                 when complete
        signals   dict           the query terms (logged by assembly)

``search(query, *, session=None, scope=None, mode="literal", match="any", role=(),
type=(), tool=(), outcome=(), since=None, until=None, branches="active", limit=5)``
    One mixed, totally ordered stream of item and event hits, paged:
    :class:`SearchPage` ``{total, hits, next, coverage}``. ``next`` is a complete call
    token (pass it to :meth:`Retriever.page`) that pins the snapshot it was cut from.

``expand(target, *, before=0, after=0, max_chars=20000)``
    Full text around a hit (``follow`` token, ``SESSION:SEQ`` or a ``mem_…`` id), in
    chunks with ``text_range {start, end, total, complete}``; ``next`` continues.

Ranking, per candidate (see ``docs/search.md`` for the reasoning and the figures):

* lexical: BM25 re-scored in code, its length normalised against a fixed pivot, one
  contribution per thing the query said (a word through the prefix it shares with its
  Snowball stem, a match whose own stem differs counting half; a symbol, a phrase, a
  CJK run through its best window), normalised by the query's total IDF so that 1.0
  means "every term once";
* events: ``(lexical + exact boost) x role weight + recency``, then
  ``+ 0.5 x the best score in the same session`` and neighbour spread (the next event
  gets 0.6, the previous 0.3 of a hit's score, the event one further half of that,
  times its own role weight; a neighbour that matched nothing joins as ``near:REF``)
  — evidence sits next to what matches;
* items: ``(kind weight + lexical + exact boost) x evidence weight``, x0.4 when
  superseded, plus recency within ``recencyWindow`` sequence numbers;
* pinning: a candidate holding a numeric or versioned symbol of the query verbatim
  (``8080``, ``v2.31.5``, ``billing2``; never a lone digit) ranks above every
  candidate that does not; the score is unchanged, the band is in the sort key.

One job per module, depending downward in this order:

``retriever``  the :class:`Retriever` facade
``search`` · ``evidence`` · ``expand``  search pages · what a pre-step gets · expand
``scoring``  items, events (first pass, full pass, spread), the scoring context
``adjacency``  the previous/next event around a hit
``candidates``  the candidate pool and its document frequencies
``lexical``  counting query terms in a text, pins, word boundaries, IDF
``branches``  the active path of a branching session, and the pool filter
``request``  input checks, the search request, scope resolution
``ranking`` · ``models`` · ``coverage`` · ``tokens`` · ``refs``  weights, result
types, coverage reasons, call tokens, ``SESSION:SEQ`` references

Nothing here holds SQL or touches a connection: every read goes through
:class:`~memplug.store.search.SearchStore`.
"""

from __future__ import annotations

from memplug.recall.retrieve.branches import active_path
from memplug.recall.retrieve.coverage import (
    CANDIDATE_BUDGET,
    LIKE_CAP,
    LIKE_WINDOW,
    PARENT_CYCLE,
    REGEX_HAYSTACK,
    REGEX_TIMEOUT,
    STALE_POINTER,
    TERMS_CAPPED,
    TRUNCATED,
    UNKNOWN_SESSION,
)
from memplug.recall.retrieve.models import (
    Coverage,
    ExpandResult,
    Hit,
    Omitted,
    RankedEvent,
    RankedItem,
    RetrievalResult,
    SearchPage,
)
from memplug.recall.retrieve.ranking import HARD_LIMIT
from memplug.recall.retrieve.retriever import Retriever

__all__ = [
    "CANDIDATE_BUDGET",
    "HARD_LIMIT",
    "LIKE_CAP",
    "LIKE_WINDOW",
    "PARENT_CYCLE",
    "REGEX_HAYSTACK",
    "REGEX_TIMEOUT",
    "STALE_POINTER",
    "TERMS_CAPPED",
    "TRUNCATED",
    "UNKNOWN_SESSION",
    "Coverage",
    "ExpandResult",
    "Hit",
    "Omitted",
    "RankedEvent",
    "RankedItem",
    "RetrievalResult",
    "Retriever",
    "SearchPage",
    "active_path",
]
