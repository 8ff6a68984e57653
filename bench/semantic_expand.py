"""What query expansion through the static table's vocabulary could add to lexical recall.

    python -m bench.semantic_expand --shared ../shared

Each question word's nearest whole-word tokens in the builtin table (cosine of their
rows, ``--neighbours`` of them above ``--floor``; "destress" → "stress", "relax") are
searched as a second BM25 query, fused below the original one by reciprocal rank
(weight ``--weight``). Reported per LoCoMo category (1–4) beside plain BM25 and BM25
fused with the table's sentence vectors, in the same run: recall@10 of evidence turns.
A lab measurement over plain FTS5 BM25, not memplug's ranking.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from bench.quality import BASELINE_STOP, load_locomo
from bench.semantic_distill import _bm25, _rrf
from memplug.semantic import builtin
from memplug.semantic.builtin import Builtin

WORD = re.compile(r"[a-z]{3,}")


def _word_table() -> tuple[list[str], np.ndarray]:
    """Whole-word alphabetic tokens of the table and their unit rows."""
    vocab = (builtin.DATA / builtin.VOCAB_FILE).read_text(encoding="utf-8").splitlines()
    rows = np.load(builtin.DATA / builtin.ROWS_FILE).astype(np.float64)
    rows *= np.load(builtin.DATA / builtin.SCALE_FILE)[:, None]
    keep = [i for i, token in enumerate(vocab) if WORD.fullmatch(token)]
    table = rows[keep]
    table /= np.maximum(np.linalg.norm(table, axis=1, keepdims=True), 1e-12)
    return [vocab[i] for i in keep], table


class Expander:
    def __init__(self, neighbours: int, floor: float) -> None:
        self.words, self.table = _word_table()
        self.index = {w: i for i, w in enumerate(self.words)}
        self.neighbours, self.floor = neighbours, floor

    def expand(self, question: str) -> list[str]:
        words = [w for w in WORD.findall(question.lower()) if w not in BASELINE_STOP]
        out: list[str] = []
        for word in words:
            if word not in self.index:
                continue
            sims = self.table @ self.table[self.index[word]]
            for j in np.argsort(-sims)[1 : 1 + self.neighbours]:
                other = self.words[j]
                if sims[j] >= self.floor and other not in words and other[:4] != word[:4]:
                    out.append(other)
        return sorted(set(out) - BASELINE_STOP)


def _recall(ranked: list[str], gold: set[str]) -> float:
    return len(set(ranked[:10]) & gold) / len(gold)


def run(shared: Path, neighbours: int, floor: float, weight: float) -> dict[str, Any]:
    dataset = load_locomo(shared / "data" / "locomo" / "locomo10.json")
    expander, model = Expander(neighbours, floor), Builtin()
    sums: dict[str, dict[str, list[float]]] = {}
    examples = []
    for conv in dataset.memories:
        ids, texts = [t.key for t in conv.turns], [t.text for t in conv.turns]
        docs = np.asarray(model.embed(texts))
        for q in conv.questions:
            gold = set(q.gold)
            base = _bm25(ids, texts, q.question)
            extra = expander.expand(q.question)
            expanded = _bm25(ids, texts, " ".join(extra)) if extra else []
            near = np.argsort(-(docs @ np.asarray(model.embed([q.question])[0])))[:100]
            semantic = [ids[i] for i in near]
            with_expansion = _rrf(base, expanded, weight=weight)
            lists = {
                "bm25": base,
                "bm25+expansion": with_expansion,
                "bm25+semantic": _rrf(base, semantic, weight=0.3),
                "bm25+expansion+semantic": _rrf(with_expansion, semantic, weight=0.3),
            }
            for name, ranked in lists.items():
                sums.setdefault(name, {}).setdefault(q.category, []).append(_recall(ranked, gold))
            if len(examples) < 5 and extra:
                examples.append({"question": q.question, "added": extra[:8]})
    table = {
        name: {
            **{c: round(float(np.mean(v)), 3) for c, v in sorted(by.items())},
            "1-4": round(float(np.mean([x for v in by.values() for x in v])), 3),
        }
        for name, by in sums.items()
    }
    return {
        "neighbours": neighbours,
        "floor": floor,
        "weight": weight,
        "r@10": table,
        "examples": examples,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", default="../shared")
    parser.add_argument("--neighbours", type=int, default=2)
    parser.add_argument("--floor", type=float, default=0.6)
    parser.add_argument("--weight", type=float, default=0.5)
    args = parser.parse_args()
    print(json.dumps(run(Path(args.shared), args.neighbours, args.floor, args.weight), indent=1))


if __name__ == "__main__":
    main()
