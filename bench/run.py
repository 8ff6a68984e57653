"""`make bench`: every benchmark in turn; each rewrites its own section of docs/benchmarks.md.

    python -m bench.run --shared ../shared [--only capture,retrieval]
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import time

# In report order. A module that does not exist yet is reported, not silently skipped.
BENCHMARKS = ("capture", "retrieval", "prestep", "hook_latency", "extraction")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shared", default="../shared", help="the shared folder (data sets)")
    parser.add_argument("--only", default="", help="comma-separated benchmark names")
    args = parser.parse_args()
    chosen = [b for b in BENCHMARKS if not args.only or b in args.only.split(",")]
    failed = []
    for name in chosen:
        module = f"bench.{name}"
        if importlib.util.find_spec(module) is None:
            print(f"== {name}: no module {module}", flush=True)
            failed.append(name)
            continue
        print(f"== {name}", flush=True)
        start = time.perf_counter()
        result = subprocess.run([sys.executable, "-m", module, "--shared", args.shared])
        print(f"== {name}: exit {result.returncode} in {time.perf_counter() - start:.0f} s")
        if result.returncode:
            failed.append(name)
    if failed:
        sys.exit(f"benchmarks that did not complete: {', '.join(failed)}")


if __name__ == "__main__":
    main()
