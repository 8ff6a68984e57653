"""The ranking weights and work budgets, read from :class:`~memplug.config.RetrievalConfig`,
and the two BM25 formulas they parameterise."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from msgspec import Struct, field

if TYPE_CHECKING:
    from memplug.config import RetrievalConfig

# No call returns more than this many results, whatever its limit says.
HARD_LIMIT = 100


class Ranking(Struct, frozen=True):
    """Ranking weights come from :class:`~memplug.config.RetrievalConfig` (defaults
    measured on LoCoMo and LongMemEval-S dev, docs/benchmarks.md "Retrieval"); the
    rest are work budgets."""

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
    b: float = 0.5
    # Length normalisation measures a text against this many characters, and never
    # counts it as more than ``length_cap`` times as long.
    length_pivot: int = 200
    length_cap: float = 8.0
    session_weight: float = 0.5
    next_spread: float = 0.6
    prev_spread: float = 0.3
    # The event two steps from a hit receives this share of what the adjacent one does.
    far_spread: float = 0.5
    # A word that only begins like the query's word (another Snowball stem: `painter`
    # for `painted`) counts this share of an occurrence.
    prefix_weight: float = 0.5
    # Word matched whole, not only as a prefix: `billing服务` over `billing2服务`.
    boundary_bonus: float = 0.3
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
    # A semantic candidate of rank r adds ``semantic_weight x k / (k + r)`` to its
    # lexical score (``semantic.weight``, ``semantic.rankK``); 0 when no provider is on.
    semantic_weight: float = 0.0
    semantic_rank_k: float = 10.0

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
            length_pivot=config.length_pivot_chars,
            length_cap=config.length_cap,
            session_weight=config.session_weight,
            next_spread=config.next_spread,
            prev_spread=config.prev_spread,
            far_spread=config.far_spread,
            boundary_bonus=config.boundary_bonus,
            prefix_weight=config.prefix_match_weight,
            generated_factor=config.generated_factor,
            event_recency_share=config.event_recency_share,
        )

    def idf(self, df: float, n: float) -> float:
        # The always-positive form: FTS5's own (without the 1 +) gives a word in half
        # the turns no weight at all, which measured no better on LoCoMo.
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def length_norm(self, chars: int) -> float:
        """BM25's length factor ``1 - b + b * length / pivot`` (1.0 when ``b`` is 0)."""
        if not self.b:
            return 1.0
        return 1.0 - self.b + self.b * min(chars / self.length_pivot, self.length_cap)

    def sat(self, tf: float, norm: float = 1.0) -> float:
        return tf * (self.k1 + 1.0) / (tf + self.k1 * norm)
