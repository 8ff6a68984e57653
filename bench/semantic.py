"""What the semantic provider costs: import rate, file bytes, query time, load time.

    python -m bench.semantic --shared ../shared [--events 100000] [--hook-runs N]
    python -m bench.semantic --shared ../shared --coding

Two databases get the same synthetic events (``../shared/acceptance/gen_events.py``):
one lexical only, one with ``semantic.provider = "builtin"`` (vectors embedded at
import). Reported side by side, as ratios where the machine's load makes absolute
times meaningless: import rate, database bytes per event, ``retrieve`` per query
(project scope) lexical vs hybrid, the vector scan alone, a fresh process's time to
load the provider, and — at 100k and 1M vectors — an exact scan against reading the
nearest cells (``semantic.scanLimit``), on a table of random vectors of the stored format.
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
from memplug.base.config import SemanticConfig
from memplug.memory import Memory
from memplug.recall.retrieve import Retriever
from memplug.reports.diagnostics import database_bytes
from memplug.semantic.builtin import Builtin
from memplug.semantic.service import best, cell_groups
from memplug.semantic.vecmath import Cells, quantize
from memplug.store.records import EventScope, VectorScan


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


def _once(fn: Any, query: Any) -> float:
    t0 = time.perf_counter()
    fn(query)
    return round((time.perf_counter() - t0) * 1000, 1)


def load_ms(runs: int = 7) -> dict[str, float]:
    """A fresh interpreter: load the provider (its table memory-mapped) and embed one query."""
    code = (
        "import time; t=time.perf_counter(); from memplug.semantic.builtin import Builtin; "
        "Builtin().embed(['is the puppy ill?']); print((time.perf_counter()-t)*1000)"
    )
    samples = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        samples.append(float(out.stdout.strip()))
    return percentiles(samples)


def _vector_table(path: Path, count: int, cells: int) -> Any:
    """``count`` random int8 vectors in a table shaped like ``event_vectors`` (with its
    cell index), spread evenly over ``cells`` cells — as a real scope's cost, not its
    recall (``bench.semantic_cells`` measures that)."""
    import random

    import apsw

    rng = random.Random(0)
    conn = apsw.Connection(str(path))
    conn.execute(
        "CREATE TABLE v (event_id INTEGER PRIMARY KEY, model_id INTEGER, session_id TEXT, "
        "seq INTEGER, vector BLOB, scale REAL, cell INTEGER);"
        "CREATE INDEX v_cell ON v (model_id, cell, session_id, seq)"
    )
    with conn:
        conn.executemany(
            "INSERT INTO v VALUES (?, 1, ?, ?, ?, 0.008, ?)",
            ((i, f"s{i % 50}", i, rng.randbytes(256), i % cells) for i in range(count)),
        )
    return conn


def _score(rows: list[Any], query: bytes) -> None:
    """What ``Semantic.similar`` does with the vectors it read: the best 20."""
    found = VectorScan(
        ids=[r[0] for r in rows],
        keys=[(r[3], r[0]) for r in rows],
        blobs=[r[1] for r in rows],
        scales=[r[2] for r in rows],
    )
    best(query, 0.008, found, 256, 20, SemanticConfig())


def _exact(conn: Any, count: int, query: bytes) -> None:
    # In chunks, as a real scan would have to: a million vectors at once would be a
    # gigabyte as the int32 the dot products are taken in.
    for start in range(0, count, 20_000):
        rows = conn.execute(
            "SELECT event_id, vector, scale, session_id FROM v "
            "WHERE event_id >= ? AND event_id < ?",
            (start, start + 20_000),
        ).fetchall()
        _score(rows, query)


def _probed(conn: Any, cells: Cells, reads: int, query: bytes) -> None:
    """What ``Semantic._read`` does: the nearest cells in doubling groups."""
    rows: list[Any] = []
    for group in cell_groups(cells.ranked(query)):
        rows += conn.execute(
            "SELECT event_id, vector, scale, session_id FROM v WHERE model_id = 1 AND cell IN "
            f"({', '.join('?' for _ in group)}) ORDER BY cell, session_id, seq LIMIT ?",
            (*group, reads - len(rows)),
        ).fetchall()
        if len(rows) >= reads:
            break
    _score(rows, query)


def scan_scaling(sizes: tuple[int, ...], reads: int = 3_000) -> dict[int, dict[str, float]]:
    """Per query, ms: an exact scan of every vector (read + score) against reading the
    nearest cells until ``reads`` vectors (``semantic.scanLimit``), then scoring them."""
    model = Builtin()
    queries = [quantize(v)[0] for v in model.embed(_queries(30))]
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for count in sizes:
            conn = _vector_table(Path(tmp) / f"v{count}.sqlite", count, len(model.cells))
            out[count] = {
                "exact_ms": _once(lambda q, c=conn, n=count: _exact(c, n, q), queries[0]),
                "cells_ms": _timed(lambda q, c=conn: _probed(c, model.cells, reads, q), queries)[
                    "p50"
                ],
            }
            conn.close()
    return out


def interleaved(db: Path, projects: Path, runs: int) -> dict[str, dict[str, float]]:
    """``UserPromptSubmit`` as Claude Code runs it (a whole process) on one database,
    provider off and on in turn, so a change in the machine's load hits both alike."""
    from bench import hook_latency

    prompt = hook_latency._payload(projects, "UserPromptSubmit", prompt=hook_latency.PROMPT)
    samples: dict[str, tuple[list[float], list[float]]] = {"off": ([], []), "builtin": ([], [])}
    for _ in range(runs):
        for mode, (wall, cpu) in samples.items():
            env = {**os.environ, "MEMPLUG_DB": str(db), "MEMPLUG_SEMANTIC__PROVIDER": mode}
            one = hook_latency._timed([hook_latency.MEMORY, "hook", "claude-code"], prompt, 1, env)
            wall += one[0]
            cpu += one[1]
    return {mode: hook_latency._stats(s) for mode, s in samples.items()}


