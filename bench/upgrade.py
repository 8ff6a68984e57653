"""What an upgrade costs: re-deriving state that older rules made, at a given size.

    python -m bench.upgrade --events 22000 --sessions 200
    python -m bench.upgrade --events 1000000 --sessions 1000

Builds a database of synthetic events (bench.report.synthetic_events: the acceptance
mix of user, assistant and tool events) with extraction on, then times, on the same
file: ``memory rebuild`` (one transaction), the upgrade pass a command runs when the
recorded versions differ (a session per transaction, resumable), and one bounded step
of the size a hook or ``on_event`` takes. The versions are made to differ by raising
``memplug.derive.rederive.EXTRACTOR_VERSION`` in this process, as a new memplug would.
"""

from __future__ import annotations

import argparse
import io
import tempfile
import time
from pathlib import Path

import memplug.derive.extract
import memplug.derive.rederive
import memplug.derive.upgrades
import memplug.memory
from bench.report import machine, synthetic_jsonl
from memplug.memory import UPGRADE_STEP_MS, Memory


def _seconds(started: float) -> float:
    return time.perf_counter() - started


def _cpu(started: float) -> float:
    return time.process_time() - started


def run(events: int, sessions: int) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.sqlite"
        with Memory.open(path) as memory:
            started = time.perf_counter()
            memory.import_jsonl([("-", io.BytesIO(synthetic_jsonl(events, sessions)))])
            imported = _seconds(started)
            counts = memory.store.counts()
            started, cpu = time.perf_counter(), time.process_time()
            memory.rebuild()
            rebuilt, rebuilt_cpu = _seconds(started), _cpu(cpu)
        memplug.derive.rederive.EXTRACTOR_VERSION += 1
        memplug.derive.upgrades.source_digest = lambda: "edited"  # as a new memplug's files would
        started, cpu = time.perf_counter(), time.process_time()
        with Memory.open(path, upgrade=True) as memory:
            upgraded, upgraded_cpu = _seconds(started), _cpu(cpu)
            assert not memory.derivation_state()["stale"]
        memplug.derive.rederive.EXTRACTOR_VERSION += 1
        memplug.derive.upgrades.source_digest = lambda: "edited again"
        with Memory.open(path) as memory:
            started = time.perf_counter()
            step = memory.upgrade_derived(budget_ms=UPGRADE_STEP_MS)
            stepped = _seconds(started)
    return [
        f"{events:,} events in {sessions:,} sessions ({counts['memory_items']:,} items, "
        f"{counts['timeline_entries']:,} timeline entries, {counts['work_records']:,} work "
        f"records); import with extraction {imported:.1f} s",
        f"memory rebuild (one transaction): {rebuilt:.2f} s wall, {rebuilt_cpu:.2f} s CPU "
        f"({events / rebuilt:,.0f} events/s wall)",
        f"upgrade pass (a command; one transaction per session): {upgraded:.2f} s wall, "
        f"{upgraded_cpu:.2f} s CPU ({events / upgraded:,.0f} events/s wall)",
        f"one bounded step ({UPGRADE_STEP_MS:.0f} ms budget, a hook or on_event): "
        f"{stepped * 1000:.0f} ms, {len(step.sessions)} session(s) of "
        f"{events // sessions:,} events, state {step.state}",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=22_000)
    parser.add_argument("--sessions", type=int, default=200)
    args = parser.parse_args()
    print(machine())
    for line in run(args.events, args.sessions):
        print(line, flush=True)


if __name__ == "__main__":
    main()
