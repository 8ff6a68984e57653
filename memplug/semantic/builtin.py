"""The ``builtin`` provider: a static token table distilled from all-MiniLM-L6-v2.

A text's vector is the weighted sum of its WordPiece tokens' rows, scaled to unit
length — no model runs. Needs ``memplug-local[semantic]``: numpy for the table (memory
mapped, so a process reads only the rows of the tokens it embeds) and Hugging Face
``tokenizers`` for BERT's uncased WordPiece. The table (int8 rows with one scale each)
is the ``memplug-local-table`` distribution that the extra installs (built from
``memplug/semantic/table``, so ``pip install memplug-local`` stays small); it was made
once by ``bench/semantic_distill.py`` from the upstream weights (sha256 in its
``data/NOTICE``), and so were the coarse cells a large scope is searched through;
docs/semantic.md has the measurements that chose both.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path

import memplug_table
import numpy as np
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

from memplug.semantic.vecmath import Cells

DATA = Path(memplug_table.__file__).parent / "data"
ROWS_FILE = "minilm-static-rows.npy"
SCALE_FILE = "minilm-static-scale.npy"
CELLS_FILE = "minilm-static-cells.npy"
CELL_SCALE_FILE = "minilm-static-cell-scale.npy"
VOCAB_FILE = "vocab.txt"
# Bump when the table, the cells, the tokenizer or the pooling changes: stored vectors
# then go stale. 3: Hugging Face's WordPiece in place of memplug's own (identical ids on
# LoCoMo's and LME-dev's text; they differ on rare symbols, where HF's is the reference).
VERSION = "minilm-l6-v2-static-3"
# Long texts are cut here: the first tokens carry the topic, and the cost stays bounded.
MAX_TOKENS = 512


def tokenizer(vocab: Path | dict[str, int]) -> Tokenizer:
    """BERT's uncased WordPiece (the MiniLM tokenizer's settings) over ``vocab`` (a file
    of one token a line in id order, or the map), cutting at :data:`MAX_TOKENS`."""
    options = {"unk_token": "[UNK]", "max_input_chars_per_word": 100}
    found = Tokenizer(
        models.WordPiece(vocab, **options)
        if isinstance(vocab, dict)
        # Read by the library itself: a third of the time of a map built in Python.
        else models.WordPiece.from_file(str(vocab), **options)
    )
    found.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True
    )
    found.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    found.enable_truncation(MAX_TOKENS)
    return found


class Builtin:
    name = "builtin"
    version = VERSION
    model = "all-MiniLM-L6-v2 (static distillation)"

    def __init__(self, data: Path = DATA) -> None:
        self._rows = np.load(data / ROWS_FILE, mmap_mode="r")
        self._scale = np.load(data / SCALE_FILE).astype(np.float64)
        if self._rows.dtype != np.int8 or self._rows.ndim != 2:
            raise ValueError(f"the table is {self._rows.dtype} {self._rows.shape}, not int8 rows")
        if self._scale.shape != (len(self._rows),):
            raise ValueError(f"{len(self._scale)} scales for {len(self._rows)} rows")
        self.dimensions = int(self._rows.shape[1])
        self._tokenizer = tokenizer(data / VOCAB_FILE)
        self._data = data

    @cached_property
    def cells(self) -> Cells:
        """The coarse cells (centroids of real conversation turns) vectors are filed in."""
        rows = np.load(self._data / CELLS_FILE)
        if rows.shape[1:] != (self.dimensions,):
            raise ValueError(f"cells of shape {rows.shape} for a {self.dimensions} table")
        return Cells(rows, np.load(self._data / CELL_SCALE_FILE))

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's WordPiece ids (at most :data:`MAX_TOKENS`)."""
        encoded = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [e.ids for e in encoded]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float64 rows, one per text; a text with no known token is all zeros."""
        out = np.zeros((len(texts), self.dimensions))
        for row, ids in zip(out, self.token_ids(texts), strict=True):
            if not ids:
                continue
            # Each distinct token once, weighted by its count, in id order: the rows are
            # summed one after another (a reduction along the first axis), so the same
            # float additions in the same order on every machine.
            tokens, counts = np.unique(np.asarray(ids), return_counts=True)
            weights = counts * self._scale[tokens]
            total = (weights[:, None] * self._rows[tokens]).sum(axis=0)
            norm = math.sqrt(math.fsum((total * total).tolist()))
            if norm:
                row[:] = total / norm
        return out
