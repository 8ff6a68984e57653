"""What the semantic provider costs: import rate, file bytes, query time, load time.

    python -m bench.semantic --shared ../shared [--events 100000]

Two databases get the same synthetic events (``../shared/acceptance/gen_events.py``):
one lexical only, one with ``semantic.provider = "builtin"`` (vectors embedded at
import). Reported side by side, as ratios where the machine's load makes absolute
times meaningless: import rate, database bytes per event, ``retrieve`` per query
(project scope) lexical vs hybrid, the vector scan alone, a fresh process's time to
load the provider, and the exact scan over 1M synthetic vectors in memory.
"""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.report import machine, percentiles
from bench.retrieval import _generate, _queries
from memplug.diagnostics import database_bytes
from memplug.memory import Memory
from memplug.retrieve import Retriever
from memplug.store.search import EventScope


def _import(path: Path, data: bytes, config: dict[str, Any]) -> tuple[Memory, float]:
    memory = Memory.open(path, config=config)
    start = time.perf_counter()
    memory.import_jsonl([("-", io.BytesIO(data))])
    return memory, time.perf_counter() - start


def _timed(fn: Any, queries: list[str]) -> dict[str, float]:
    for text in queries[:10]:
        fn(text)
    samples = []
    for text in queries:
        t0 = time.perf_counter()
        fn(text)
        samples.append((time.perf_counter() - t0) * 1000)
    return percentiles(samples)


def load_ms(runs: int = 7) -> dict[str, float]:
    """A fresh interpreter: import numpy + the table + embed one query, minus a bare one."""
    code = (
        "import time; t=time.perf_counter(); from memplug.semantic.builtin import Builtin; "
        "Builtin().embed(['is the puppy ill?']); print((time.perf_counter()-t)*1000)"
    )
    samples = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        samples.append(float(out.stdout.strip()))
    return percentiles(samples)


def scan_1m(dimensions: int = 256) -> float:
    import numpy as np

    rng = np.random.default_rng(0)
    matrix = rng.standard_normal((1_000_000, dimensions)).astype(np.float16)
    query = rng.standard_normal(dimensions).astype(np.float32)
    t0 = time.perf_counter()
    scores = matrix.astype(np.float32) @ query
    np.argpartition(-scores, 50)[:50]
    return (time.perf_counter() - t0) * 1000


def hook_cost(events: int, runs: int) -> dict[str, dict[str, float]]:
    """``UserPromptSubmit`` as Claude Code runs it (a whole process), provider off and on:
    each mode its own database of the same events (``bench.hook_latency``)."""
    from bench import hook_latency

    out = {}
    for mode in ("off", "builtin"):
        os.environ["MEMPLUG_SEMANTIC__PROVIDER"] = mode
        try:
            rows = hook_latency.measure(events, runs)
        finally:
            del os.environ["MEMPLUG_SEMANTIC__PROVIDER"]
        out[mode] = rows["UserPromptSubmit (memory hook claude-code)"]
    return out


def run(shared: Path, events: int, hook_runs: int = 0) -> dict[str, Any]:
    data = _generate(shared, events)
    queries = _queries(200)
    out: dict[str, Any] = {"events": events}
    with tempfile.TemporaryDirectory() as tmp:
        base = {"extraction": {"enabled": False}}
        lexical, lex_s = _import(Path(tmp) / "lex.sqlite", data, base)
        hybrid, hyb_s = _import(
            Path(tmp) / "sem.sqlite", data, {**base, "semantic": {"provider": "builtin"}}
        )
        with lexical, hybrid:
            out["import_events_per_s"] = {
                "lexical": round(events / lex_s),
                "semantic": round(events / hyb_s),
            }
            out["embedded"] = hybrid.semantic.status()["vectors"]
            out["bytes_per_event"] = {
                "lexical": round(database_bytes(lexical.db.path) / events),
                "semantic": round(database_bytes(hybrid.db.path) / events),
            }
            lex = Retriever(lexical.store, lexical.config)
            out["retrieve_ms"] = {
                "lexical": _timed(lambda q: lex.retrieve("s3", q), queries),
                "semantic": _timed(lambda q: hybrid.retriever.retrieve("s3", q), queries),
            }
            snap = hybrid.store.search.snapshot()
            scope = EventScope(include_generated=False)
            out["similar_ms"] = _timed(
                lambda q: hybrid.semantic.similar(q, scope, snap, 50), queries
            )
    out["load_ms"] = load_ms()
    out["scan_1m_ms"] = round(scan_1m(), 1)
    if hook_runs:
        out["hook"] = hook_cost(events, hook_runs)
        out["hook_runs"] = hook_runs
    return out


def render(result: dict[str, Any]) -> str:
    r = result
    imp, size, ret = r["import_events_per_s"], r["bytes_per_event"], r["retrieve_ms"]
    ratio = ret["semantic"]["p95"] / max(ret["lexical"]["p95"], 0.01)
    hook = []
    if "hook" in r:
        off, on = r["hook"]["off"], r["hook"]["builtin"]
        hook = [
            f"| `UserPromptSubmit` whole process, CPU p50 / p95 ms | {off['cpu50']} / "
            f"{off['cpu95']} | {on['cpu50']} / {on['cpu95']} | {on['cpu95'] / off['cpu95']:.2f} "
            f"(+{on['cpu95'] - off['cpu95']:.0f} ms p95) |",
            f"| `UserPromptSubmit` whole process, wall p50 / p95 ms | {off['p50']} / "
            f"{off['p95']} | {on['p50']} / {on['p95']} | {on['p95'] / off['p95']:.2f} |",
        ]
    return "\n".join(
        [
            f"Command: `python -m bench.semantic --events {r['events']}"
            + (f" --hook-runs {r['hook_runs']}`. " if "hook" in r else "`. ")
            + f"Machine: {machine()}; load average {os.getloadavg()[0]:.1f} (shared: read "
            "the ratios, not the milliseconds).",
            "",
            "| at {:,} synthetic events | lexical only | builtin on | ratio |".format(r["events"]),
            "| --- | ---: | ---: | ---: |",
            f"| import, events/s (vectors embedded) | {imp['lexical']:,} | {imp['semantic']:,} "
            f"| {imp['semantic'] / imp['lexical']:.2f} |",
            f"| database bytes per event | {size['lexical']:,} | {size['semantic']:,} "
            f"| {size['semantic'] / size['lexical']:.2f} |",
            f"| `retrieve` p50 / p95 ms (project scope) | {ret['lexical']['p50']} / "
            f"{ret['lexical']['p95']} | {ret['semantic']['p50']} / {ret['semantic']['p95']} "
            f"| {ratio:.2f} (p95) |",
            f"| of which the vector scan, p50 / p95 ms | — | {r['similar_ms']['p50']} / "
            f"{r['similar_ms']['p95']} | |",
            f"| fresh process: import numpy, load the table, embed a query, p50 ms | — | "
            f"{r['load_ms']['p50']} | |",
            f"| exact scan of 1M float16 vectors in memory (matrix product + top 50), ms | — "
            f"| {r['scan_1m_ms']} | |",
            *hook,
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", default="../shared")
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--hook-runs", type=int, default=0, help="also time the prompt hook")
    args = parser.parse_args()
    result = run(Path(args.shared), args.events, args.hook_runs)
    print(result)
    print(render(result))


if __name__ == "__main__":
    main()
