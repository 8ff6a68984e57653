"""Retrieval benchmark: search latency on synthetic events, and evidence recall on
LoCoMo and LongMemEval-S dev beside plain BM25 and recency, with an ablation table.

    python -m bench.retrieval --shared ../shared [--dataset locomo|lme-dev|all|none]
                              [--sizes 10000,100000] [--quick] [--no-ablation] [--no-write]

Latency: events from ``../shared/acceptance/gen_events.py`` (one project, ten sessions,
a vocabulary of 30 words that each occur in most events — the worst case for a
lexical index) are imported into a fresh database; then a fixed, seeded list of
queries runs through ``Retriever.retrieve`` (what a pre-step calls, project scope)
and ``Retriever.search`` (what ``memory search`` calls, global scope).

Quality: see :mod:`bench.quality` — the same import and the same calls for both data
sets; the ranking with extraction off and on, and with one signal removed at a time.
``--quick`` runs a fixed subset (for iterating; it never writes the docs). Without
``--no-write`` the "Retrieval" section of ``docs/benchmarks.md`` is rewritten.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.quality import BUDGET_TOKENS, HALVES, Tally, Variant, baselines, evaluate, load
from bench.report import machine, percentiles, write_section
from memplug.base.config import Config
from memplug.memory import Memory
from memplug.recall.retrieve import Retriever

METRICS = ("r5", "r10", "budget")
OURS = "memplug"
OURS_ON = "memplug, extraction on"
WORDS = (
    "deploy cache tenant migration schema index query latency budget token session worker "
    "queue retry timeout failure config service endpoint payload build release branch commit "
    "review test fixture golden parser lexer router handler metrics"
).split()


# -- latency --------------------------------------------------------------------------------


def _generate(shared: Path, count: int) -> bytes:
    script = shared / "acceptance" / "gen_events.py"
    done = subprocess.run(
        [sys.executable, str(script), str(count)], capture_output=True, check=True
    )
    return done.stdout


def _queries(count: int, seed: int = 11) -> list[str]:
    """Task-text-like queries: a few vocabulary words in a sentence, sometimes an exact
    symbol, a path, a Chinese phrase, or a word that is not in the corpus."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        words = rng.sample(WORDS, rng.randint(1, 6))
        text = "why does the " + " ".join(words) + " fail again?"
        roll = i % 6
        if roll == 1:
            text += f" port {rng.randint(1000, 65000)}"
        elif roll == 2:
            text += f" in src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.py"
        elif roll == 3:
            text = rng.choice(["测试环境的端口是多少", "数据库迁移失败了", "值班室分机号是多少"])
        elif roll == 4:
            text += " quokka-sapphire"
        out.append(text)
    return out


def latency(shared: Path, sizes: Sequence[int], queries: int = 300) -> list[dict[str, Any]]:
    rows = []
    for size in sizes:
        data = _generate(shared, size)
        with tempfile.TemporaryDirectory() as tmp:
            config = {"extraction": {"enabled": False}}
            with Memory.open(Path(tmp) / "m.sqlite", config=config) as memory:
                start = time.perf_counter()
                memory.import_jsonl([("-", io.BytesIO(data))])
                import_s = time.perf_counter() - start
                retriever = Retriever(memory.store, memory.config)
                texts = _queries(queries)
                for text in texts[:20]:  # warm the page cache, as a running host would be
                    retriever.retrieve("s3", text)
                pre, pre_cpu, search, search_cpu, budget_hits, evidence = [], [], [], [], 0, 0
                for i, text in enumerate(texts):
                    t0, c0 = time.perf_counter(), time.process_time()
                    result = retriever.retrieve(f"s{i % 10}", text)
                    pre.append((time.perf_counter() - t0) * 1000)
                    pre_cpu.append((time.process_time() - c0) * 1000)
                    budget_hits += not result.coverage.complete
                    evidence += len(result.evidence)
                    t0, c0 = time.perf_counter(), time.process_time()
                    retriever.search(text, limit=20)
                    search.append((time.perf_counter() - t0) * 1000)
                    search_cpu.append((time.process_time() - c0) * 1000)
        rows.append(
            {
                "events": size,
                "import_s": round(import_s, 1),
                "retrieve": percentiles(pre),
                "retrieve_cpu": percentiles(pre_cpu),
                "search": percentiles(search),
                "search_cpu": percentiles(search_cpu),
                "incomplete": budget_hits,
                "queries": len(texts),
                "mean_evidence": round(evidence / len(texts), 1),
            }
        )
        print(f"latency {size}: {rows[-1]}", flush=True)
    return rows