def hook_cost(events: int, runs: int) -> dict[str, dict[str, float]]:
    """The prompt hook with the provider off and on, on one database of ``events``
    synthetic events (``bench.hook_latency``) whose vectors were embedded at import."""
    from bench import hook_latency

    os.environ["MEMPLUG_SEMANTIC__PROVIDER"] = "builtin"
    try:
        with tempfile.TemporaryDirectory() as tmp:
            db, projects = hook_latency._populate(Path(tmp), events)
            return interleaved(db, projects, runs)
    finally:
        del os.environ["MEMPLUG_SEMANTIC__PROVIDER"]


def coding(shared: Path) -> dict[str, dict[str, Any]]:
    """``bench.coding``'s questions over one capture of the real transcripts, answered
    with the provider off and on (vectors embedded first): share answered, per question."""
    from bench import coding as bench_coding

    questions = bench_coding.load_questions(bench_coding.QUESTIONS)
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "m.sqlite"
        with Memory.open(db) as memory:
            sessions = set(bench_coding.capture(memory, shared / "data" / "claude-code"))
        asked = [q for q in questions if q.session in sessions]
        gold = bench_coding.Gold(db)
        for name, config in (("lexical", {}), ("builtin", {"semantic": {"provider": "builtin"}})):
            copy = Path(tmp) / f"{name}.sqlite"
            copy.write_bytes(db.read_bytes())
            if config:
                with Memory.open(copy, config=config) as memory:
                    memory.embed_vectors()
            figures = bench_coding.run_memplug(copy, asked, gold, name, config)
            out[name] = {
                "share": round(figures.share, 3),
                "answered": sorted(q for q, o in figures.outcomes.items() if o.answered),
                "median_tokens": figures.median_tokens,
            }
    return out


def run(
    shared: Path, events: int, hook_runs: int = 0, scaling: tuple[int, ...] = (100_000, 1_000_000)
) -> dict[str, Any]:
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
    out["scaling"] = scan_scaling(scaling)
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
            f"| fresh process: load the provider, embed a query, p50 ms | — | "
            f"{r['load_ms']['p50']} | |",
            *(
                f"| {n:,} vectors in one scope: exact scan / nearest cells (3,000 read), "
                f"p50 ms | — | {v['exact_ms']} / {v['cells_ms']} | |"
                for n, v in r["scaling"].items()
            ),
            *hook,
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", default="../shared")
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--hook-runs", type=int, default=0, help="also time the prompt hook")
    parser.add_argument("--scaling", default="100000,1000000", help="vector counts to scan")
    parser.add_argument(
        "--coding", action="store_true", help="only the coding-session bench, provider off and on"
    )
    args = parser.parse_args()
    if args.coding:
        print(coding(Path(args.shared)))
        return
    scaling = tuple(int(n) for n in args.scaling.split(",") if n)
    result = run(Path(args.shared), args.events, args.hook_runs, scaling)
    print(result)
    print(render(result))


if __name__ == "__main__":
    main()
