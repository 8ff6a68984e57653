"""`make bench`: every benchmark in turn; each rewrites its own section of docs/benchmarks.md.

    python -m bench.run --shared ../shared [--only capture,retrieval]

The data a benchmark needs is checked before anything runs: a missing file stops the
run with one line naming it. The benchmarks write into a staged copy of the report,
which replaces docs/benchmarks.md only when every chosen benchmark completed; after a
failure the tracked page is untouched and the staged copy is left in build/ to read.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from bench.report import REPORT, REPORT_ENV

# In report order. A module that does not exist yet is reported, not silently skipped.
BENCHMARKS = ("capture", "retrieval", "prestep", "curve", "hook_latency", "extraction", "coding")
# What each benchmark reads from the shared folder.
NEEDS: dict[str, tuple[str, ...]] = {
    "retrieval": ("acceptance/gen_events.py", "data/locomo/locomo10.json"),
    "curve": ("data/locomo/locomo10.json", "data/longmemeval/longmemeval_s_dev.json.gz"),
    "extraction": (
        "data/locomo/locomo10.json",
        "data/longmemeval/longmemeval_s_dev.json.gz",
        "data/claude-code",
    ),
    "coding": ("data/claude-code",),
}
STAGED = REPORT.parent.parent / "build" / "benchmarks.partial.md"


def missing(names: Sequence[str], shared: Path) -> list[str]:
    """The shared files the chosen benchmarks need that are not there."""
    wanted = dict.fromkeys(need for name in names for need in NEEDS.get(name, ()))
    return [str(shared / need) for need in wanted if not (shared / need).exists()]


def run_all(
    commands: Sequence[tuple[str, list[str]]], report: Path = REPORT, staged: Path = STAGED
) -> list[str]:
    """Run each ``(name, argv)`` against a staged copy of ``report``; publish it only
    when all completed. Returns the names that did not."""
    staged.parent.mkdir(parents=True, exist_ok=True)
    if report.exists():
        shutil.copyfile(report, staged)
    else:
        staged.unlink(missing_ok=True)
    failed = []
    for name, argv in commands:
        print(f"== {name}", flush=True)
        start = time.perf_counter()
        result = subprocess.run(argv, env={**os.environ, REPORT_ENV: str(staged)})
        print(f"== {name}: exit {result.returncode} in {time.perf_counter() - start:.0f} s")
        if result.returncode:
            failed.append(name)
    if not failed and staged.exists():
        shutil.copyfile(staged, report)
        staged.unlink()
    return failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shared", default="../shared", help="the shared folder (data sets)")
    parser.add_argument("--only", default="", help="comma-separated benchmark names")
    args = parser.parse_args()
    chosen = [b for b in BENCHMARKS if not args.only or b in args.only.split(",")]
    absent = missing(chosen, Path(args.shared))
    if absent:
        print(
            f"error: make bench needs {absent[0]}"
            + (f" (and {len(absent) - 1} more)" if len(absent) > 1 else "")
            + "; nothing was run (set SHARED=path/to/shared)",
            file=sys.stderr,
        )
        sys.exit(2)
    unknown = [b for b in chosen if importlib.util.find_spec(f"bench.{b}") is None]
    commands = [
        (b, [sys.executable, "-m", f"bench.{b}", "--shared", args.shared])
        for b in chosen
        if b not in unknown
    ]
    failed = unknown + run_all(commands)
    if failed:
        sys.exit(
            f"benchmarks that did not complete: {', '.join(failed)}; docs/benchmarks.md is "
            f"unchanged, the partial report is {STAGED}"
        )


if __name__ == "__main__":
    main()