# -- quality --------------------------------------------------------------------------------


def _ablations() -> list[tuple[str, dict[str, Any]]]:
    """The full pipeline minus one signal each, as config overrides of the defaults."""
    roles = Config().retrieval.role_weights
    return [
        ("− length normalisation (`bm25B` 0)", {"retrieval": {"bm25B": 0.0}}),
        (
            "− role prior (assistant weighted as user)",
            {"retrieval": {"roleWeights": dict(roles, assistant=roles["user"])}},
        ),
        ("− session aggregation", {"retrieval": {"sessionWeight": 0.0}}),
        ("− neighbour spread", {"retrieval": {"nextSpread": 0.0, "prevSpread": 0.0}}),
        ("− second neighbour (`farSpread` 0)", {"retrieval": {"farSpread": 0.0}}),
        ("− whole-word bonus", {"retrieval": {"boundaryBonus": 0.0}}),
        (
            "− stem check (a prefix-only match counted whole)",
            {"retrieval": {"prefixMatchWeight": 1.0}},
        ),
        ("− assistant answers quoted", {"assembly": {"evidenceTypes": ["user/message"]}}),
    ]


def _grid() -> list[tuple[str, dict[str, Any]]]:
    """The length normalisation and role prior settings the defaults were chosen from."""
    roles = Config().retrieval.role_weights
    length = [
        (
            f"b {b}, pivot {pivot}, cap {cap}",
            {"bm25B": b, "lengthPivotChars": pivot, "lengthCap": cap},
        )
        for b, pivot, cap in (
            (0.0, 200, 8),
            (0.25, 200, 8),
            (0.75, 200, 8),
            (0.5, 100, 8),
            (0.5, 400, 8),
            (0.5, 200, 4),
            (0.5, 200, 1000),
        )
    ]
    role = [
        (f"assistant role weight {w}", {"roleWeights": dict(roles, assistant=w)})
        for w in (0.3, 0.7, 0.9, 1.0)
    ]
    return [(name, {"retrieval": config}) for name, config in (*length, *role)]


TABLES = {"ablation": _ablations, "grid": _grid, "none": list}
TITLES = {
    "ablation": "Ablation: the full pipeline minus one signal (extraction off)",
    "grid": "Length normalisation and role prior: the settings measured (extraction off)",
    "none": "",
}


SEMANTIC = "memplug + semantic (`builtin`)"


def quality(
    shared: Path,
    names: Sequence[str],
    quick: bool = False,
    table: str = "ablation",
    semantic: bool = False,
) -> list[dict[str, Any]]:
    """Per dataset: its baselines and every variant's tally, and search latency; with
    ``semantic``, also the hybrid ranking (needs ``memplug-local[semantic]``)."""
    variants = [
        Variant(OURS),
        Variant(OURS_ON, extraction=True),
        *([Variant(SEMANTIC, {"semantic": {"provider": "builtin"}})] if semantic else []),
        *(Variant(name, config) for name, config in TABLES[table]()),
    ]
    out = []
    for name in names:
        data = load(shared, name, quick)
        start = time.perf_counter()
        results = evaluate(data, variants, lambda m: print(m, flush=True))
        out.append(
            {
                "data": data,
                "base": baselines(data),
                "results": results,
                "seconds": time.perf_counter() - start,
            }
        )
    return out


