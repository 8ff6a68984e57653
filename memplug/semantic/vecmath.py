"""Vector arithmetic in plain Python: int8 vectors, and many dot products at once.

A prompt hook cannot afford numpy's import (~60-110 ms), so the query side of the
semantic provider runs on the standard library. Vectors are stored as int8 with one
scale each (:func:`quantize`); a similarity is then ``scale_a x scale_b x`` an integer
dot product — exact integer arithmetic, so the same vectors give the same scores on
every machine. :class:`PackedVectors` computes the dot products of one query with many
vectors in a few hundred big-integer operations instead of a Python loop per element.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Sequence

# Bytes of int8 turned into offset-binary (value + 128, 0..255): XOR with 0x80.
_UNSIGNED = bytes(b ^ 0x80 for b in range(256))
# Each vector's dot product accumulates in a field this wide: 256 dimensions of
# 255 x 255 stay below 2**24, well inside 32 bits.
_FIELD = 4
_MAX_DIMENSIONS = 256


def quantize(vector: Sequence[float]) -> tuple[bytes, float]:
    """``(int8 bytes, scale)`` with ``vector ≈ scale x int8``; all zeros gives scale 0."""
    scale = max((abs(x) for x in vector), default=0.0) / 127.0
    if scale == 0.0:  # all zeros (or too small to tell apart from them)
        return bytes(len(vector)), 0.0
    # round() is round-half-even on the exact float: the same bytes everywhere.
    return bytes(round(x / scale) & 0xFF for x in vector), scale


def signed(data: bytes) -> list[int]:
    """The int8 values of ``data``."""
    return list(memoryview(data).cast("b"))


class PackedVectors:
    """Row-major int8 vectors (``dimensions`` bytes each, concatenated), laid out so that
    :meth:`dots` gets every row's dot product with a query at once.

    Column ``j`` of all rows becomes one big integer with a 32-bit field per row; the
    sum over ``j`` of ``query[j] x column_j`` then holds every row's dot product in its
    own field (the fields never carry into each other). Values are offset to 0..255 on
    both sides so no field goes negative; the offsets are taken out afterwards.
    """

    def __init__(self, rows: bytes, dimensions: int) -> None:
        if dimensions > _MAX_DIMENSIONS or len(rows) % dimensions:
            raise ValueError(f"{len(rows)} bytes are not rows of {dimensions} dimensions")
        self.dimensions = dimensions
        self.count = len(rows) // dimensions
        unsigned = rows.translate(_UNSIGNED)
        spread = bytearray(self.count * _FIELD)
        self._columns: list[int] = []
        for j in range(dimensions):
            spread[0::_FIELD] = unsigned[j::dimensions]
            self._columns.append(int.from_bytes(spread, "little"))
        # Each row's sum of offset values: needed to take the offsets out of a product.
        self._row_sums = self._fields(sum(self._columns))

    def _fields(self, packed: int) -> list[int]:
        words = array("I")
        assert words.itemsize == _FIELD
        words.frombytes(packed.to_bytes(self.count * _FIELD, "little"))
        if sys.byteorder == "big":
            words.byteswap()
        return words.tolist()

    def dots(self, query: bytes) -> list[int]:
        """The integer dot product of every row with the int8 ``query``, in row order."""
        if len(query) != self.dimensions:
            raise ValueError(f"a query of {len(query)} dimensions against {self.dimensions}")
        if not self.count:
            return []
        unsigned = query.translate(_UNSIGNED)
        total = 0
        for weight, column in zip(unsigned, self._columns, strict=True):
            if weight:
                total += weight * column
        # sum((q - 128)(r - 128)) = sum(q r) - 128 sum(r) - 128 sum(q) + 128 x 128 x dims
        constant = 128 * 128 * self.dimensions - 128 * sum(unsigned)
        return [
            value - 128 * row_sum + constant
            for value, row_sum in zip(self._fields(total), self._row_sums, strict=True)
        ]


class Cells:
    """A provider's coarse partition of its vector space: centroids (int8 rows with one
    scale each). A stored vector is filed in its nearest cell; a query over a large
    scope reads the cells nearest to it first."""

    def __init__(self, rows: bytes, scales: Sequence[float], dimensions: int) -> None:
        self._packed = PackedVectors(rows, dimensions)
        if len(scales) != self._packed.count:
            raise ValueError(f"{len(scales)} scales for {self._packed.count} centroids")
        self._scales = list(scales)

    def __len__(self) -> int:
        return self._packed.count

    def ranked(self, vector: bytes) -> list[int]:
        """Every cell, the most similar to the int8 ``vector`` first (ties: lower number)."""
        scores = [s * d for s, d in zip(self._scales, self._packed.dots(vector), strict=True)]
        return sorted(range(len(scores)), key=lambda cell: (-scores[cell], cell))

    def nearest(self, vector: bytes) -> int:
        return self.ranked(vector)[0]
