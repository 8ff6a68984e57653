"""Vector arithmetic on int8 vectors with numpy (``memplug-local[semantic]``).

Vectors are stored as int8 with one scale each (:func:`quantize`); a similarity is then
``scale_a x scale_b x`` an integer dot product — exact integer arithmetic, so the same
vectors give the same scores on every machine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def quantize(vector: Any) -> tuple[bytes, float]:
    """``(int8 bytes, scale)`` with ``vector ≈ scale x int8``; all zeros gives scale 0."""
    values = np.asarray(vector, dtype=np.float64)
    scale = float(np.abs(values).max(initial=0.0)) / 127.0
    if scale == 0.0:  # all zeros (or too small to tell apart from them)
        return bytes(len(values)), 0.0
    # rint rounds half to even on the exact float: the same bytes everywhere.
    return np.rint(values / scale).astype(np.int8).tobytes(), scale


def int8_rows(data: bytes, dimensions: int) -> np.ndarray:
    """Concatenated int8 vectors as a ``(count, dimensions)`` array."""
    if len(data) % dimensions:
        raise ValueError(f"{len(data)} bytes are not rows of {dimensions} dimensions")
    return np.frombuffer(data, dtype=np.int8).reshape(-1, dimensions)


def dots(rows: np.ndarray, query: bytes) -> np.ndarray:
    """The exact integer dot product of every int8 row with the int8 ``query``."""
    if len(query) != rows.shape[1]:
        raise ValueError(f"a query of {len(query)} dimensions against {rows.shape[1]}")
    return rows.astype(np.int32) @ np.frombuffer(query, dtype=np.int8).astype(np.int32)


def similarities(
    rows: np.ndarray, scales: Sequence[float], query: bytes, query_scale: float
) -> np.ndarray:
    """``query_scale x scale x dot`` of every row (float64)."""
    return query_scale * np.asarray(scales, dtype=np.float64) * dots(rows, query)


class Cells:
    """A provider's coarse partition of its vector space: centroids (int8 rows with one
    scale each). A stored vector is filed in its nearest cell; a query over a large
    scope reads the cells nearest to it first."""

    def __init__(self, rows: np.ndarray, scales: Any) -> None:
        self._rows = np.asarray(rows, dtype=np.int8)
        self._scales = np.asarray(scales, dtype=np.float64)
        if self._rows.ndim != 2 or self._scales.shape != (len(self._rows),):
            raise ValueError(f"{self._scales.shape} scales for centroids {self._rows.shape}")

    def __len__(self) -> int:
        return len(self._rows)

    def ranked(self, vector: bytes) -> list[int]:
        """Every cell, the most similar to the int8 ``vector`` first (ties: lower number)."""
        scores = self._scales * dots(self._rows, vector)
        # lexsort's last key is the primary one; it is stable, so ties keep cell order.
        return [int(cell) for cell in np.lexsort((np.arange(len(scores)), -scores))]

    def nearest(self, vector: bytes) -> int:
        return self.ranked(vector)[0]


def encode(vector: Any, cells: Cells | None) -> tuple[bytes, float, int | None]:
    """``(int8 bytes, scale, cell)`` of a provider's float row (a list or an array)."""
    data, scale = quantize(vector)
    return data, scale, None if cells is None or not scale else cells.nearest(data)


def cells_of(embedder: object) -> Cells | None:
    """The provider's coarse cells, when it has them (a third-party one may not)."""
    cells = getattr(embedder, "cells", None)
    return cells if isinstance(cells, Cells) else None
