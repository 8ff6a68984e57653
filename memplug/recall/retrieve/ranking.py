"""The ranking: :class:`~memplug.base.config.RetrievalConfig` with the budgets no
configuration sets, and the two BM25 formulas they parameterise."""

from __future__ import annotations

import math

from msgspec import Struct, field

from memplug.base.config import RetrievalConfig

# No call returns more than this many results, whatever its limit says.
HARD_LIMIT = 100


def _default_config() -> RetrievalConfig:
    return RetrievalConfig()


class Ranking(Struct, frozen=True):
    """The ranking: the configured weights and budgets (:class:`RetrievalConfig`,
    defaults measured on LoCoMo and LongMemEval-S dev, docs/benchmarks.md "Retrieval"),
    the semantic provider's share, and the work budgets no configuration sets."""

    config: RetrievalConfig = field(default_factory=_default_config)
    # A semantic candidate of rank r adds ``semantic_weight x k / (k + r)`` to its
    # lexical score (``semantic.weight``, ``semantic.rankK``); 0 when no provider is on.
    semantic_weight: float = 0.0
    semantic_rank_k: float = 10.0
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

    @property
    def limit(self) -> int:
        return min(HARD_LIMIT, max(1, self.config.limit))

    def idf(self, df: float, n: float) -> float:
        # The always-positive form: FTS5's own (without the 1 +) gives a word in half
        # the turns no weight at all, which measured no better on LoCoMo.
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def length_norm(self, chars: int) -> float:
        """BM25's length factor ``1 - b + b * length / pivot`` (1.0 when ``b`` is 0)."""
        config = self.config
        if not config.bm25_b:
            return 1.0
        ratio = min(chars / config.length_pivot_chars, config.length_cap)
        return 1.0 - config.bm25_b + config.bm25_b * ratio

    def sat(self, tf: float, norm: float = 1.0) -> float:
        k1 = self.config.bm25_k1
        return tf * (k1 + 1.0) / (tf + k1 * norm)
