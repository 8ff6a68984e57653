"""The ``builtin`` provider: a static token table distilled from all-MiniLM-L6-v2.

A text's vector is the weighted sum of its WordPiece tokens' rows, scaled to unit
length — no model runs, and nothing beyond the standard library: the table is
memory-mapped, so a prompt hook reads only the few rows its prompt uses and never
imports numpy. The table (``data/``, int8 rows with one scale each) was made once by
``bench/semantic_distill.py`` from the upstream weights (sha256 in ``data/NOTICE``), and
so were the coarse cells a large scope is searched through; docs/semantic.md has the
measurements that chose both.
"""

from __future__ import annotations

import math
import mmap
import re
import sys
from array import array
from collections import Counter
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path

from memplug.semantic.vecmath import Cells
from memplug.semantic.wordpiece import WordPiece

DATA = Path(__file__).parent / "data"
ROWS_FILE = "minilm-static-rows.npy"
SCALE_FILE = "minilm-static-scale.npy"
CELLS_FILE = "minilm-static-cells.npy"
CELL_SCALE_FILE = "minilm-static-cell-scale.npy"
VOCAB_FILE = "vocab.txt"
# Bump when the table, the cells, the tokenizer or the pooling changes: stored vectors
# then go stale.
VERSION = "minilm-l6-v2-static-2"
# Long texts are cut here: the first tokens carry the topic, and the cost stays bounded.
MAX_TOKENS = 512

_NPY_MAGIC = b"\x93NUMPY\x01\x00"
_SHAPE = re.compile(r"'shape': \((\d+),\s*(\d*)\)")


def _npy(data: bytes | mmap.mmap, descr: str) -> tuple[int, int, int]:
    """``(payload offset, rows, columns)`` of a version-1 ``.npy`` file of ``descr`` values."""
    if data[:8] != _NPY_MAGIC:
        raise ValueError("not a version 1.0 .npy file")
    length = int.from_bytes(data[8:10], "little")
    header = bytes(data[10 : 10 + length]).decode("latin-1")
    shape = _SHAPE.search(header)
    if f"'descr': '{descr}'" not in header or "'fortran_order': False" not in header or not shape:
        raise ValueError(f"unexpected .npy header {header.strip()!r}")
    return 10 + length, int(shape.group(1)), int(shape.group(2) or 1)


def _floats(path: Path) -> array:
    data = path.read_bytes()
    offset, _, _ = _npy(data, "<f4")
    values = array("f")
    values.frombytes(data[offset:])
    if sys.byteorder == "big":
        values.byteswap()
    return values


class Builtin:
    name = "builtin"
    version = VERSION
    model = "all-MiniLM-L6-v2 (static distillation)"

    def __init__(self, data: Path = DATA) -> None:
        with open(data / ROWS_FILE, "rb") as file:
            self._map = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
        offset, count, self.dimensions = _npy(self._map, "|i1")
        self._rows = memoryview(self._map)[offset : offset + count * self.dimensions].cast("b")
        self._scale = _floats(data / SCALE_FILE)
        if len(self._scale) != count:
            raise ValueError(f"{len(self._scale)} scales for {count} rows")
        vocab = (data / VOCAB_FILE).read_text(encoding="utf-8").splitlines()
        self._tokenizer = WordPiece(vocab)
        self._data = data

    @cached_property
    def cells(self) -> Cells:
        """The coarse cells (centroids of real conversation turns) vectors are filed in."""
        data = (self._data / CELLS_FILE).read_bytes()
        offset, _, dimensions = _npy(data, "|i1")
        if dimensions != self.dimensions:
            raise ValueError(f"cells of {dimensions} dimensions for a {self.dimensions} table")
        return Cells(data[offset:], list(_floats(self._data / CELL_SCALE_FILE)), dimensions)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Unit-length rows, one per text; a text with no known token is all zeros."""
        return [self._embed(text) for text in texts]

    def _embed(self, text: str) -> list[float]:
        dims, rows, scale = self.dimensions, self._rows, self._scale
        total = [0.0] * dims
        # Each distinct token once, weighted by its count, in id order: the same float
        # additions in the same order on every machine, so the same vector everywhere.
        for token, times in sorted(Counter(self._tokenizer.encode(text, MAX_TOKENS)).items()):
            weight = times * scale[token]
            start = token * dims
            total = [t + r * weight for t, r in zip(total, rows[start : start + dims], strict=True)]
        norm = math.sqrt(math.fsum(t * t for t in total))
        return [t / norm for t in total] if norm else total