def _figures(tally: Tally, key: str = "all", metrics: Sequence[str] = METRICS) -> str:
    return " | ".join(f"{tally.get(m, key):.3f}" for m in metrics)


def _dataset_section(run: dict[str, Any]) -> list[str]:
    data, base, results = run["data"], run["base"], run["results"]
    ours, on = results[OURS][0], results[OURS_ON][0]
    n = ours.counts["all"]
    times = results[OURS][1]
    lat = percentiles(times)
    parts = [
        f"### {data.name} (n = {n} questions, {len(data.memories)} memories)",
        "",
        *([data.notes, ""] if data.notes else []),
        "| ranking | r@5 | r@10 | in budget |",
        "| --- | ---: | ---: | ---: |",
        f"| **memplug** (extraction off) | {_figures(ours)} |",
        f"| memplug, extraction on | {_figures(on)} |",
        f"| plain BM25 (FTS5 porter) | {_figures(base['bm25'])} |",
        f"| recency only | {_figures(base['recency'])} |",
        "",
        "| category | n | memplug r@5 / r@10 / in budget | extraction on r@10 / in budget "
        "| BM25 r@5 / r@10 / in budget | recency in budget |",
        "| --- | ---: | --- | --- | --- | ---: |",
    ]
    for key in (*data.categories, "all"):
        label = "**all**" if key == "all" else key
        cells = [
            " / ".join(f"{tally.get(m, key):.3f}" for m in metrics)
            for tally, metrics in (
                (ours, METRICS),
                (on, ("r10", "budget")),
                (base["bm25"], METRICS),
                (base["recency"], ("budget",)),
            )
        ]
        parts.append(f"| {label} | {ours.counts[key]} | {' | '.join(cells)} |")
    parts += [
        "",
        f"`memory search` per question: p50 {lat['p50']} ms, p95 {lat['p95']} ms "
        f"(the machine was shared; {run['seconds']:.0f} s for this dataset's variants).",
        "",
    ]
    return parts


def _variants_section(runs: list[dict[str, Any]], title: str) -> list[str]:
    """Every variant beside the defaults: r@10 and in budget on each data set, and
    r@10 on each half of it (even and odd memories), so a weight chosen on one half
    or one data set can be checked on the other."""
    names = [n for n in runs[0]["results"] if n != OURS_ON]
    head = " | ".join(f"{r['data'].name} r@10 / in budget | halves A / B r@10" for r in runs)
    parts = [f"### {title}", "", f"| variant | {head} |", "| --- |" + " --- | --- |" * len(runs)]
    for name in [*names, "plain BM25"]:
        cells = []
        for run in runs:
            tally = run["base"]["bm25"] if name == "plain BM25" else run["results"][name][0]
            cells.append(
                f"{tally.get('r10'):.3f} / {tally.get('budget'):.3f} | "
                + " / ".join(f"{tally.get('r10', h):.3f}" for h in HALVES)
            )
        label = f"**{name}** (defaults)" if name == OURS else name
        parts.append(f"| {label} | {' | '.join(cells)} |")
    return [*parts, ""]


NOTES = """Every weight is a config key (docs/config.md); docs/search.md says what each does and
why it has its value."""


def render(
    lat: list[dict[str, Any]],
    runs: list[dict[str, Any]],
    command: str,
    title: str = TITLES["ablation"],
) -> str:
    parts = [
        f"Command: `{command}` (part of `make bench`).",
        f"Machine: {machine()}; load average at the end {os.getloadavg()[0]:.1f}.",
        "",
    ]
    if lat:
        parts += _latency_section(lat)
    if runs:
        parts += [
            "Quality (`bench/quality.py`): each memory (a LoCoMo conversation, or one "
            "LongMemEval question's ~50 sessions) imported into a fresh database; r@5 / "
            "r@10 from `memory search` (global scope, a page of 10; a memory hit counts "
            "the turns in its `sources`); in budget = gold turns quoted in what `memory "
            f"assemble` injects at {BUDGET_TOKENS:,} tokens. BM25 and recency pack their "
            "ranked turns (tokens + 8 each) into the same budget.",
            "",
        ]
        for run in runs:
            parts += _dataset_section(run)
        if any(len(r["results"]) > 2 for r in runs):
            parts += _variants_section(runs, title)
        parts += [NOTES]
    return "\n".join(parts)


