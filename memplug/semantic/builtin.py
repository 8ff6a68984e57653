"""The ``builtin`` provider: a static token table distilled from all-MiniLM-L6-v2.

A text's vector is the mean of its WordPiece tokens' rows, scaled to unit length —
no model runs at query time, so loading takes milliseconds and needs only numpy. The
table (``data/``, int8 rows with one scale each) was made once by
``bench/semantic_distill.py`` from the upstream weights (sha256 in ``data/NOTICE``);
docs/semantic.md has the measurements that chose it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memplug.semantic.wordpiece import WordPiece

DATA = Path(__file__).parent / "data"
ROWS_FILE = "minilm-static-rows.npy"
SCALE_FILE = "minilm-static-scale.npy"
VOCAB_FILE = "vocab.txt"
# Bump when the table, the tokenizer or the pooling changes: stored vectors then go stale.
VERSION = "minilm-l6-v2-static-1"
# Long texts are cut here: the first tokens carry the topic, and the cost stays bounded.
MAX_TOKENS = 512


class Builtin:
    name = "builtin"
    version = VERSION
    model = "all-MiniLM-L6-v2 (static distillation)"

    def __init__(self, data: Path = DATA) -> None:
        # Memory-mapped: a process reads only the rows its texts use, so loading costs
        # no decompression and no conversion of the whole table.
        self._rows = np.load(data / ROWS_FILE, mmap_mode="r")
        self._scale = np.load(data / SCALE_FILE).astype(np.float64)
        vocab = (data / VOCAB_FILE).read_text(encoding="utf-8").splitlines()
        self._tokenizer = WordPiece(vocab)
        self.dimensions = int(self._rows.shape[1])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float32 rows, one per text; a text with no known token is all zeros."""
        out = np.zeros((len(texts), self.dimensions), dtype=np.float64)
        rows, scale = self._rows, self._scale
        for row, text in enumerate(texts):
            ids = self._tokenizer.encode(text, MAX_TOKENS)
            if ids:
                # One text's rows summed alone, in float64: its vector does not depend
                # on the batch it came in, and rounds to the same float32 everywhere.
                out[row] = (rows[ids] * scale[ids, None]).sum(0) / len(ids)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return (out / np.where(norms == 0, 1.0, norms)).astype(np.float32)
