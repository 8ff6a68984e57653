"""Before/after runs of ``bench.prestep``'s steps on one database, for a change that
must not alter what is injected: CPU and wall per step, the evidence section's own-words
check's CPU, and the injected messages and assembly-log rows dumped for a byte comparison.

    python -m bench.prestep_diff build --size 100000 --root /tmp/pd
    PYTHONPATH=<checkout> python -m bench.prestep_diff run --size 100000 --root /tmp/pd --tag T

Each run works on a fresh copy of the built database (a step writes the assembly log)
and writes ``texts-T-SIZE.json`` and ``logs-T-SIZE.json`` (every ``assembly_logs`` row
but its clock columns, ``created_at`` and ``duration_ms``) under the root. Run the
checkouts alternately and ``cmp`` their dumps; the machine's load moves every figure,
so compare ratios.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

from bench import prestep
from memplug.base.models import Message
from memplug.memory import Memory
from memplug.plugin import Plugin
from memplug.recall.assemble.sections.evidence import EvidenceSections


def run(root: Path, size: int, tag: str, steps: int) -> dict[str, Any]:
    work = root / f"run-{tag}-{size}"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(root / f"prestep-{size}", work)
    spent = [0.0]
    checked = EvidenceSections._own_words

    def timed(self: EvidenceSections, *args: Any) -> str:
        start = time.process_time()
        try:
            return checked(self, *args)
        finally:
            spent[0] += time.process_time() - start

    EvidenceSections._own_words = timed  # type: ignore[method-assign]
    plugin = Plugin(Memory.open(work / "memory.sqlite"))
    try:
        sessions = plugin.memory.store.events.session_ids()
        contexts = {}
        for session in sessions:
            after = prestep._last_seq(plugin, session) - 20
            rows = plugin.memory.store.events.session_events(session, after_seq=after)
            contexts[session] = [Message(role=r.role or "user", text=r.text) for r in rows]
        cpu, wall, texts = [], [], []
        for i, query in enumerate(prestep.queries(steps)):
            session = sessions[i % len(sessions)]
            start, clock = time.process_time(), time.perf_counter()
            injection = plugin.pre_step(
                {"session_id": session, "query": query, "messages": contexts[session]}
            )
            cpu.append((time.process_time() - start) * 1000)
            wall.append((time.perf_counter() - clock) * 1000)
            texts.append(injection.text if injection else None)
    finally:
        plugin.close()
        EvidenceSections._own_words = checked  # type: ignore[method-assign]
    (root / f"texts-{tag}-{size}.json").write_text(json.dumps(texts, ensure_ascii=False))
    (root / f"logs-{tag}-{size}.json").write_text(_log_rows(work / "memory.sqlite"))
    return {
        "tag": tag,
        "size": size,
        **_percentiles("cpu", cpu),
        **_percentiles("wall", wall),
        "own_words_cpu_per_step": round(spent[0] * 1000 / steps, 2),
    }


def _percentiles(name: str, values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        f"{name}_mean": round(sum(ordered) / len(ordered), 2),
        f"{name}_p50": round(ordered[len(ordered) // 2], 2),
        f"{name}_p95": round(ordered[int(len(ordered) * 0.95)], 2),
    }


def _log_rows(path: Path) -> str:
    """The assembly log as JSON, minus the two columns that read the clock."""
    with sqlite3.connect(path) as conn:
        cursor = conn.execute("SELECT * FROM assembly_logs ORDER BY id")
        names = [d[0] for d in cursor.description]
        rows = [
            {
                k: v
                for k, v in zip(names, row, strict=True)
                if k not in ("created_at", "duration_ms")
            }
            for row in cursor
        ]
    return json.dumps(rows, ensure_ascii=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("action", choices=["build", "run"])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--tag", default="run")
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    args.root.mkdir(parents=True, exist_ok=True)
    if args.action == "build":
        path, seconds, _ = prestep.build(args.root, args.size)
        print(f"built {path} in {seconds:.0f} s")
    else:
        print(json.dumps(run(args.root, args.size, args.tag, args.steps)))


if __name__ == "__main__":
    main()
