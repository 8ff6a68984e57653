"""Processes for the concurrency test, also runnable by hand for the figures.

    python tests/reliability_workers.py run --db /tmp/c/m.sqlite --writers 4 --events 2000

starts four capturing processes (the Python plugin's ``on_event``, one transaction per
event, as a live host does), one process that assembles and searches in a loop, and one
that runs ``memory status`` in a loop, all on one database; then prints the figures
that ``docs/reliability.md`` quotes. The test imports :func:`run` with smaller numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
WAITED_MS = 50.0  # a capture slower than this spent most of its time waiting for the lock
CUES = ("remember: the port is {n}", "decision: ship build {n}", "we must never skip test {n}")


def session_of(writer: int) -> str:
    return f"w{writer}"


def event(writer: int, seq: int) -> dict[str, Any]:
    text = f"writer {writer} event {seq} deploy cache tenant migration"
    if seq % 10 == 0:
        text = CUES[seq % 3].format(n=seq)
    return {
        "session_id": session_of(writer),
        "seq": seq,
        "type": "user/message" if seq % 2 else "assistant/message",
        "role": "user" if seq % 2 else "assistant",
        "time": f"2026-02-01T10:{seq // 60 % 60:02d}:{seq % 60:02d}Z",
        "text": text,
        "cwd": "/home/ana/shop",
    }


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class BusyCounter:
    """SQLite's own busy-timeout schedule (sqliteDefaultBusyCallback), counted: how
    often a write found the lock taken, and how long it slept waiting for it."""

    DELAYS_MS = (1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100)
    TOTALS_MS = (0, 1, 3, 8, 18, 33, 53, 78, 103, 128, 178, 228)

    def __init__(self, timeout_ms: int) -> None:
        self.timeout_ms = timeout_ms
        self.waits = 0
        self.slept_ms = 0.0

    def __call__(self, count: int) -> bool:
        if count == 0:
            self.waits += 1
        if count < len(self.DELAYS_MS):
            delay, prior = self.DELAYS_MS[count], self.TOTALS_MS[count]
        else:
            delay = self.DELAYS_MS[-1]
            prior = self.TOTALS_MS[-1] + delay * (count - len(self.DELAYS_MS) + 1)
        delay = min(delay, self.timeout_ms - prior)
        if delay <= 0:
            return False
        time.sleep(delay / 1000)
        self.slept_ms += delay
        return True


def capture(db: str, writer: int, count: int, out: str, start_at: float) -> None:
    from memplug.plugin import open_plugin
    from memplug.store.db import BUSY_TIMEOUT_MS

    latencies, skipped = [], []
    busy = BusyCounter(BUSY_TIMEOUT_MS)
    with open_plugin(db) as plugin:
        plugin.memory.db.conn.set_busy_handler(busy)
        while time.time() < start_at:
            time.sleep(0.005)
        began = time.perf_counter()
        for seq in range(1, count + 1):
            t0 = time.perf_counter()
            if not plugin.on_event(event(writer, seq)):
                skipped.append(seq)
            latencies.append((time.perf_counter() - t0) * 1000)
        elapsed = time.perf_counter() - began
    Path(out).write_text(
        json.dumps(
            {
                "latencies_ms": latencies,
                "skipped": skipped,
                "seconds": elapsed,
                "lock_waits": busy.waits,
                "lock_slept_ms": busy.slept_ms,
            }
        )
    )


def assemble(db: str, writers: int, stop: str, out: str) -> None:
    """pre_step and search against the sessions being written, until told to stop."""
    from memplug.base.errors import NotFound
    from memplug.plugin import open_plugin
    from memplug.recall.retrieve import Retriever

    latencies: list[float] = []
    injected = searches = 0
    # Keep every log row: the test checks one row (or a recorded skip) per pre_step,
    # and the default retention (1,000) would prune a fast run's early rows.
    with open_plugin(db, {"diagnostics": {"assemblyLogRetention": 1_000_000}}) as plugin:
        retriever = Retriever(plugin.memory.store, plugin.memory.config)
        n = 0
        while not os.path.exists(stop):
            n += 1
            session = session_of(n % writers)
            t0 = time.perf_counter()
            result = plugin.pre_step(
                {"session_id": session, "query": f"which port did we pick {n}", "turn": n}
            )
            latencies.append((time.perf_counter() - t0) * 1000)
            injected += result is not None
            try:
                retriever.search("deploy port", session=session)
                searches += 1
            except NotFound:  # the race has not reached this session yet
                pass
    Path(out).write_text(
        json.dumps({"latencies_ms": latencies, "injected": injected, "searches": searches})
    )


def cli_loop(db: str, stop: str, out: str) -> None:
    """`memory status` and `memory search`, as a person would run them."""
    runs: list[dict[str, Any]] = []
    commands = [["status", "--json"], ["search", "--json", "--", "deploy port"]]
    while not os.path.exists(stop):
        for args in commands:
            t0 = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "memplug.cli", "--db", db, *args],
                capture_output=True,
                text=True,
                timeout=120,
            )
            runs.append(
                {
                    "command": args[0],
                    "code": done.returncode,
                    "stderr": done.stderr.strip()[-300:],
                    "ms": (time.perf_counter() - t0) * 1000,
                }
            )
    Path(out).write_text(json.dumps(runs))


@dataclass
class Figures:
    writers: int
    events: int
    seconds: float
    skipped: int
    lock_waits: int
    lock_slept_ms: float
    latencies_ms: list[float]
    assemble_ms: list[float]
    injected: int
    searches: int
    cli_runs: list[dict[str, Any]]
    worker_stderr: list[str]

    def summary(self) -> dict[str, Any]:
        lat = self.latencies_ms
        status = [r["ms"] for r in self.cli_runs if r["command"] == "status"]
        return {
            "writers": self.writers,
            "events": self.events,
            "events_per_second": round(self.events / self.seconds, 1) if self.seconds else 0,
            "capture_ms": {
                "p50": round(statistics.median(lat), 2) if lat else 0,
                "p95": round(percentile(lat, 0.95), 2),
                "p99": round(percentile(lat, 0.99), 2),
                "max": round(max(lat, default=0), 2),
            },
            "lock_waits": self.lock_waits,
            "lock_slept_ms": round(self.lock_slept_ms, 1),
            "slower_than_50ms": sum(1 for v in lat if v > WAITED_MS),
            "skipped": self.skipped,
            "pre_step_calls": len(self.assemble_ms),
            "pre_step_ms": {
                "p50": round(statistics.median(self.assemble_ms), 2) if self.assemble_ms else 0,
                "p95": round(percentile(self.assemble_ms, 0.95), 2),
            },
            "searches": self.searches,
            "status_runs": len(status),
            "status_ms_p95": round(percentile(status, 0.95), 1),
            "cli_failures": [r for r in self.cli_runs if r["code"] != 0],
        }


def _spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def run(
    db: Path, work: Path, *, writers: int = 4, events: int = 500, readers: bool = True
) -> Figures:
    """Run the whole scenario; return what every process saw."""
    from memplug.store.db import Database

    work.mkdir(parents=True, exist_ok=True)
    Database.open(db).close()  # created and migrated once, before the race starts
    stop = work / "stop"
    start_at = time.time() + 1.5  # every writer is open and waiting when the race starts
    writers_procs = [
        _spawn("capture", str(db), str(w), str(events), str(work / f"w{w}.json"), str(start_at))
        for w in range(writers)
    ]
    others = [
        _spawn("assemble", str(db), str(writers), str(stop), str(work / "assemble.json")),
        _spawn("cli", str(db), str(stop), str(work / "cli.json")),
    ]
    if not readers:  # writers alone: the baseline the figures compare against
        stop.touch()
    stderr = []
    for proc in writers_procs:
        _, err = proc.communicate(timeout=600)
        stderr.append(err)
    stop.touch()
    for proc in others:
        _, err = proc.communicate(timeout=600)
        stderr.append(err)
    missing = [
        name
        for name in [*(f"w{w}.json" for w in range(writers)), "assemble.json", "cli.json"]
        if not (work / name).exists()
    ]
    if missing:
        raise RuntimeError(f"workers died without results {missing}:\n" + "\n".join(stderr))
    results = [json.loads((work / f"w{w}.json").read_text()) for w in range(writers)]
    assembled = json.loads((work / "assemble.json").read_text())
    return Figures(
        writers=writers,
        events=writers * events,
        seconds=max(r["seconds"] for r in results),
        skipped=sum(len(r["skipped"]) for r in results),
        lock_waits=sum(r["lock_waits"] for r in results),
        lock_slept_ms=sum(r["lock_slept_ms"] for r in results),
        latencies_ms=[v for r in results for v in r["latencies_ms"]],
        assemble_ms=assembled["latencies_ms"],
        injected=assembled["injected"],
        searches=assembled["searches"],
        cli_runs=json.loads((work / "cli.json").read_text()),
        worker_stderr=[e for e in stderr if e.strip()],
    )


def main(argv: list[str]) -> None:
    mode = argv[0]
    if mode == "capture":
        capture(argv[1], int(argv[2]), int(argv[3]), argv[4], float(argv[5]))
    elif mode == "assemble":
        assemble(argv[1], int(argv[2]), argv[3], argv[4])
    elif mode == "cli":
        cli_loop(argv[1], argv[2], argv[3])
    elif mode == "run":
        parser = argparse.ArgumentParser(prog="reliability_workers.py run")
        parser.add_argument("--db", required=True, type=Path)
        parser.add_argument("--writers", type=int, default=4)
        parser.add_argument("--events", type=int, default=2000)
        parser.add_argument("--no-readers", action="store_true", help="Writers alone.")
        args = parser.parse_args(argv[1:])
        figures = run(
            args.db,
            args.db.parent / "work",
            writers=args.writers,
            events=args.events,
            readers=not args.no_readers,
        )
        print(json.dumps(figures.summary(), indent=2))
        for err in figures.worker_stderr:
            print(err, file=sys.stderr)
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    main(sys.argv[1:])
