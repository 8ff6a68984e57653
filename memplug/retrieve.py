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
type=(), tool=(), outcome=(), since=None, until=None, branches="active", limit=20)``
    One mixed, totally ordered stream of item and event hits, paged:
    :class:`SearchPage` ``{total, hits, next, coverage}``. ``next`` is a complete call
    token (pass it to :meth:`Retriever.page`) that pins the snapshot it was cut from.

``expand(target, *, before=0, after=0, max_chars=20000)``
    Full text around a hit (``follow`` token, ``SESSION:SEQ`` or a ``mem_…`` id), in
    chunks with ``text_range {start, end, total, complete}``; ``next`` continues.

Ranking, per candidate (see ``docs/search.md`` for the reasoning and the figures):

* lexical: BM25 re-scored in code with ``b = 0`` (short turns: length normalisation
  hurts), one contribution per thing the query said (a word with its prefix stem, a
  symbol, a phrase, a CJK run through its best window), normalised by the query's
  total IDF so that 1.0 means "every term once";
* events: ``(lexical + exact boost) x role weight + recency``, then
  ``+ 0.5 x the best score in the same session`` and neighbour spread (the next event
  gets 0.6, the previous 0.3 of a hit's score) — evidence sits next to what matches;
* items: ``(kind weight + lexical + exact boost) x evidence weight``, x0.4 when
  superseded, plus recency within ``recencyWindow`` sequence numbers;
* pinning: a candidate holding a numeric or versioned symbol of the query verbatim
  (``8080``, ``v2.31.5``, ``billing2``; never a lone digit) ranks above every
  candidate that does not; the score is unchanged, the band is in the sort key.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from memplug.errors import NotFound, ValidationError
from memplug.models import format_time
from memplug.query import (
    MAX_TERMS,
    QuerySignals,
    Term,
    build_match,
    like_pattern,
    needs_verification,
    parse_query,
    scrub_surrogates,
)
from memplug.store.search import (
    BranchRow,
    EventCandidate,
    EventScope,
    ItemCandidate,
    ItemScope,
    LightEvent,
    SearchStore,
    Snapshot,
)
from memplug.text import canonical_json, clip, short_hash
from memplug.vocab import EVENT_TYPES, MEMPLUG_SOURCE_KIND, OUTCOMES, ROLES

if TYPE_CHECKING:
    import regex

    from memplug.config import Config, RetrievalConfig
    from memplug.store import Store

HARD_LIMIT = 100
SEARCH_PAGE_DEFAULT = 20
SNIPPET_CHARS = 240
EXPAND_MAX_CHARS = 20_000
EXPAND_MAX_CONTEXT = 50
TOKEN_PREFIX = "mp1."
# Neighbour spread looks at most this many events away for the previous/next one.
ADJACENT_REACH = 4

Mode = Literal["literal", "phrase", "regex"]
Match = Literal["any", "all"]
Branches = Literal["active", "all"]

# Coverage reasons (docs/search.md lists them with what each means).
CANDIDATE_BUDGET = "candidate_budget"
TERMS_CAPPED = "query_terms_capped"
LIKE_WINDOW = "like_scan_window"
LIKE_CAP = "like_fallback_cap"
TRUNCATED = "truncated_events"
REGEX_TIMEOUT = "regex_timeout"
REGEX_HAYSTACK = "regex_haystack_cap"
PARENT_CYCLE = "parent_cycle"
STALE_POINTER = "stale_pointer"
UNKNOWN_SESSION = "unknown_session"


# -- ranking constants ------------------------------------------------------------------


@dataclass(frozen=True)
class Ranking:
    """Ranking weights come from :class:`~memplug.config.RetrievalConfig` (defaults
    measured on LoCoMo, DESIGN.md "Ranking facts"); the rest are work budgets."""

    limit: int = 24
    min_score: float = 0.5
    candidate_budget: int = 400
    like_cap: int = 2_000
    exact_boost: float = 0.5
    recency_boost: float = 0.1
    recency_window: int = 40
    superseded_factor: float = 0.4
    kind_weights: dict[str, float] = field(default_factory=dict)
    evidence_weights: dict[str, float] = field(default_factory=dict)
    role_weights: dict[str, float] = field(default_factory=dict)
    regex_timeout_ms: int = 200
    regex_max_pattern_bytes: int = 512
    regex_max_haystack_chars: int = 2_000_000
    # BM25 re-scored in code: FTS5's bm25() hard-wires b = 0.75.
    k1: float = 1.2
    b: float = 0.0
    session_weight: float = 0.5
    next_spread: float = 0.6
    prev_spread: float = 0.3
    # Word matched whole, not only as a prefix: `billing服务` over `billing2服务`.
    boundary_bonus: float = 0.1
    generated_factor: float = 0.5
    # How many of the best hits spread to their neighbours.
    spread_top: int = 30
    # The pool stops taking new terms once it holds this many candidates.
    pool_factor: int = 4
    # A LIKE scan (needles under three characters) reads at most the newest rows.
    like_scan_rows: int = 20_000
    # Events score on a different scale than items (no kind weight): this is their floor.
    event_min_score: float = 0.0
    # How many candidates the full (text-reading) pass scores.
    rescore_top: int = 60
    # Events of the asking session within ``recency_window`` of its last event get
    # this share of ``recency_boost`` (items get all of it): over LoCoMo, where the
    # evidence is spread over a conversation's whole history, a full boost cost 0.005
    # recall@10.
    event_recency_share: float = 0.5

    @classmethod
    def from_config(cls, config: RetrievalConfig) -> Ranking:
        return cls(
            limit=min(HARD_LIMIT, max(1, config.limit)),
            min_score=config.min_score,
            candidate_budget=config.candidate_budget,
            like_cap=config.like_fallback_cap,
            exact_boost=config.exact_match_boost,
            recency_boost=config.recency_boost,
            recency_window=config.recency_window,
            superseded_factor=config.superseded_factor,
            kind_weights=dict(config.kind_weights),
            evidence_weights=dict(config.evidence_weights),
            role_weights=dict(config.role_weights),
            regex_timeout_ms=config.regex_timeout_ms,
            regex_max_pattern_bytes=config.regex_max_pattern_bytes,
            regex_max_haystack_chars=config.regex_max_haystack_chars,
            k1=config.bm25_k1,
            b=config.bm25_b,
            session_weight=config.session_weight,
            next_spread=config.next_spread,
            prev_spread=config.prev_spread,
            boundary_bonus=config.boundary_bonus,
            generated_factor=config.generated_factor,
            event_recency_share=config.event_recency_share,
        )

    def idf(self, df: float, n: float) -> float:
        # The always-positive form: FTS5's own (without the 1 +) gives a word in half
        # the turns no weight at all, which measured no better on LoCoMo.
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def sat(self, tf: int, length_ratio: float = 1.0) -> float:
        norm = 1.0 - self.b + self.b * length_ratio
        return tf * (self.k1 + 1.0) / (tf + self.k1 * norm)


# -- results -------------------------------------------------------------------------


class _Model(BaseModel):
    # Built on first use, not at import: the pre-step path never builds these.
    model_config = ConfigDict(frozen=True, defer_build=True)


class ErrorInfo(_Model):
    code: str
    message: str


class Coverage(_Model):
    """``complete`` is false when anything was cut; ``reasons`` names what."""

    complete: bool = True
    reasons: list[str] = []
    error: ErrorInfo | None = None


class Hit(_Model):
    """One search hit: an event (``session_id`` + ``seq``) or a memory item (``id``)."""

    kind: Literal["event", "memory"]
    session_id: str
    seq: int | None = None
    id: str | None = None
    score: float
    pinned: bool = False
    why: str
    snippet: str
    snippet_truncated: bool = False
    follow: str
    type: str | None = None
    role: str | None = None
    time: str | None = None
    tool_name: str | None = None
    outcome: str | None = None
    generated: bool = False
    truncated: bool = False
    item_kind: str | None = None
    status: str | None = None
    evidence_type: str | None = None


class SearchPage(_Model):
    total: int
    hits: list[Hit]
    next: str | None = None
    coverage: Coverage


class TextRange(_Model):
    start: int
    end: int
    total: int
    complete: bool


class ExpandedEvent(_Model):
    session_id: str
    seq: int
    type: str
    role: str | None = None
    time: str | None = None
    turn: int | None = None
    tool_name: str | None = None
    outcome: str | None = None
    generated: bool = False
    anchor: bool = False
    entry_id: str | None = None
    parent_id: str | None = None
    text: str
    text_range: TextRange


class ExpandResult(_Model):
    anchor: str | None = None
    item: dict[str, Any] | None = None
    events: list[ExpandedEvent] = []
    next: str | None = None
    coverage: Coverage


@dataclass(frozen=True)
class RankedItem:
    id: str
    kind: str
    content: str
    status: str
    evidence_type: str
    session_id: str
    score: float
    why: str
    pinned: bool
    superseded_by: str | None
    subject_key: str | None
    source_refs: tuple[tuple[str, int], ...]
    conditions: tuple[Any, ...]
    numbers: tuple[Any, ...]
    extractor: str


@dataclass(frozen=True)
class RankedEvent:
    session_id: str
    seq: int
    type: str
    role: str | None
    text: str
    score: float
    why: str
    pinned: bool
    time: str | None
    turn: int | None
    source_kind: str | None
    generated: bool
    truncated: bool
    tool_name: str | None
    outcome: str | None

    @property
    def ref(self) -> str:
        return f"{self.session_id}:{self.seq}"


@dataclass(frozen=True)
class Omitted:
    ref: str
    reason: str
    score: float | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ref": self.ref, "reason": self.reason}
        if self.score is not None:
            out["score"] = round(self.score, 4)
        return out


@dataclass(frozen=True)
class RetrievalResult:
    session_id: str
    items: tuple[RankedItem, ...]
    evidence: tuple[RankedEvent, ...]
    omitted: tuple[Omitted, ...]
    coverage: Coverage
    signals: dict[str, Any]
    successors: dict[str, RankedItem] = field(default_factory=dict)


# -- tokens ----------------------------------------------------------------------------


def encode_token(data: dict[str, Any]) -> str:
    """An opaque, URL-safe call token carrying every argument the call needs."""
    raw = base64.urlsafe_b64encode(canonical_json(data).encode("utf-8")).decode("ascii")
    return TOKEN_PREFIX + raw.rstrip("=")


def decode_token(token: str) -> dict[str, Any]:
    if not isinstance(token, str) or not token.startswith(TOKEN_PREFIX) or len(token) > 20_000:
        raise ValidationError("not a memplug call token")
    body = token[len(TOKEN_PREFIX) :]
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        data = json.loads(raw.decode("utf-8"))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise ValidationError("malformed memplug call token") from None
    if not isinstance(data, dict) or "op" not in data:
        raise ValidationError("malformed memplug call token")
    return data


def is_token(text: str) -> bool:
    return isinstance(text, str) and text.startswith(TOKEN_PREFIX)


# -- request resolution ------------------------------------------------------------------


@dataclass(frozen=True)
class _Request:
    query: str
    session: str | None
    scope: str | None
    mode: str
    match: str
    roles: tuple[str, ...]
    types: tuple[str, ...]
    tools: tuple[str, ...]
    outcomes: tuple[str, ...]
    since: str | None
    until: str | None
    branches: str
    limit: int

    def args(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "session": self.session,
            "scope": self.scope,
            "mode": self.mode,
            "match": self.match,
            "role": list(self.roles),
            "type": list(self.types),
            "tool": list(self.tools),
            "outcome": list(self.outcomes),
            "since": self.since,
            "until": self.until,
            "branches": self.branches,
            "limit": self.limit,
        }


def _tuple(value: str | Sequence[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(sorted({str(v) for v in value}))


def _check_vocab(name: str, values: tuple[str, ...], allowed: Iterable[str]) -> None:
    allowed = tuple(allowed)
    for value in values:
        if value not in allowed:
            raise ValidationError(
                f"unknown {name} '{value}' (expected one of: {', '.join(allowed)})"
            )


def parse_time(value: str | None, name: str) -> str | None:
    """An ISO-8601 date or time as memplug stores it (UTC, ``Z``); a date means midnight."""
    if value is None or value == "":
        return None
    text = str(value).strip()
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValidationError(f"--{name} must be an ISO-8601 date or time, not '{text}'") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return format_time(parsed)


def parse_ref(text: str) -> tuple[str, int] | None:
    """``SESSION:SEQ`` → ``(session, seq)``; the session may itself contain colons."""
    if ":" not in text:
        return None
    session, _, seq = text.rpartition(":")
    if not session or not seq.lstrip("-").isdigit():
        return None
    return session, int(seq)


# -- the engine ----------------------------------------------------------------------------


AnyEvent = EventCandidate | LightEvent


@dataclass
class _Pool:
    events: dict[int, AnyEvent] = field(default_factory=dict)
    items: dict[int, ItemCandidate] = field(default_factory=dict)
    event_df: dict[str, float] = field(default_factory=dict)
    item_df: dict[str, float] = field(default_factory=dict)
    # The scope's size for IDF: estimated once and carried in page tokens, so that
    # events appended after the first page cannot reweigh the terms of later pages.
    event_n: float = 1.0
    snap: Snapshot = field(default_factory=lambda: Snapshot(0, 0))
    item_n: float = 1.0
    reasons: set[str] = field(default_factory=set)
    # Which events each retrieved term matched (by the index: a substring anywhere).
    members: dict[str, set[int]] = field(default_factory=dict)
    regex_counts: dict[int, int] = field(default_factory=dict)
    item_regex_counts: dict[int, int] = field(default_factory=dict)
    # Filled lazily, as of the snapshot (see _last_seq).
    last_seq: dict[str, int | None] = field(default_factory=dict)


@dataclass
class _Scored:
    key: tuple[Any, ...]
    score: float
    pinned: bool
    why: str
    needle: str | None
    event: AnyEvent | None = None
    item: ItemCandidate | None = None


class _Counter:
    """Counts every term of a query in one text with a few regex scans.

    Words are stems, i.e. prefixes: they count only at the start of a word ("new" in
    "news", not in "renew"); the rest of each word is captured too, so one scan also
    tells whether the query's word occurred whole (``billing`` in ``billing服务`` but
    not in ``billing2服务``). Everything else (symbols, phrases, CJK needles) counts
    anywhere, longest alternative first, so a CJK run found whole counts as the run.
    """

    def __init__(self, signals: QuerySignals) -> None:
        self.groups: list[list[Term]] = [list(g) for g in signals.groups]
        words: list[str] = []
        padded: list[str] = []
        others: list[str] = []
        for group in self.groups:
            for term in group:
                if term.route == "padded":
                    padded.append(term.text)
                elif term.kind == "word" and term.text.isascii():
                    words.append(term.text)
                else:
                    others.append(term.text)
        self.word_rx = (
            re.compile(r"(?<![a-z0-9])(" + _alternation(words) + r")([a-z0-9]*)") if words else None
        )
        # The same matches, found faster: with every stem made of [a-z0-9] a match can
        # only begin a run of them, so "a separator, then the stem" (the text read with
        # a separator in front) is the lookbehind without testing it at every position.
        self.word_sep = bool(words) and all(_ALNUM_RUN.fullmatch(w) for w in words)
        if self.word_sep:
            self.word_rx = re.compile(r"[^a-z0-9](" + _alternation(words) + r")([a-z0-9]*)")
        self.padded_rx = (
            re.compile(r"(?<![^\W_])(?:" + _alternation(padded) + r")(?![^\W_])")
            if padded
            else None
        )
        self.other_rx = re.compile(_alternation(others)) if others else None
        # Filled by prepare() for one (idf, group_idf) pair; sat() values by tf.
        self.plan: list[tuple[list[tuple[str, Term, float, float]], float]] | None = None
        self.plan_key: tuple[int, int] = (0, 0)
        self.sat: dict[int, float] = {}

    def prepare(
        self, idf: dict[str, float], group_idf: list[float], ranking: Ranking
    ) -> list[tuple[list[tuple[str, Term, float, float]], float]]:
        """Per group: each term's (text, term, idf, CJK window weight) and the group's
        whole-word bonus, computed once per query rather than once per candidate."""
        plan = []
        for g_index, group in enumerate(self.groups):
            head_len = max(len(t.text) for t in group)
            entries = [
                (
                    term.text,
                    term,
                    idf.get(term.text, group_idf[g_index]),
                    len(term.text) / head_len if term.kind == "cjk" else 1.0,
                )
                for term in group
            ]
            plan.append((entries, ranking.boundary_bonus * group_idf[g_index]))
        self.plan, self.plan_key = plan, (id(idf), id(group_idf))
        return plan

    def counts(self, text: str) -> tuple[dict[str, int], set[str]]:
        """Occurrences per needle, and the whole words the word needles began."""
        found: dict[str, int] = {}
        whole: set[str] = set()
        if self.word_rx is not None:
            haystack = " " + text if self.word_sep else text
            for stem_text, rest in self.word_rx.findall(haystack):
                found[stem_text] = found.get(stem_text, 0) + 1
                whole.add(stem_text + rest)
        for rx in (self.padded_rx, self.other_rx):
            if rx is None:
                continue
            for needle in rx.findall(text):
                found[needle] = found.get(needle, 0) + 1
        return found, whole


_ALNUM_RUN = re.compile(r"[a-z0-9]+")


def _alternation(needles: Iterable[str]) -> str:
    unique = sorted(set(needles), key=lambda n: (-len(n), n))
    return "|".join(re.escape(n) for n in unique)


@dataclass(frozen=True)
class _Scope:
    kind: str
    session_ids: tuple[str, ...] | None
    project: str | None
    anchor: str | None


class Retriever:
    """Ranked retrieval over one database; see the module docstring for the API."""

    def __init__(self, store: Store | SearchStore, config: Config | None = None) -> None:
        self.search_store: SearchStore = store if isinstance(store, SearchStore) else store.search
        if config is None:
            from memplug.config import Config as _Config

            config = _Config()
        self.config = config
        self.ranking = Ranking.from_config(config.retrieval)
        self._paths: dict[tuple[str, int, int], tuple[list[int], bool]] = {}
        self._path_seqs: dict[tuple[str, int, int], frozenset[int]] = {}

    # -- public API ---------------------------------------------------------------------

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
        """Search events and memory items; see the module docstring for the shape."""
        request = self._request(
            query,
            session,
            scope,
            mode,
            match,
            role,
            type,
            tool,
            outcome,
            since,
            until,
            branches,
            limit,
        )
        snap = self.search_store.snapshot()
        return self._search_page(request, snap, 0, None)

    def page(self, token: str) -> SearchPage:
        """Follow a ``next`` token: the same call, the same snapshot, the next page."""
        data = decode_token(token)
        if data.get("op") != "search":
            raise ValidationError("this token is not a search page token (use expand)")
        try:
            args = dict(data["a"])
            e, m = (int(x) for x in data["snap"])
            offset = int(data["o"])
            scope_size = float(data["n"])
            delivered = str(data["h"])
        except (KeyError, TypeError, ValueError):
            raise ValidationError("malformed memplug call token") from None
        request = self._request(
            args.get("query", ""),
            args.get("session"),
            args.get("scope"),
            args.get("mode", "literal"),
            args.get("match", "any"),
            args.get("role"),
            args.get("type"),
            args.get("tool"),
            args.get("outcome"),
            args.get("since"),
            args.get("until"),
            args.get("branches", "active"),
            args.get("limit"),
        )
        snap = Snapshot(e, m)
        try:
            return self._search_page(request, snap, max(0, offset), scope_size, delivered)
        except NotFound as error:
            # The session the search was about is gone: purged since the first page.
            return SearchPage(total=0, hits=[], next=None, coverage=_stale(str(error)))

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
        ranking = self.ranking
        limit = min(HARD_LIMIT, max(1, limit or ranking.limit))
        signals = parse_query(task_text)
        exists, _ = self.search_store.session_project(session_id)
        if not exists:
            return RetrievalResult(
                session_id=session_id,
                items=(),
                evidence=(),
                omitted=(),
                coverage=Coverage(complete=True, reasons=[UNKNOWN_SESSION]),
                signals=signals.to_json(),
            )
        resolved = self._resolve_scope(scope, session_id)
        snap = self.search_store.snapshot()
        event_scope = EventScope(session_ids=resolved.session_ids, include_generated=False)
        item_scope = ItemScope(session_ids=resolved.session_ids)
        pool = self._collect(signals, "any", event_scope, item_scope, snap, branches, resolved)
        items = self._score_items(signals, pool, ranking)
        events = self._score_events(signals, pool, event_scope, snap, ranking, resolved, branches)

        omitted: list[Omitted] = []
        kept_items: list[RankedItem] = []
        for scored in items:
            assert scored.item is not None
            # Only kept items are built in full (source refs and lists parsed): most of
            # the pool is omitted, and an omission needs only the id and the score.
            if scored.score < ranking.min_score and not scored.pinned:
                omitted.append(Omitted(scored.item.id, "below min score", scored.score))
            elif len(kept_items) >= limit:
                omitted.append(Omitted(scored.item.id, "over limit", scored.score))
            else:
                kept_items.append(_ranked_item(scored))
        evidence: list[RankedEvent] = []
        seen: set[tuple[str, int]] = set()
        events = self._with_text(events, limit)
        for scored in events:
            assert scored.event is not None
            ev = scored.event
            if scored.score < ranking.event_min_score and not scored.pinned:
                omitted.append(Omitted(ev.ref, "below min score", scored.score))
            elif len(evidence) >= limit:
                omitted.append(Omitted(ev.ref, "over limit", scored.score))
            else:
                evidence.append(_ranked_event(scored))
                seen.add((ev.session_id, ev.seq))
        # The events behind the selected items, so assembly can quote them verbatim.
        refs = [
            (ref, item.id)
            for item in kept_items
            if item.status in ("active", "disputed")
            for ref in item.source_refs
        ]
        wanted = [ref for ref, _ in refs if ref not in seen]
        by_ref = {(e.session_id, e.seq): e for e in self.search_store.events_by_refs(wanted)}
        for ref, item_id in refs:
            event = by_ref.get(ref)
            if event is None or ref in seen:
                continue
            seen.add(ref)
            if event.generated or event.source_kind == MEMPLUG_SOURCE_KIND:
                omitted.append(Omitted(event.ref, "generated source"))
                continue
            evidence.append(
                _ranked_event(
                    _Scored(
                        key=(),
                        score=0.0,
                        pinned=False,
                        why=f"source:{item_id}",
                        needle=None,
                        event=event,
                    )
                )
            )
        successors = self._successors(kept_items)
        return RetrievalResult(
            session_id=session_id,
            items=tuple(kept_items),
            evidence=tuple(evidence),
            omitted=tuple(omitted),
            coverage=_coverage(pool.reasons),
            signals=signals.to_json(),
            successors=successors,
        )

    def expand(
        self,
        target: str,
        *,
        before: int = 0,
        after: int = 0,
        max_chars: int = EXPAND_MAX_CHARS,
        branches: str | None = None,
    ) -> ExpandResult:
        """Full text around a hit, in chunks; see the module docstring."""
        before = _bounded(before, "before")
        after = _bounded(after, "after")
        max_chars = max(1, min(int(max_chars), EXPAND_MAX_CHARS))
        cursor = (0, 0)
        expected_hash: str | None = None
        top: int | None = None
        target = (target or "").strip()
        if is_token(target):
            data = decode_token(target)
            op = data.get("op")
            if op == "item":
                return self._expand_item(str(data.get("id", "")), max_chars, token=True)
            if op != "expand":
                raise ValidationError("this token is not an expand token (use search --next)")
            try:
                session_id, seq = str(data["s"]), int(data["q"])
                expected_hash = data.get("h")
                before = _bounded(int(data.get("b", before)), "before")
                after = _bounded(int(data.get("a", after)), "after")
                branches = str(data.get("br", branches or "all"))
                cursor = (int(data.get("ci", 0)), int(data.get("co", 0)))
                top = int(data["top"]) if data.get("top") is not None else None
                max_chars = max(1, min(int(data.get("mc", max_chars)), EXPAND_MAX_CHARS))
            except (KeyError, TypeError, ValueError):
                raise ValidationError("malformed memplug call token") from None
            from_token = True
        elif target.startswith("mem_"):
            return self._expand_item(target, max_chars, token=False)
        else:
            ref = parse_ref(target)
            if ref is None:
                shown = clip(target, 60)
                raise ValidationError(
                    f"expand takes a follow token, SESSION:SEQ or a mem_ id, not '{shown}'"
                )
            session_id, seq = ref
            from_token = False
        branches = branches or "all"
        if branches not in ("active", "all"):
            raise ValidationError("--branches must be 'active' or 'all'")
        anchor = self.search_store.event_by_ref(session_id, seq)
        if anchor is None or (expected_hash and not anchor.content_hash.startswith(expected_hash)):
            if from_token:
                return ExpandResult(
                    anchor=f"{session_id}:{seq}",
                    coverage=_stale("the event this token points at is gone (purged)"),
                )
            raise NotFound(f"no event {session_id}:{seq}")
        snap = Snapshot(top if top is not None else self.search_store.snapshot().max_event_id, 0)
        reasons: set[str] = set()
        scope = EventScope(session_ids=(session_id,))
        if branches == "active":
            path, cycle = self._active_path(session_id, snap)
            if cycle:
                reasons.add(PARENT_CYCLE)
            on_path = set(path)
            if path and anchor.id not in on_path:
                return ExpandResult(
                    anchor=anchor.ref,
                    coverage=Coverage(
                        complete=False,
                        reasons=["address_not_on_active_branch"],
                        error=ErrorInfo(
                            code="address_not_found",
                            message=f"{anchor.ref} is not on the session's active branch "
                            "(use --branches all)",
                        ),
                    ),
                )
            if path:
                ordered = [
                    e
                    for e in self.search_store.session_in_scope(session_id, scope, snap)
                    if e.id in on_path or e.id == anchor.id
                ]
                idx = next((i for i, e in enumerate(ordered) if e.id == anchor.id), None)
                if idx is None:
                    earlier, later = [], []
                else:
                    earlier = ordered[max(0, idx - before) : idx]
                    later = ordered[idx + 1 : idx + 1 + after]
            else:
                earlier, later = self.search_store.neighbours(
                    session_id, seq, scope, snap, before=before, after=after
                )
        else:
            earlier, later = self.search_store.neighbours(
                session_id, seq, scope, snap, before=before, after=after
            )
        window = [*earlier, anchor, *later]
        events: list[ExpandedEvent] = []
        budget = max_chars
        next_token: str | None = None
        start_index, start_offset = cursor
        for index, event in enumerate(window):
            if index < start_index:
                continue
            full = self._full_text(event)
            begin = start_offset if index == start_index else 0
            begin = min(begin, len(full))
            take = min(budget, len(full) - begin)
            end = begin + take
            events.append(_expanded(event, full, begin, end, anchor=event.id == anchor.id))
            budget -= take
            if end < len(full) or (budget <= 0 and index + 1 < len(window)):
                next_index, next_offset = (index, end) if end < len(full) else (index + 1, 0)
                next_token = encode_token(
                    {
                        "op": "expand",
                        "s": session_id,
                        "q": seq,
                        "h": anchor.content_hash[:16],
                        "b": before,
                        "a": after,
                        "br": branches,
                        "ci": next_index,
                        "co": next_offset,
                        "top": snap.max_event_id,
                        "mc": max_chars,
                    }
                )
                break
        return ExpandResult(
            anchor=anchor.ref, events=events, next=next_token, coverage=_coverage(reasons)
        )

    # -- request handling ------------------------------------------------------------------

    def _request(
        self,
        query: str,
        session: str | None,
        scope: str | None,
        mode: str,
        match: str,
        role: Any,
        type_: Any,
        tool: Any,
        outcome: Any,
        since: str | None,
        until: str | None,
        branches: str,
        limit: int | None,
    ) -> _Request:
        if mode not in ("literal", "phrase", "regex"):
            raise ValidationError("--mode must be one of: literal, phrase, regex")
        if match not in ("any", "all"):
            raise ValidationError("--match must be 'any' or 'all'")
        if branches not in ("active", "all"):
            raise ValidationError("--branches must be 'active' or 'all'")
        roles, types, tools, outcomes = _tuple(role), _tuple(type_), _tuple(tool), _tuple(outcome)
        _check_vocab("role", roles, ROLES)
        _check_vocab("type", types, EVENT_TYPES)
        _check_vocab("outcome", outcomes, OUTCOMES)
        if limit is None:
            limit = SEARCH_PAGE_DEFAULT
        try:
            limit = int(limit)
        except (TypeError, ValueError):
            raise ValidationError("--limit must be a whole number") from None
        if limit < 1:
            raise ValidationError("--limit must be at least 1")
        query = scrub_surrogates(str(query or ""))
        if mode == "regex":
            self._compile_regex(query)
        return _Request(
            query=query,
            session=session or None,
            scope=scope or None,
            mode=mode,
            match=match,
            roles=roles,
            types=types,
            tools=tools,
            outcomes=outcomes,
            since=parse_time(since, "since"),
            until=parse_time(until, "until"),
            branches=branches,
            limit=min(limit, HARD_LIMIT),
        )

    def _compile_regex(self, pattern: str) -> regex.Pattern[str]:
        size = len(pattern.encode("utf-8", "surrogatepass"))
        most = self.ranking.regex_max_pattern_bytes
        if size > most:
            raise ValidationError(f"regex pattern is {size} bytes; the limit is {most}")
        if not pattern:
            raise ValidationError("an empty regex pattern matches everything; give a pattern")
        import regex  # only regex mode pays for it; a hook process never does

        try:
            return regex.compile(pattern, regex.IGNORECASE | regex.VERSION1)
        except (regex.error, ValueError, OverflowError, RecursionError) as error:
            raise ValidationError(f"invalid regular expression: {error}") from None

    def _resolve_scope(self, scope: str | None, session: str | None) -> _Scope:
        store = self.search_store
        if session is not None:
            exists, project = store.session_project(session)
            if not exists:
                raise NotFound(f"no session '{session}' in this database")
        else:
            project = None
        if scope is None:
            scope = "project" if session is not None else "global"
        if scope.startswith("session:"):
            target = scope[len("session:") :]
            if not target:
                raise ValidationError("--scope session:<id> needs a session id")
            exists, _ = store.session_project(target)
            if not exists:
                raise NotFound(f"no session '{target}' in this database")
            return _Scope("session", (target,), None, target)
        if scope == "global":
            return _Scope("global", None, None, session)
        if scope in ("session", "project"):
            if session is None:
                raise ValidationError(f"--scope {scope} needs --session")
            if scope == "project" and project is not None:
                # events.project keeps what the host sent; the session's project (its
                # cwd when the host named none) is what groups sessions.
                members = tuple(store.project_sessions(project))
                return _Scope("project", members, project, session)
            return _Scope("session", (session,), None, session)
        raise ValidationError("--scope must be session, project, global or session:<id>")

    # -- search ----------------------------------------------------------------------------

    def _search_page(
        self,
        request: _Request,
        snap: Snapshot,
        offset: int,
        scope_size: float | None,
        delivered: str | None = None,
    ) -> SearchPage:
        resolved = self._resolve_scope(request.scope, request.session)
        ranking = self.ranking
        event_scope = EventScope(
            session_ids=resolved.session_ids,
            roles=request.roles,
            types=request.types,
            tools=request.tools,
            outcomes=request.outcomes,
            since=request.since,
            until=request.until,
            exclude_source_kinds=(MEMPLUG_SOURCE_KIND,),
        )
        structural = bool(
            request.roles
            or request.types
            or request.tools
            or request.outcomes
            or request.since
            or request.until
        )
        # Memory items have no role, tool or time: a structural filter is about events.
        item_scope = None if structural else ItemScope(session_ids=resolved.session_ids)
        signals = parse_query(request.query, mode=request.mode)
        pool = self._collect(
            signals,
            request.match,
            event_scope,
            item_scope,
            snap,
            request.branches,
            resolved,
            regex_pattern=request.query if request.mode == "regex" else None,
            scope_size=scope_size,
        )
        scored = self._score_items(signals, pool, ranking) if item_scope is not None else []
        scored += self._score_events(
            signals,
            pool,
            event_scope,
            snap,
            ranking,
            resolved,
            request.branches,
            # A structural filter asks for those events, not for what surrounds them.
            spread=request.mode == "literal" and not structural,
            # A search hit must match; what surrounds it is one `expand` away.
            neighbours_as_hits=False,
        )
        scored.sort(key=lambda s: s.key)
        total = len(scored)
        # The hits already handed out must come out the same: otherwise a purge, a
        # retraction or a status change has moved the ranking under the caller, and a
        # silently shifted page would skip or repeat hits.
        if delivered is not None and _digest(scored[:offset]) != delivered:
            return SearchPage(
                total=0,
                hits=[],
                next=None,
                coverage=_stale(
                    "the events or items this search was ranked from have changed "
                    "(purged, retracted or superseded) since its first page"
                ),
            )
        page = self._with_text(scored[offset : offset + request.limit])
        hits = [self._hit(s, request.branches) for s in page]
        next_token = None
        if offset + request.limit < total:
            end = offset + request.limit
            next_token = encode_token(
                {
                    "op": "search",
                    "a": request.args(),
                    "o": end,
                    "n": pool.event_n,
                    "snap": [snap.max_event_id, snap.max_item_rid],
                    "h": _digest(scored[:end]),
                }
            )
        return SearchPage(total=total, hits=hits, next=next_token, coverage=_coverage(pool.reasons))

    def _hit(self, scored: _Scored, branches: str) -> Hit:
        if scored.event is not None:
            ev = scored.event
            assert isinstance(ev, EventCandidate), "page events are read in full first"
            snippet, cut = _snippet(ev.text or "", scored.needle)
            follow = encode_token(
                {
                    "op": "expand",
                    "s": ev.session_id,
                    "q": ev.seq,
                    "h": ev.content_hash[:16],
                    "br": branches,
                }
            )
            return Hit(
                kind="event",
                session_id=ev.session_id,
                seq=ev.seq,
                score=round(scored.score, 4),
                pinned=scored.pinned,
                why=scored.why,
                snippet=snippet,
                snippet_truncated=cut or bool(ev.truncated),
                follow=follow,
                type=ev.type,
                role=ev.role,
                time=ev.event_time,
                tool_name=ev.tool_name,
                outcome=ev.outcome,
                generated=bool(ev.generated),
                truncated=bool(ev.truncated),
            )
        item = scored.item
        assert item is not None
        snippet, cut = _snippet(item.content, scored.needle)
        return Hit(
            kind="memory",
            session_id=item.session_id,
            id=item.id,
            score=round(scored.score, 4),
            pinned=scored.pinned,
            why=scored.why,
            snippet=snippet,
            snippet_truncated=cut,
            follow=encode_token({"op": "item", "id": item.id}),
            item_kind=item.kind,
            status=item.status,
            evidence_type=item.evidence_type,
        )

    # -- candidate collection ---------------------------------------------------------------

    def _collect(
        self,
        signals: QuerySignals,
        match: str,
        event_scope: EventScope,
        item_scope: ItemScope | None,
        snap: Snapshot,
        branches: str,
        resolved: _Scope,
        *,
        regex_pattern: str | None = None,
        scope_size: float | None = None,
    ) -> _Pool:
        store = self.search_store
        ranking = self.ranking
        pool = _Pool()
        if signals.capped:
            pool.reasons.add(TERMS_CAPPED)
        if scope_size is None:
            scope_size = float(max(1, store.scope_stats(resolved.session_ids).events))
        pool.event_n = scope_size
        pool.snap = snap
        if self._scope_has_truncated(resolved):
            pool.reasons.add(TRUNCATED)
        if regex_pattern is not None:
            self._collect_regex(regex_pattern, event_scope, item_scope, snap, pool)
        elif not signals.empty:
            plan = build_match(signals, match=match)
            pool_cap = ranking.candidate_budget * ranking.pool_factor
            # Many terms share the pool: each reads fewer of its newest matches, so
            # a long question costs about what a short one does.
            looked_up = max(1, len(plan.fts))
            budget = ranking.candidate_budget
            limit = max(budget // 4, min(budget, pool_cap // looked_up))
            if match == "all":
                expr = plan.all_expression()
                if expr is not None:
                    rows = store.event_matches(expr, event_scope, snap, pool_cap + 1)
                    if len(rows) > pool_cap:
                        pool.reasons.add(CANDIDATE_BUDGET)
                    ids = set()
                    for row in rows[:pool_cap]:
                        pool.events[row.id] = row
                        ids.add(row.id)
                    for term, _ in plan.fts:
                        pool.members[term.text] = ids
                    if item_scope is not None:
                        for item in store.item_matches(expr, item_scope, snap, pool_cap):
                            pool.items[item.rid] = item
            else:
                # Ids per term, then each event's light row once (the terms overlap).
                found: dict[int, None] = {}
                for term, expr in plan.fts:
                    if len(found) >= pool_cap:
                        pool.reasons.add(CANDIDATE_BUDGET)
                        break
                    contains = like_pattern(term.text) if needs_verification(term) else None
                    newest = store.event_match_ids(
                        expr, event_scope, snap, limit + 1, contains=contains
                    )
                    pool.event_df[term.text] = self._df_ids(newest, limit, snap.max_event_id, pool)
                    pool.members.setdefault(term.text, set()).update(newest[:limit])
                    found.update(dict.fromkeys(newest[:limit]))
                light = store.light_events(list(found))
                for event_id in found:
                    if event_id in light:
                        pool.events.setdefault(event_id, light[event_id])
                if item_scope is not None:
                    pool.item_n = float(max(1, store.item_count(item_scope, snap)))
                    # Rids per term, then each item's row once (the terms overlap).
                    order: dict[int, None] = {}
                    for term, expr in plan.fts:
                        contains = like_pattern(term.text) if needs_verification(term) else None
                        rids = store.item_match_rids(expr, item_scope, snap, limit + 1, contains)
                        pool.item_df[term.text] = self._df_ids(rids, limit, snap.max_item_rid, pool)
                        order.update(dict.fromkeys(rids[:limit]))
                    wanted = [rid for rid in order if rid not in pool.items]
                    item_rows = store.items_by_rids(wanted)
                    for rid in wanted:
                        if rid in item_rows:
                            pool.items[rid] = item_rows[rid]
            if plan.like:
                patterns = [like_pattern(t.text) for t in plan.like]
                result = store.event_like(
                    patterns, event_scope, snap, ranking.like_cap + 1, ranking.like_scan_rows
                )
                rows = result.rows
                if result.window_cut:
                    pool.reasons.add(LIKE_WINDOW)
                if len(rows) > ranking.like_cap:
                    pool.reasons.add(LIKE_CAP)
                    rows = rows[: ranking.like_cap]
                for term in plan.like:
                    hits = {r.id for r in rows if term.text in (r.text or "").lower()}
                    pool.event_df[term.text] = float(len(hits))
                    pool.members.setdefault(term.text, set()).update(hits)
                for row in rows:
                    # A row found by both paths keeps the one that carries its text.
                    pool.events[row.id] = row
                if item_scope is not None:
                    pool.item_n = float(max(1, store.item_count(item_scope, snap)))
                    items = store.item_like(patterns, item_scope, snap, ranking.like_cap)
                    for term in plan.like:
                        pool.item_df[term.text] = float(
                            sum(1 for i in items if term.text in i.content.lower())
                        )
                    for item in items:
                        pool.items.setdefault(item.rid, item)
            if match == "all":
                self._fill_text(pool.events)
                pool.events = {
                    k: v
                    for k, v in pool.events.items()
                    if _has_all(signals, (v.text or "").lower())
                }
                pool.items = {
                    k: v for k, v in pool.items.items() if _has_all(signals, v.content.lower())
                }
                size = float(max(1, len(pool.events)))
                for term in signals.ranking_terms:
                    pool.event_df[term.text] = size
                    pool.item_df[term.text] = float(max(1, len(pool.items)))
        if branches == "active":
            self._filter_active(pool, snap)
        return pool

    def _df(
        self, rows: Sequence[Any], limit: int, top: int, pool: _Pool, *, rid: bool = False
    ) -> float:
        """Document frequency: exact when the term fit under the budget, else estimated.

        Over budget only the newest ``limit`` matches were read; their density in the
        id range they span stands for the density everywhere (an estimate, reported
        as ``candidate_budget`` in coverage).
        """
        if len(rows) <= limit:
            return float(len(rows))
        pool.reasons.add(CANDIDATE_BUDGET)
        oldest = rows[limit - 1].rid if rid else rows[limit - 1].id
        span = max(1, top - oldest + 1)
        return float(limit) * top / span

    def _df_ids(self, ids: Sequence[int], limit: int, top: int, pool: _Pool) -> float:
        """:meth:`_df` over ids (newest first) rather than rows."""
        if len(ids) <= limit:
            return float(len(ids))
        pool.reasons.add(CANDIDATE_BUDGET)
        span = max(1, top - ids[limit - 1] + 1)
        return float(limit) * top / span

    def _collect_regex(
        self,
        pattern_text: str,
        event_scope: EventScope,
        item_scope: ItemScope | None,
        snap: Snapshot,
        pool: _Pool,
    ) -> None:
        """Bounded regex: pattern bytes (checked at request time), haystack characters
        and a wall-clock deadline; a time-out returns what was found so far."""
        ranking = self.ranking
        pattern = self._compile_regex(pattern_text)
        deadline = time.monotonic() + ranking.regex_timeout_ms / 1000.0
        budget = ranking.regex_max_haystack_chars
        max_rows = max(1, ranking.candidate_budget * ranking.pool_factor * 10)
        rows = self.search_store.event_scan(event_scope, snap, max_rows + 1)
        for scanned, event in enumerate(rows, start=1):
            if scanned > max_rows or budget <= 0:
                pool.reasons.add(REGEX_HAYSTACK)
                break
            haystack = event.text or ""
            budget -= len(haystack)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                pool.reasons.add(REGEX_TIMEOUT)
                break
            try:
                found = len(pattern.findall(haystack, timeout=remaining))
            except TimeoutError:
                pool.reasons.add(REGEX_TIMEOUT)
                break
            if found:
                pool.events[event.id] = event
                pool.regex_counts[event.id] = found
        if item_scope is None or REGEX_TIMEOUT in pool.reasons:
            return
        for item in self.search_store.item_scan(item_scope, snap, max_rows):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                pool.reasons.add(REGEX_TIMEOUT)
                return
            try:
                found = len(pattern.findall(item.content, timeout=remaining))
            except TimeoutError:
                pool.reasons.add(REGEX_TIMEOUT)
                return
            if found:
                pool.items[item.rid] = item
                pool.item_regex_counts[item.rid] = found

    def _scope_has_truncated(self, resolved: _Scope) -> bool:
        """Whether the scope holds an event whose text was capped (its tail is not
        indexed, so an absent term is not proof of absence). Read from ``archive``,
        which is small, rather than scanning events."""
        conn = self.search_store.conn
        if resolved.session_ids is not None:
            marks = ", ".join("?" for _ in resolved.session_ids)
            sql = f"SELECT 1 FROM archive WHERE session_id IN ({marks}) LIMIT 1"
            params: list[Any] = list(resolved.session_ids)
        else:
            sql, params = "SELECT 1 FROM archive LIMIT 1", []
        return conn.execute(sql, params).fetchone() is not None

    # -- branches ----------------------------------------------------------------------------

    def _active_path(self, session_id: str, snap: Snapshot) -> tuple[list[int], bool]:
        """Event ids on the parent-linked path from the session's leaf (root first),
        and whether a parent cycle stopped the walk. Empty when the session carries no
        entry ids: then every event is on the one path."""
        store = self.search_store
        if not store.has_entry_ids(session_id):
            return [], False
        count, max_id = store.session_fingerprint(session_id, snap)
        key = (session_id, count, max_id)
        cached = self._paths.get(key)
        if cached is not None:
            return cached
        rows = store.branch_rows(session_id, snap)
        path, cycle = active_path(rows)
        if len(self._paths) > 256:
            self._paths.clear()
        self._paths[key] = (path, cycle)
        on_path = set(path)
        self._path_seqs[key] = frozenset(r.seq for r in rows if r.id in on_path)
        return path, cycle

    def _active_seqs(self, session_id: str, snap: Snapshot) -> frozenset[int] | None:
        """Sequence numbers on the session's active path; ``None`` when it has no branches."""
        path, _ = self._active_path(session_id, snap)
        if not path:
            return None
        count, max_id = self.search_store.session_fingerprint(session_id, snap)
        return self._path_seqs.get((session_id, count, max_id))

    def _filter_active(self, pool: _Pool, snap: Snapshot) -> None:
        """Keep what lies on each session's active path: events by id, memory items by
        their source events (an item derived only from an abandoned branch is left out)."""
        sessions = sorted(
            {e.session_id for e in pool.events.values()}
            | {i.session_id for i in pool.items.values()}
        )
        for session_id in sessions:
            path, cycle = self._active_path(session_id, snap)
            if cycle:
                pool.reasons.add(PARENT_CYCLE)
            if not path:
                continue
            on_path = set(path)
            pool.events = {
                k: v
                for k, v in pool.events.items()
                if v.session_id != session_id or v.id in on_path
            }
            seqs = self._active_seqs(session_id, snap) or frozenset()
            kept = {}
            for rid, item in pool.items.items():
                if item.session_id == session_id:
                    refs = parse_source_refs(item.source_refs_json, item.session_id)
                    local = [seq for sid, seq in refs if sid == session_id]
                    if local and not any(seq in seqs for seq in local):
                        continue
                kept[rid] = item
            pool.items = kept

    # -- scoring -----------------------------------------------------------------------------

    def _lexical(
        self,
        text: str,
        counter: _Counter,
        idf: dict[str, float],
        group_idf: list[float],
        boundaries: dict[str, re.Pattern[str]],
    ) -> tuple[float, list[str], int, str | None]:
        """(raw BM25 with b = 0, matched spellings, exact symbol/phrase hits, best needle)."""
        counts, whole = counter.counts(text)
        if not counts:
            return 0.0, [], 0, None
        plan = counter.plan
        if plan is None or counter.plan_key != (id(idf), id(group_idf)):
            plan = counter.prepare(idf, group_idf, self.ranking)
        sat = counter.sat
        raw = 0.0
        matched: list[str] = []
        exact = 0
        needle: str | None = None
        best_seen = 0.0
        word_rx = counter.word_rx is not None
        for entries, bonus in plan:
            best = 0.0
            best_term: Term | None = None
            for term_text, term, term_idf, weight in entries:
                tf = counts.get(term_text)
                if not tf:
                    continue
                s = sat.get(tf)
                if s is None:
                    s = sat[tf] = self.ranking.sat(tf)
                value = term_idf * s * weight
                if value > best:
                    best, best_term = value, term
            if best_term is None:
                continue
            if best_term.kind == "word" and (
                best_term.origin in whole
                if word_rx and best_term.text.isascii()
                else _whole_word(boundaries, best_term.origin, text)
            ):
                best += bonus
            raw += best
            matched.append(best_term.origin if best_term.kind != "cjk" else best_term.text)
            if best_term.kind in ("symbol", "phrase"):
                exact += 1
            if best > best_seen:
                best_seen, needle = best, best_term.text
        return raw, matched, exact, needle

    def _idf(
        self, signals: QuerySignals, df: dict[str, float], n: float
    ) -> tuple[dict[str, float], list[float]]:
        idf = {text: self.ranking.idf(min(d, n), n) for text, d in df.items()}
        known = [v for v in idf.values()]
        fallback = min(known) if known else 1.0
        group_idf = []
        for group in signals.groups:
            values = [idf[t.text] for t in group if t.text in idf]
            group_idf.append(max(values) if values else fallback)
        return idf, group_idf

    def _pins(self, signals: QuerySignals) -> list[tuple[str, re.Pattern[str]]]:
        pins = []
        for term in signals.pins:
            if not term.text or term.stop:
                continue
            body = re.escape(term.text)
            # "v2.31.5" is also written "2.31.5" (requests==2.31.5).
            if re.fullmatch(r"v\d+(\.\d+)+.*", term.text):
                body = "v?" + re.escape(term.text[1:])
            left = r"(?<![^\W_])" if term.text[0].isalnum() else ""
            right = r"(?![0-9]|\.[0-9])" if term.text[-1].isalnum() else ""
            pins.append((term.text, re.compile(left + body + right)))
        return pins

    def _boundaries(self, signals: QuerySignals) -> dict[str, re.Pattern[str]]:
        return {
            t.origin: re.compile(rf"(?<![a-z0-9]){re.escape(t.origin)}(?![a-z0-9])")
            for t in signals.ranking_terms
            if t.kind == "word"
        }

    def _score_items(self, signals: QuerySignals, pool: _Pool, ranking: Ranking) -> list[_Scored]:
        if not pool.items:
            return []
        groups = _Counter(signals)
        idf, group_idf = self._idf(signals, pool.item_df, pool.item_n)
        mass = sum(group_idf) or 1.0
        pins = self._pins(signals)
        boundaries = self._boundaries(signals)
        out = []
        for item in pool.items.values():
            text = item.content.lower()
            matched: list[str] = []
            exact, needle = 0, None
            if item.rid in pool.item_regex_counts:
                lexical = ranking.sat(pool.item_regex_counts[item.rid]) / ranking.sat(1)
            else:
                raw, matched, exact, needle = self._lexical(
                    text, groups, idf, group_idf, boundaries
                )
                lexical = raw / mass
            pinned_by = [p for p, rx in pins if rx.search(text)]
            score = ranking.kind_weights.get(item.kind, 0.8) + min(lexical, 1.5)
            score += ranking.exact_boost * min(exact + len(pinned_by), 3) / 3
            score *= ranking.evidence_weights.get(item.evidence_type, 0.5)
            if item.status == "superseded":
                score *= ranking.superseded_factor
            last = self._last_seq(pool, item.session_id)
            if last is not None and last - item.derived_from_seq < ranking.recency_window:
                score += ranking.recency_boost * (
                    1 - max(0, last - item.derived_from_seq) / ranking.recency_window
                )
            out.append(
                _Scored(
                    key=(0 if pinned_by else 1, 0, -round(score, 9), "0", item.id, 0),
                    score=score,
                    pinned=bool(pinned_by),
                    why=_why(pinned_by, matched, regex_mode=item.rid in pool.item_regex_counts),
                    needle=pinned_by[0] if pinned_by else needle,
                    item=item,
                )
            )
        out.sort(key=lambda s: s.key)
        return out

    def _event_base(
        self,
        event: AnyEvent,
        pool: _Pool,
        groups: _Counter,
        idf: dict[str, float],
        group_idf: list[float],
        mass: float,
        pins: list[tuple[str, re.Pattern[str]]],
        boundaries: dict[str, re.Pattern[str]],
        anchor: str | None,
    ) -> tuple[float, list[str], list[str], str | None]:
        ranking = self.ranking
        text = (event.text or "").lower()
        matched: list[str] = []
        exact, needle = 0, None
        if event.id in pool.regex_counts:
            lexical = ranking.sat(pool.regex_counts[event.id]) / ranking.sat(1)
        else:
            raw, matched, exact, needle = self._lexical(text, groups, idf, group_idf, boundaries)
            lexical = raw / mass
        pinned_by = [p for p, rx in pins if rx.search(text)]
        base = (
            lexical + ranking.exact_boost * min(exact + len(pinned_by), 3) / 3 if lexical else 0.0
        )
        base *= self._role_weight(event)
        if event.generated:
            base *= ranking.generated_factor
        if base and anchor is not None and event.session_id == anchor:
            last = self._last_seq(pool, anchor)
            if last is not None and last - event.seq < ranking.recency_window:
                share = 1 - max(0, last - event.seq) / ranking.recency_window
                base += ranking.recency_boost * ranking.event_recency_share * share
        return base, matched, pinned_by, needle

    def _last_seq(self, pool: _Pool, session_id: str) -> int | None:
        if session_id not in pool.last_seq:
            pool.last_seq[session_id] = self.search_store.last_seq_at(session_id, pool.snap)
        return pool.last_seq[session_id]

    def _role_weight(self, event: AnyEvent) -> float:
        weights = self.ranking.role_weights
        if event.type.startswith("tool/"):
            return weights.get("tool", 0.5)
        return weights.get(event.role or "", weights.get("system", 0.4))

    def _with_text(self, scored: list[_Scored], first: int | None = None) -> list[_Scored]:
        """``scored`` with the text of its first ``first`` (default all) events read."""
        head = scored if first is None else scored[:first]
        missing = [s.event.id for s in head if s.event is not None and s.event.text is None]
        if not missing:
            return scored
        rows = {row.id: row for row in self.search_store.events_by_ids(missing)}
        out = []
        for index, item in enumerate(scored):
            event = item.event
            if (first is None or index < first) and isinstance(event, LightEvent):
                if event.id not in rows:
                    continue  # purged since the first pass read it
                item = _Scored(
                    item.key, item.score, item.pinned, item.why, item.needle, event=rows[event.id]
                )
            out.append(item)
        return out

    def _fill_text(self, events: dict[int, AnyEvent], ids: Iterable[int] | None = None) -> None:
        """Read the text of light rows (all of them, or only ``ids``) in one query."""
        wanted = [i for i in (events if ids is None else ids) if events[i].text is None]
        for row in self.search_store.events_by_ids(wanted):
            events[row.id] = row

    def _first_pass(
        self, signals: QuerySignals, pool: _Pool, idf: dict[str, float], group_idf: list[float]
    ) -> tuple[dict[int, float], set[int]]:
        """A cheap score for every candidate from which terms retrieved it (each once),
        with no text read: it only decides which candidates the full pass scores."""
        ranking = self.ranking
        mass = sum(group_idf) or 1.0
        lexical: dict[int, float] = {}
        exact: dict[int, int] = {}
        pinned: set[int] = set()
        for g_index, group in enumerate(signals.groups):
            head_len = max(len(t.text) for t in group)
            best: dict[int, float] = {}
            exact_terms = {t.text for t in group if t.kind in ("symbol", "phrase")}
            for term in group:
                members = pool.members.get(term.text)
                if not members:
                    continue
                weight = len(term.text) / head_len if term.kind == "cjk" else 1.0
                value = idf.get(term.text, group_idf[g_index]) * weight
                for event_id in members:
                    if value > best.get(event_id, 0.0):
                        best[event_id] = value
                if term.pin:
                    pinned.update(members)
            for event_id, value in best.items():
                lexical[event_id] = lexical.get(event_id, 0.0) + value / mass
                if exact_terms:
                    exact[event_id] = exact.get(event_id, 0) + 1
        scores: dict[int, float] = {}
        for event_id, event in pool.events.items():
            if event_id in pool.regex_counts:
                value = ranking.sat(pool.regex_counts[event_id]) / ranking.sat(1)
            else:
                value = lexical.get(event_id, 0.0)
                if value:
                    value += ranking.exact_boost * min(exact.get(event_id, 0), 3) / 3
            value *= self._role_weight(event)
            if event.generated:
                value *= ranking.generated_factor
            scores[event_id] = value
        return scores, pinned

    def _score_events(
        self,
        signals: QuerySignals,
        pool: _Pool,
        scope: EventScope,
        snap: Snapshot,
        ranking: Ranking,
        resolved: _Scope,
        branches: str,
        *,
        spread: bool = True,
        neighbours_as_hits: bool = True,
    ) -> list[_Scored]:
        """Rank events in two passes: every candidate by which terms retrieved it, then
        the best ``rescore_top`` in full (term frequencies, word boundaries, pins checked
        at symbol boundaries, neighbour spread). The rest keep their first-pass order
        below them, so the order is total and the same on every page."""
        if not pool.events:
            return []
        counter = _Counter(signals)
        idf, group_idf = self._idf(signals, pool.event_df, pool.event_n)
        mass = sum(group_idf) or 1.0
        pins = self._pins(signals)
        boundaries = self._boundaries(signals)
        anchor = resolved.anchor
        events = dict(pool.events)

        first, first_pinned = self._first_pass(signals, pool, idf, group_idf)
        first_best: dict[str, float] = {}
        for event in events.values():
            if first[event.id] > first_best.get(event.session_id, 0.0):
                first_best[event.session_id] = first[event.id]

        def first_key(e: AnyEvent) -> tuple[Any, ...]:
            value = first[e.id] + (
                ranking.session_weight * first_best[e.session_id] if spread else 0
            )
            return (0 if e.id in first_pinned else 1, -round(value, 9), e.session_id, e.seq)

        ordered = sorted(events.values(), key=first_key)
        chosen = [e.id for e in ordered[: ranking.rescore_top]]
        self._fill_text(events, chosen)

        base: dict[int, float] = {}
        info: dict[int, tuple[list[str], list[str], str | None]] = {}
        for event_id in chosen:
            value, matched, pinned_by, needle = self._event_base(
                events[event_id], pool, counter, idf, group_idf, mass, pins, boundaries, anchor
            )
            base[event_id] = value
            info[event_id] = (matched, pinned_by, needle)

        bonus: dict[int, float] = dict.fromkeys(base, 0.0)
        near: dict[int, str] = {}
        if spread and base:
            top = sorted(
                (events[i] for i in base), key=lambda e: (-base[e.id], e.session_id, e.seq)
            )
            top = [e for e in top[: ranking.spread_top] if base[e.id] > 0]
            adjacent = self._adjacent(top, scope, snap, branches)
            fresh = {
                n.id: n
                for pair in adjacent.values()
                for n in pair
                if n is not None and n.id not in base and neighbours_as_hits
            }
            for neighbour in fresh.values():
                events[neighbour.id] = neighbour
            self._fill_text(events, fresh)
            for event_id in fresh:
                value, matched, pinned_by, needle = self._event_base(
                    events[event_id], pool, counter, idf, group_idf, mass, pins, boundaries, anchor
                )
                base[event_id] = value
                info[event_id] = (matched, pinned_by, needle)
                bonus[event_id] = 0.0
            for event in top:
                prev, nxt = adjacent.get(event.id, (None, None))
                for side, share in ((nxt, ranking.next_spread), (prev, ranking.prev_spread)):
                    if side is None or side.id not in base:
                        continue
                    neighbour = side
                    bonus[neighbour.id] += share * base[event.id]
                    if base[neighbour.id] == 0 and neighbour.id not in near:
                        near[neighbour.id] = event.ref
        session_best: dict[str, float] = {}
        if spread:
            for event_id, value in base.items():
                session = events[event_id].session_id
                if value > session_best.get(session, 0.0):
                    session_best[session] = value
        out = []
        for event_id in base:
            event = events[event_id]
            matched, pinned_by, needle = info[event_id]
            score = base[event_id] + bonus[event_id]
            if spread:
                score += ranking.session_weight * session_best.get(event.session_id, 0.0)
            if score <= 0 and not pinned_by:
                continue
            if event_id in near and not matched and not pinned_by:
                why = f"near:{near[event_id]}"
            else:
                why = _why(pinned_by, matched, regex_mode=event_id in pool.regex_counts)
            out.append(
                _Scored(
                    key=(
                        0 if pinned_by else 1,
                        0,
                        -round(score, 9),
                        "1",
                        event.session_id,
                        event.seq,
                    ),
                    score=score,
                    pinned=bool(pinned_by),
                    why=why,
                    needle=pinned_by[0] if pinned_by else needle,
                    event=event,
                )
            )
        # Below the fully scored ones: the rest, in first-pass order (text read lazily).
        for event in ordered[ranking.rescore_top :]:
            value = first[event.id]
            if value <= 0 and event.id not in first_pinned:
                continue
            pinned = event.id in first_pinned
            out.append(
                _Scored(
                    key=(0 if pinned else 1, 1, -round(value, 9), "1", event.session_id, event.seq),
                    score=value,
                    pinned=pinned,
                    why="lexical",
                    needle=None,
                    event=event,
                )
            )
        out.sort(key=lambda s: s.key)
        return out

    def _adjacent(
        self, top: list[AnyEvent], scope: EventScope, snap: Snapshot, branches: str
    ) -> dict[int, tuple[AnyEvent | None, AnyEvent | None]]:
        """Previous and next event of each hit, along the active path when the session
        branches, else in sequence order."""
        out: dict[int, tuple[AnyEvent | None, AnyEvent | None]] = {}
        linear: list[AnyEvent] = []
        for session_id in sorted({e.session_id for e in top}):
            members = [e for e in top if e.session_id == session_id]
            path, _ = self._active_path(session_id, snap) if branches == "active" else ([], False)
            if not path:
                linear.extend(members)
                continue
            rows = {r.id: r for r in self.search_store.events_by_ids(path)}
            ordered = [rows[i] for i in path if i in rows]
            position = {event.id: i for i, event in enumerate(ordered)}
            for event in members:
                i = position.get(event.id)
                if i is None:
                    continue
                # The same reach as the sequence-order lookup: a neighbour is close by.
                prev = next(
                    (
                        e
                        for e in reversed(ordered[max(0, i - ADJACENT_REACH) : i])
                        if _in_scope(e, scope)
                    ),
                    None,
                )
                nxt = next(
                    (e for e in ordered[i + 1 : i + 1 + ADJACENT_REACH] if _in_scope(e, scope)),
                    None,
                )
                out[event.id] = (prev, nxt)
        if linear:
            found = self.search_store.adjacent(
                [(e.session_id, e.seq) for e in linear], scope, snap, ADJACENT_REACH
            )
            for event in linear:
                out[event.id] = found.get((event.session_id, event.seq), (None, None))
        return out

    def _successors(self, items: Sequence[RankedItem]) -> dict[str, RankedItem]:
        out: dict[str, RankedItem] = {}
        for item in items:
            target = item.superseded_by
            hops = 0
            while target and hops < 8 and target not in out:
                found = self.search_store.item_by_id(target)
                if found is None:
                    break
                out[target] = _ranked_item(
                    _Scored(
                        key=(), score=0.0, pinned=False, why="successor", needle=None, item=found
                    )
                )
                target = found.superseded_by if found.status == "superseded" else None
                hops += 1
        return out

    # -- expand helpers ------------------------------------------------------------------------

    def _full_text(self, event: EventCandidate) -> str:
        if event.truncated:
            archived = self.search_store.archived_text(event.session_id, event.seq)
            if archived is not None:
                return archived
        return event.text or ""

    def _expand_item(self, item_id: str, max_chars: int, *, token: bool) -> ExpandResult:
        item = self.search_store.item_by_id(item_id)
        if item is None:
            if token:
                return ExpandResult(coverage=_stale("the memory item this token points at is gone"))
            raise NotFound(f"no memory item {item_id}")
        ranked = _ranked_item(
            _Scored(key=(), score=0.0, pinned=False, why="", needle=None, item=item)
        )
        events = []
        budget = max_chars
        for event in self.search_store.events_by_refs(list(ranked.source_refs)):
            full = self._full_text(event)
            take = min(budget, len(full))
            events.append(_expanded(event, full, 0, take, anchor=True))
            budget -= take
        reasons = set()
        if any(not e.text_range.complete for e in events):
            reasons.add("expand_chunked")
        return ExpandResult(
            item={
                "id": ranked.id,
                "kind": ranked.kind,
                "content": ranked.content,
                "status": ranked.status,
                "evidence_type": ranked.evidence_type,
                "session_id": ranked.session_id,
                "superseded_by": ranked.superseded_by,
                "subject_key": ranked.subject_key,
                "source_refs": [f"{s}:{q}" for s, q in ranked.source_refs],
            },
            events=events,
            coverage=_coverage(reasons),
        )


# -- helpers ---------------------------------------------------------------------------------


def active_path(rows: Sequence[BranchRow]) -> tuple[list[int], bool]:
    """Walk ``parent_id`` links from the leaf (the last event carrying an entry id).

    Duplicate entry ids resolve to the last record. A parent that names no entry ends
    the path (a root); a parent already visited is a cycle: the walk stops there and
    the cycle is reported. Events with no entry id are kept (nothing says they are off
    the path).
    """
    by_entry: dict[str, BranchRow] = {}
    for row in rows:
        if row.entry_id is not None:
            by_entry[row.entry_id] = row
    leaf = next((r for r in reversed(rows) if r.entry_id is not None), None)
    if leaf is None:
        return [], False
    seen: set[str] = set()
    path: list[int] = []
    cycle = False
    node: BranchRow | None = leaf
    while node is not None:
        assert node.entry_id is not None
        if node.entry_id in seen:
            cycle = True
            break
        seen.add(node.entry_id)
        path.append(node.id)
        parent = node.parent_id
        node = by_entry.get(parent) if parent is not None else None
    loose = [r.id for r in rows if r.entry_id is None]
    return sorted(set(path) | set(loose)), cycle


def _in_scope(event: EventCandidate, scope: EventScope) -> bool:
    """Python twin of :meth:`EventScope.where`, for rows read without it (time
    filters aside: spread is off whenever a structural filter is given)."""
    if not event.searchable:
        return False
    if scope.session_ids is not None and event.session_id not in scope.session_ids:
        return False
    if scope.roles and event.role not in scope.roles:
        return False
    if scope.types and event.type not in scope.types:
        return False
    if scope.tools and event.tool_name not in scope.tools:
        return False
    if scope.outcomes and event.outcome not in scope.outcomes:
        return False
    if not scope.include_generated and event.generated:
        return False
    return not (event.source_kind and event.source_kind in scope.exclude_source_kinds)


def _whole_word(boundaries: dict[str, re.Pattern[str]], word: str, text: str) -> bool:
    pattern = boundaries.get(word)
    return pattern is not None and pattern.search(text) is not None


def _has_all(signals: QuerySignals, text: str) -> bool:
    for group in signals.groups:
        head = next((t for t in group if not t.window), group[0])
        if head.route == "padded":
            if not re.search(rf"(?<![^\W_]){re.escape(head.text)}(?![^\W_])", text):
                return False
        elif head.text not in text:
            return False
    return True


def _why(pinned_by: list[str], matched: list[str], *, regex_mode: bool = False) -> str:
    if pinned_by:
        return "exact:" + ",".join(pinned_by[:8])
    if regex_mode:
        return "regex"
    if matched:
        return "word:" + ",".join(matched[:8])
    return "lexical"


def _snippet(text: str, needle: str | None) -> tuple[str, bool]:
    """A bounded one-line window around the best needle (or the start)."""
    flat = " ".join(text.split())
    if len(flat) <= SNIPPET_CHARS:
        return flat, False
    at = flat.lower().find(needle) if needle else -1
    start = 0 if at < 0 else max(0, at - SNIPPET_CHARS // 4)
    end = min(len(flat), start + SNIPPET_CHARS)
    start = max(0, end - SNIPPET_CHARS)
    body = flat[start:end]
    return ("…" if start else "") + body + ("…" if end < len(flat) else ""), True


def _ranked_item(scored: _Scored) -> RankedItem:
    item = scored.item
    assert item is not None
    return RankedItem(
        id=item.id,
        kind=item.kind,
        content=item.content,
        status=item.status,
        evidence_type=item.evidence_type,
        session_id=item.session_id,
        score=scored.score,
        why=scored.why,
        pinned=scored.pinned,
        superseded_by=item.superseded_by,
        subject_key=item.subject_key,
        source_refs=parse_source_refs(item.source_refs_json, item.session_id),
        conditions=tuple(_json_list(item.conditions_json)),
        numbers=tuple(_json_list(item.numbers_json)),
        extractor=item.extractor,
    )


def _ranked_event(scored: _Scored) -> RankedEvent:
    ev = scored.event
    assert isinstance(ev, EventCandidate), "evidence events are read in full first"
    return RankedEvent(
        session_id=ev.session_id,
        seq=ev.seq,
        type=ev.type,
        role=ev.role,
        text=ev.text or "",
        score=scored.score,
        why=scored.why,
        pinned=scored.pinned,
        time=ev.event_time,
        turn=ev.turn,
        source_kind=ev.source_kind,
        generated=bool(ev.generated),
        truncated=bool(ev.truncated),
        tool_name=ev.tool_name,
        outcome=ev.outcome,
    )


def _json_list(raw: str | None) -> list[Any]:
    try:
        value = json.loads(raw or "[]")
    except ValueError:
        return []
    return value if isinstance(value, list) else []


def parse_source_refs(raw: str | None, session_id: str) -> tuple[tuple[str, int], ...]:
    """Source references as ``(session, seq)``, whichever spelling extraction stored:
    ``"S:SEQ"``, a bare seq (same session), ``{"session_id", "seq"}`` or ``[S, SEQ]``."""
    out: list[tuple[str, int]] = []
    for ref in _json_list(raw):
        if isinstance(ref, int):
            out.append((session_id, ref))
        elif isinstance(ref, str):
            parsed = parse_ref(ref)
            if parsed is not None:
                out.append(parsed)
            elif ref.isdigit():
                out.append((session_id, int(ref)))
        elif isinstance(ref, dict) and "seq" in ref:
            try:
                out.append((str(ref.get("session_id") or session_id), int(ref["seq"])))
            except (TypeError, ValueError):
                continue
        elif isinstance(ref, list) and len(ref) == 2:
            try:
                out.append((str(ref[0]), int(ref[1])))
            except (TypeError, ValueError):
                continue
    return tuple(dict.fromkeys(out))


def _digest(scored: Sequence[_Scored]) -> str:
    """A short digest of a ranked prefix: which hits, in which order."""
    keys = [
        f"e{s.event.id}" if s.event is not None else f"m{s.item.id if s.item else ''}"
        for s in scored
    ]
    return short_hash(*keys) if keys else ""


def _coverage(reasons: Iterable[str]) -> Coverage:
    listed = sorted(set(reasons))
    return Coverage(complete=not listed, reasons=listed)


def _stale(message: str) -> Coverage:
    return Coverage(
        complete=False,
        reasons=[STALE_POINTER],
        error=ErrorInfo(code=STALE_POINTER, message=message),
    )


def _bounded(value: int, name: str) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ValidationError(f"--{name} must be a whole number") from None
    if number < 0:
        raise ValidationError(f"--{name} must not be negative")
    return min(number, EXPAND_MAX_CONTEXT)


__all__ = [
    "HARD_LIMIT",
    "MAX_TERMS",
    "Coverage",
    "ExpandResult",
    "Hit",
    "RankedEvent",
    "RankedItem",
    "RetrievalResult",
    "Retriever",
    "SearchPage",
    "active_path",
    "decode_token",
    "encode_token",
]


def _expanded(event: Any, full: str, begin: int, end: int, *, anchor: bool) -> ExpandedEvent:
    """One event of an expand result: the ``[begin, end)`` chunk of its full text."""
    return ExpandedEvent(
        session_id=event.session_id,
        seq=event.seq,
        type=event.type,
        role=event.role,
        time=event.event_time,
        turn=event.turn,
        tool_name=event.tool_name,
        outcome=event.outcome,
        generated=bool(event.generated),
        anchor=anchor,
        entry_id=event.entry_id,
        parent_id=event.parent_id,
        text=full[begin:end],
        text_range=TextRange(
            start=begin, end=end, total=len(full), complete=begin == 0 and end == len(full)
        ),
    )
