"""Capture throughput: the batched bulk path beside the per-row-trigger path, and size.

python -m bench.capture [--events 100000]
"""

from __future__ import annotations

import argparse
import io
import os
import tempfile
import time
from pathlib import Path

from bench.report import machine, percentiles, synthetic_events, synthetic_jsonl, write_section
from memplug.base.models import parse_event
from memplug.memory import Memory
from memplug.reports.diagnostics import database_bytes


def _fresh(root: Path, name: str) -> Memory:
    # Extraction is measured elsewhere; here only capture and the FTS index count.
    return Memory.open(root / name / "m.sqlite", config={"extraction": {"enabled": False}})


def run(count: int) -> str:
    data = synthetic_jsonl(count)
    events = [parse_event(e) for e in synthetic_events(count)]
    raw_text_bytes = sum(len((e.text or "").encode()) for e in events)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        bulk_rates = []
        for attempt in range(2):
            with _fresh(root, f"bulk{attempt}") as memory:
                start = time.perf_counter()
                summary = memory.import_jsonl([("-", io.BytesIO(data))])
                bulk_rates.append(count / (time.perf_counter() - start))
                assert summary.new == count
                size = database_bytes(memory.db.path)
        # From a file, as `memory import FILE` reads it (a large one's rows are made in a
        # second process while this one writes).
        source = root / "events.jsonl"
        source.write_bytes(data)
        with Memory.open(root / "defaults" / "m.sqlite") as memory, source.open("rb") as stream:
            start = time.perf_counter()
            memory.import_jsonl([(source.name, stream)])
            default_rate = count / (time.perf_counter() - start)
        paths = {}
        for bulk_path in (True, False):
            with _fresh(root, f"capture-{bulk_path}") as memory:
                start = time.perf_counter()
                for offset in range(0, count, 5000):
                    memory.ingest(events[offset : offset + 5000], bulk=bulk_path)
                paths[bulk_path] = count / (time.perf_counter() - start)
        with _fresh(root, "bulk0") as memory:
            live_ms = []
            extra = [
                parse_event({**e, "session_id": "live", "seq": i})
                for i, e in enumerate(synthetic_events(1000, seed=7))
            ]
            for event in extra:
                start = time.perf_counter()
                memory.ingest([event])
                live_ms.append((time.perf_counter() - start) * 1000)
    bulk = max(bulk_rates)
    batched, trigger_rate = paths[True], paths[False]
    live = percentiles(live_ms)
    return f"""Command: `python -m bench.capture --events {count}` (part of `make bench`).
Machine: {machine()}.

| measure | figure | target |
| --- | --- | --- |
| bulk import (`Memory.import_jsonl`, JSON parse + validation + FTS built; extraction off), best of 2 | {bulk:,.0f} events/s | ≥ 10,000 |
| the same with the default config, from a file (extraction on, as `memory import FILE` runs it) | {default_rate:,.0f} events/s | ≥ 10,000 |
| capture only, batched FTS path (`ingest(bulk=True)`, parsed events, 5k a batch) | {batched:,.0f} events/s | |
| capture only, per-row-trigger path (`ingest(bulk=False)`, same batches) | {trigger_rate:,.0f} events/s | baseline |
| batched ÷ per-row-trigger | {batched / trigger_rate:.2f}× | ≥ 2× |
| one live event (`ingest([event])`, own transaction), 1,000 into {count:,} | p50 {live["p50"]} ms, p95 {live["p95"]} ms, p99 {live["p99"]} ms | p95 ≤ 5 ms |
| database bytes ÷ raw text bytes | {size / raw_text_bytes:.2f} ({size:,} / {raw_text_bytes:,}) | report |
| database bytes ÷ JSONL bytes | {size / len(data):.2f} | report |
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--shared", default=os.environ.get("SHARED", "../shared"))
    args = parser.parse_args()
    body = run(args.events)
    print(body)
    write_section("Capture", body)


if __name__ == "__main__":
    main()
