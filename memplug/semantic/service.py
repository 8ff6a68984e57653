"""The semantic side of memory: keeping vectors current and finding similar events.

Used only when ``semantic.provider`` is not ``"off"``; numpy is imported inside the
methods that need it, so status on a default install stays numpy-free. Whatever goes
wrong (provider missing, raising, vectors behind) becomes a coverage reason and a
status line — never an exception into the host.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any

from msgspec import Struct, field

from memplug.semantic import INCOMPLETE, OFF, UNAVAILABLE, Embedder, SemanticUnavailable
from memplug.store.search import EventScope, Snapshot
from memplug.store.vectors import VectorScan

if TYPE_CHECKING:
    from memplug.config import SemanticConfig
    from memplug.store.ports import Storage

# Scores are rounded before ranking, so a last-bit difference between two machines'
# arithmetic cannot reorder results; ties then break by event id.
SCORE_DECIMALS = 5


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


def encode(vector: Any) -> bytes:
    import numpy as np

    return np.asarray(vector, dtype="<f2").tobytes()


class Semantic:
    def __init__(self, store: Storage, config: SemanticConfig) -> None:
        self.store = store
        self.config = config

    @property
    def enabled(self) -> bool:
        return self.config.provider != OFF

    @cached_property
    def _loaded(self) -> tuple[Embedder | None, str | None]:
        from memplug.semantic import load_embedder

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
        with store.write_transaction():
            model_id = self._model_id(embedder, create=True)
        assert model_id is not None
        top = vectors.max_event_id()
        after = 0
        while budget_ms is None or (time.perf_counter() - start) * 1000 < budget_ms:
            batch = vectors.pending(model_id, self.config.batch_size, after, top)
            if not batch:
                with store.write_transaction():
                    vectors.set_watermark(model_id, top)
                break
            try:
                rows = embedder.embed([text for *_, text in batch])
            except Exception as error:
                report.error = f"{type(error).__name__}: {error}"
                break
            with store.write_transaction():
                vectors.put(
                    model_id,
                    [
                        (i, session, seq, encode(v))
                        for (i, session, seq, _), v in zip(batch, rows, strict=True)
                    ],
                )
            report.embedded += len(batch)
            after = batch[-1][0]
            if progress is not None:
                progress(len(batch))
        report.remaining = vectors.counts(model_id).missing
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
        """The ``limit`` in-scope events most similar to ``text`` (exact scan)."""
        out = SemanticHits()
        embedder = self.embedder
        if embedder is None:
            if self.enabled:
                out.reasons.append(UNAVAILABLE)
                out.notice = f"semantic search unavailable: {self.unavailable}"
            return out
        model_id = self._model_id(embedder, create=False)
        found = self.store.vectors.scan(model_id, scope, snap) if model_id else None
        if found is None or found.lacking:
            out.reasons.append(INCOMPLETE)
            out.notice = "semantic search incomplete: some events have no current vector yet"
        if found is None or not found.ids or not text.strip():
            return out
        try:
            query = embedder.embed([text])
        except Exception as error:
            out.reasons = [UNAVAILABLE]
            out.notice = f"semantic search failed: {type(error).__name__}: {error}"
            return out
        out.hits = _top(query, found, embedder.dimensions, limit, self.config.min_similarity)
        return out


def _top(
    query: Any, found: VectorScan, dimensions: int, limit: int, floor: float
) -> list[tuple[int, float]]:
    import numpy as np

    matrix = np.frombuffer(b"".join(found.blobs), dtype="<f2").reshape(len(found.ids), dimensions)
    scores = np.round(matrix.astype(np.float32) @ np.asarray(query, np.float32)[0], SCORE_DECIMALS)
    # Best score first, ties by the events' own (session, seq): a total order, the same
    # in every database.
    sessions = sorted({session for session, _ in found.keys})
    rank = {session: index for index, session in enumerate(sessions)}
    session_key = np.fromiter((rank[s] for s, _ in found.keys), np.int64, len(found.keys))
    seq_key = np.fromiter((seq for _, seq in found.keys), np.int64, len(found.keys))
    order = np.lexsort((seq_key, session_key, -scores))[: min(limit, len(found.ids))]
    return [(found.ids[i], float(scores[i])) for i in order if scores[i] >= floor]
