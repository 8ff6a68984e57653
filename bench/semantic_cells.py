"""The builtin provider's coarse cells: how they are made, and what probing them loses.

    python -m bench.semantic_cells --shared ../shared [--write] [--cells 256]

Cells are centroids of real conversation turns: spherical k-means (seeded, 25 rounds)
over the builtin vectors of LongMemEval-S dev's distinct haystack turns (MIT; LoCoMo,
CC BY-NC, is kept out of the shipped file and used only to measure). ``--write`` stores
them as int8 rows with one scale each beside the table. The measurement: LoCoMo's
questions against LoCoMo's and LME-dev's turns together (~28,600 vectors, one scope),
the provider's top 20 by an exact scan against the top 20 found by reading only the
nearest cells until ``--reads`` vectors were read — what ``semantic.scanLimit`` trades.
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from memplug.semantic import builtin
from memplug.semantic.builtin import Builtin

TOP = 20


def _turns(shared: Path) -> tuple[list[str], list[str], list[str]]:
    """LME-dev's distinct turns, LoCoMo's turns and LoCoMo's questions, in file order."""
    lme = json.loads(
        gzip.decompress((shared / "data/longmemeval/longmemeval_s_dev.json.gz").read_bytes())
    )
    lme_turns = list(
        dict.fromkeys(t["content"] for q in lme for s in q["haystack_sessions"] for t in s)
    )
    locomo = json.loads((shared / "data/locomo/locomo10.json").read_text(encoding="utf-8"))
    turns = [
        turn["text"]
        for conv in locomo
        for key, session in conv["conversation"].items()
        if key.startswith("session_") and isinstance(session, list)
        for turn in session
    ]
    questions = [qa["question"] for conv in locomo for qa in conv["qa"]]
    return lme_turns, turns, questions


def kmeans(vectors: np.ndarray, count: int, rounds: int = 25, seed: int = 0) -> np.ndarray:
    """Spherical k-means: unit centroids, each the normalised sum of its members."""
    rng = np.random.default_rng(seed)
    vectors = vectors[np.linalg.norm(vectors, axis=1) > 0]
    centroids = vectors[rng.choice(len(vectors), count, replace=False)].copy()
    for _ in range(rounds):
        nearest = np.argmax(vectors @ centroids.T, 1)
        for cell in range(count):
            members = vectors[nearest == cell]
            total = members.sum(0) if len(members) else vectors[rng.integers(len(vectors))]
            centroids[cell] = total / np.linalg.norm(total)
    return centroids


def write_cells(centroids: np.ndarray) -> None:
    scale = np.abs(centroids).max(1, keepdims=True) / 127.0
    np.save(builtin.DATA / builtin.CELLS_FILE, np.round(centroids / scale).astype(np.int8))
    np.save(builtin.DATA / builtin.CELL_SCALE_FILE, scale.astype(np.float32)[:, 0])


def probe_recall(
    centroids: np.ndarray, vectors: np.ndarray, queries: np.ndarray, reads: int
) -> dict[str, Any]:
    """Mean overlap of the probed top 20 with the exact top 20, and vectors read."""
    cell = np.argmax(vectors @ centroids.T, 1)
    sizes = np.bincount(cell, minlength=len(centroids))
    exact = np.argsort(-(queries @ vectors.T), 1)[:, :TOP]
    order = np.argsort(-(queries @ centroids.T), 1)
    overlap, read = [], []
    for index, query in enumerate(queries):
        visited, total = [], 0
        for c in order[index]:
            if total >= reads:
                break
            visited.append(c)
            total += sizes[c]
        members = np.where(np.isin(cell, visited))[0]
        top = members[np.argsort(-(vectors[members] @ query))[:TOP]]
        overlap.append(len(set(top) & set(exact[index])) / TOP)
        read.append(total)
    return {
        "reads": reads,
        "read_mean": round(float(np.mean(read))),
        "top20_overlap": round(float(np.mean(overlap)), 3),
        "largest_cell": int(sizes.max()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", default="../shared")
    parser.add_argument("--cells", type=int, default=256)
    parser.add_argument("--reads", default="1000,2000,3000,6000")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    lme_turns, turns, questions = _turns(Path(args.shared))
    model = Builtin()
    start = time.perf_counter()
    lme = np.asarray(model.embed(lme_turns))
    print(f"embedded {len(lme_turns)} LME-dev turns in {time.perf_counter() - start:.1f}s")
    centroids = kmeans(lme, args.cells)
    if args.write:
        write_cells(centroids)
        print("written", builtin.DATA / builtin.CELLS_FILE)
    vectors = np.vstack([np.asarray(model.embed(turns)), lme])
    queries = np.asarray(model.embed(questions))
    for reads in (int(r) for r in args.reads.split(",")):
        print(
            json.dumps(
                {"vectors": len(vectors), **probe_recall(centroids, vectors, queries, reads)}
            )
        )


if __name__ == "__main__":
    main()