def _latency_section(lat: list[dict[str, Any]]) -> list[str]:
    parts = [
        "### Search latency (synthetic events, `../shared/acceptance/gen_events.py`)",
        "",
        "Each row: a fresh database, 300 seeded queries (1–6 vocabulary words in a "
        "sentence; every 6th with a port number, a path, a Chinese question or an "
        "absent word). `retrieve` is the pre-step call (project scope, generated text "
        "excluded, neighbour spread); `search` is `memory search` (global scope, one "
        "page of 20). Milliseconds, in process: wall time, and the process's CPU time "
        "beside it (on a shared, loaded machine wall time is mostly waiting for a core).",
        "",
        "| events | retrieve wall p50 / p95 / p99 | retrieve CPU p50 / p95 / p99 | search wall p50 / p95 / p99 | search CPU p50 / p95 / p99 | incomplete coverage | target (whole pre_step p95) |",
        "| ---: | --- | --- | --- | --- | ---: | --- |",
    ]
    target = {100_000: "≤ 25 ms", 1_000_000: "≤ 100 ms"}
    for row in lat:
        cells = [
            " / ".join(str(row[k][p]) for p in ("p50", "p95", "p99"))
            for k in ("retrieve", "retrieve_cpu", "search", "search_cpu")
        ]
        parts.append(
            f"| {row['events']:,} | {' | '.join(cells)} | "
            f"{row['incomplete']}/{row['queries']} | {target.get(row['events'], '')} |"
        )
    return [
        *parts,
        "",
        "Incomplete coverage here is the candidate budget: in this corpus every "
        "vocabulary word occurs in most events, so each is read only for its newest "
        "matches (`retrieval.candidateBudget` = 400, shared down to 100 a term when a "
        "query has many) and the result says so (`candidate_budget`).",
        "",
    ]


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """``{dataset: {variant or baseline: {metric: value}}}`` over all questions."""
    out: dict[str, Any] = {}
    for run in runs:
        tallies = {**run["base"], **{k: v[0] for k, v in run["results"].items()}}
        out[run["data"].name] = {
            name: {m: round(t.get(m), 4) for m in METRICS} for name, t in tallies.items()
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", default="../shared")
    parser.add_argument("--dataset", default="all", choices=("locomo", "lme-dev", "all", "none"))
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated event counts")
    parser.add_argument("--quick", action="store_true", help="a fixed subset of each dataset")
    parser.add_argument(
        "--table",
        default="ablation",
        choices=sorted(TABLES),
        help="ablation: the defaults minus one signal each; grid: the length and role "
        "settings the defaults were chosen from",
    )
    parser.add_argument(
        "--semantic", action="store_true", help="also the hybrid ranking with the builtin provider"
    )
    parser.add_argument("--no-write", action="store_true", help="print, do not touch the docs")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    names = {"all": ["locomo", "lme-dev"], "none": []}.get(args.dataset, [args.dataset])
    shared = Path(args.shared)
    runs = quality(shared, names, args.quick, args.table, args.semantic)
    lat = latency(shared, sizes) if sizes else []
    command = " ".join(["python -m bench.retrieval", *sys.argv[1:]])
    markdown = render(lat, runs, command, TITLES[args.table])
    print(markdown)
    print(json.dumps(summary(runs), indent=1))
    if not args.no_write and not args.quick:
        write_section("Retrieval", markdown)


if __name__ == "__main__":
    main()
