"""The semantic side of memory: keeping vectors current and finding similar events.

Used only when ``semantic.provider`` is not ``"off"``, and even then numpy (the
``semantic`` extra) is imported only once a provider has loaded: ``memory status``
imports this module to say the provider is off or unavailable. A vector is stored as
int8 with a scale and scored with integer arithmetic (:mod:`memplug.semantic.vecmath`).
Whatever goes wrong (provider or extra missing, raising, vectors behind) becomes a
coverage reason and a status line — never an exception into the host.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any

from msgspec import Struct, field

from memplug.semantic import (
    INCOMPLETE,
    OFF,
    UNAVAILABLE,
    Embedder,
    SemanticUnavailable,
    load_embedder,
)
from memplug.store.records import EventScope, Snapshot, VectorScan

if TYPE_CHECKING:
    from memplug.base.config import SemanticConfig
    from memplug.semantic.vecmath import Cells
    from memplug.store.ports import Storage

# Scores are rounded before ranking, so a last-bit difference between two machines'
# arithmetic cannot reorder results; ties then break by event id.
SCORE_DECIMALS = 5
# At most this many candidates from one session: a static model finds a whole session
# on its topic alike (a chat about dogs is all "dogs"), and twenty of its turns would
# crowd out the other sessions where the evidence may be (with the bonus kept to a
# hit's own score, LME-S dev r@10 0.849 → 0.872 against 0.865 lexical; docs/semantic.md).
PER_SESSION = 2


class EmbedReport(Struct):
    embedded: int = 0
    remaining: int = 0
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"embedded": self.embedded, "remaining": self.remaining, "error": self.error}


class SemanticHits(Struct):
    """Similar events, best first: ``(event id, similarity)``; reasons name what was missing."""

    hits: list[tuple[int, float]] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    notice: str | None = None


class Semantic:
    def __init__(self, store: Storage, config: SemanticConfig) -> None:
        self.store = store
        self.config = config

    @property
    def enabled(self) -> bool:
        return self.config.provider != OFF

    @cached_property
    def _loaded(self) -> tuple[Embedder | None, str | None]:
        try:
            return load_embedder(self.config.provider), None
        except SemanticUnavailable as error:
            return None, str(error)

    @property
    def embedder(self) -> Embedder | None:
        return self._loaded[0] if self.enabled else None

    @property
    def unavailable(self) -> str | None:
        """Why the configured provider cannot be used, or ``None``."""
        return self._loaded[1] if self.enabled else None

    def _model_id(self, embedder: Embedder, *, create: bool) -> int | None:
        return self.store.vectors.model_id(
            embedder.name, embedder.version, embedder.dimensions, create=create
        )

    # -- keeping vectors current ----------------------------------------------------

    def embed_pending(
        self,
        *,
        budget_ms: float | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> EmbedReport:
        """Embed events lacking a current vector, oldest first, in batches; stop once
        ``budget_ms`` is spent (the rest is caught up by a later call)."""
        report = EmbedReport()
        embedder = self.embedder
        if embedder is None:
            return report
        start = time.perf_counter()
        store, vectors = self.store, self.store.vectors
        model_id = self._model_id(embedder, create=False)
        if model_id is None:
            with store.write_transaction():
                model_id = self._model_id(embedder, create=True)
        assert model_id is not None
        from memplug.semantic.vecmath import cells_of, encode

        top = vectors.max_event_id()
        # Every embeddable event up to the watermark has a vector: a hook with one new
        # event looks at that event only, and a hook with none writes nothing.
        after = vectors.watermark(model_id)
        while after < top and (
            budget_ms is None or (time.perf_counter() - start) * 1000 < budget_ms
        ):
            batch = vectors.pending(model_id, self.config.batch_size, after, top)
            if not batch:
                with store.write_transaction():
                    vectors.set_watermark(model_id, top)
                return report
            try:
                rows = embedder.embed([text for *_, text in batch])
            except Exception as error:
                report.error = f"{type(error).__name__}: {error}"
                break
            after = batch[-1][0]
            cells = cells_of(embedder)
            with store.write_transaction():
                vectors.put(
                    model_id,
                    [
                        (i, session, seq, *encode(v, cells))
                        for (i, session, seq, _), v in zip(batch, rows, strict=True)
                    ],
                )
                # Batches come in id order from the watermark: nothing before is missing.
                vectors.set_watermark(model_id, after)
            report.embedded += len(batch)
            if progress is not None:
                progress(len(batch))
        report.remaining = 0 if after >= top else vectors.counts(model_id).missing
        return report

    def lag(self) -> int:
        """How many embeddable events lack a current vector (0 when no provider loads)."""
        embedder = self.embedder
        if embedder is None:
            return 0
        return self.store.vectors.counts(self._model_id(embedder, create=False)).missing

    # -- status ---------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """The provider, its model, vector counts and lag, for ``memory status``."""
        vectors = self.store.vectors
        out: dict[str, Any] = {"provider": self.config.provider, "models": vectors.models()}
        if not self.enabled:
            out["state"] = "off"
            return out
        embedder = self.embedder
        if embedder is None:
            out.update(state=UNAVAILABLE, reason=self.unavailable)
            return out
        counts = vectors.counts(self._model_id(embedder, create=False))
        out.update(
            model=getattr(embedder, "model", embedder.name),
            version=embedder.version,
            dimensions=embedder.dimensions,
            vectors=counts.as_dict(),
            lag=counts.missing,
            state="ok" if counts.missing == 0 else INCOMPLETE,
        )
        return out

    # -- candidates -----------------------------------------------------------------

    def similar(self, text: str, scope: EventScope, snap: Snapshot, limit: int) -> SemanticHits:
        """The ``limit`` in-scope events most similar to ``text``: an exact scan, or over a
        large scope the vectors of the cells nearest to the query (``semantic.scanLimit``)."""
        out = SemanticHits()
        embedder = self.embedder
        if embedder is None:
            if self.enabled:
                out.reasons.append(UNAVAILABLE)
                out.notice = f"semantic search unavailable: {self.unavailable}"
            return out
        model_id = self._model_id(embedder, create=False)
        if model_id is None or self.store.vectors.lacking(model_id, scope, snap):
            out.reasons.append(INCOMPLETE)
            out.notice = "semantic search incomplete: some events have no current vector yet"
        if model_id is None or not text.strip():
            return out
        from memplug.semantic.vecmath import cells_of, quantize

        try:
            query, query_scale = quantize(embedder.embed([text])[0])
        except Exception as error:
            out.reasons = [UNAVAILABLE]
            out.notice = f"semantic search failed: {type(error).__name__}: {error}"
            return out
        found = self._read(model_id, cells_of(embedder), query, scope, snap)
        out.hits = best(query, query_scale, found, embedder.dimensions, limit, self.config)
        return out

    def _read(
        self, model_id: int, cells: Cells | None, query: bytes, scope: EventScope, snap: Snapshot
    ) -> VectorScan:
        """Every in-scope vector, or, when the provider has cells, the nearest cells'
        until ``semantic.scanLimit`` vectors were read (all of them in a small scope)."""
        vectors = self.store.vectors
        if cells is None:
            return vectors.scan(model_id, scope, snap)
        limit = self.config.scan_limit
        found = VectorScan()
        for group in cell_groups(cells.ranked(query)):
            part = vectors.scan(model_id, scope, snap, cells=group, limit=limit - len(found.ids))
            found.ids += part.ids
            found.keys += part.keys
            found.blobs += part.blobs
            found.scales += part.scales
            if len(found.ids) >= limit:
                break
        return found


def cell_groups(ranked: list[int]) -> list[list[int]]:
    """Cells, nearest first, in groups that double (8, 8, 16, 32, …): a few queries
    reach the populated cells even when the nearest ones are empty in this scope."""
    groups, start, size = [], 0, 8
    while start < len(ranked):
        groups.append(ranked[start : start + size])
        start += size
        size = start
    return groups


def best(
    query: bytes,
    query_scale: float,
    found: VectorScan,
    dimensions: int,
    limit: int,
    config: SemanticConfig,
) -> list[tuple[int, float]]:
    """The ``limit`` read vectors most similar to the int8 ``query``, as
    ``(event id, similarity)``: rounded, best first, at most :data:`PER_SESSION` a session."""
    if not found.ids:
        return []
    from memplug.semantic.vecmath import int8_rows, similarities

    rows = int8_rows(b"".join(found.blobs), dimensions)
    exact = similarities(rows, found.scales, query, query_scale).tolist()
    scores = [round(score, SCORE_DECIMALS) for score in exact]
    # Best score first, ties by the events' own (session, seq): a total order, the same
    # in every database.
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], found.keys[i]))
    return per_session(
        [(found.ids[i], found.keys[i][0], scores[i]) for i in order], limit, config.min_similarity
    )


def per_session(
    ranked: list[tuple[int, str, float]], limit: int, min_similarity: float
) -> list[tuple[int, float]]:
    """The first ``limit`` of ``ranked`` (event id, session, similarity; best first) at or
    above ``min_similarity``, at most :data:`PER_SESSION` from one session."""
    out: list[tuple[int, float]] = []
    taken: dict[str, int] = {}
    for event_id, session, score in ranked:
        if score < min_similarity or len(out) >= limit:
            break
        if taken.get(session, 0) < PER_SESSION:
            taken[session] = taken.get(session, 0) + 1
            out.append((event_id, score))
    return out
