"""`make fuzz`: coverage-guided fuzzing (atheris) of the JSONL parser and the query builder.

    python tests/fuzz/run.py --seconds 60            # every target, 60 s each
    python tests/fuzz/run.py --target query -s 600   # one target

Each target runs in its own process (libFuzzer ends the process when it stops), from
the seed inputs in its module copied into a scratch corpus, so the repository is not
written to. A finding prints the input's path and the failing assertion, and the
command exits non-zero. Not part of `make test`: it needs atheris and wall time.
"""

from __future__ import annotations

import argparse
import importlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGETS = {"jsonl": "fuzz_jsonl", "query": "fuzz_query"}


def child(target: str, seconds: int, corpus: Path, artifacts: Path) -> None:
    import atheris

    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(HERE.parent.parent))
    with atheris.instrument_imports(include=["memplug"]):
        module = importlib.import_module(TARGETS[target])
    atheris.Setup(
        [
            sys.argv[0],
            f"-max_total_time={seconds}",
            "-timeout=10",
            "-rss_limit_mb=4096",
            "-max_len=65536",
            f"-artifact_prefix={artifacts}/",
            "-print_final_stats=1",
            str(corpus),
        ],
        module.test_one_input,
    )
    atheris.Fuzz()


def run_target(target: str, seconds: int, keep: Path) -> int:
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(HERE.parent.parent))
    seeds = importlib.import_module(TARGETS[target]).SEEDS
    work = Path(tempfile.mkdtemp(prefix=f"memplug-fuzz-{target}-"))
    corpus, artifacts = work / "corpus", keep / target
    corpus.mkdir()
    artifacts.mkdir(parents=True, exist_ok=True)
    for i, seed in enumerate(seeds):
        (corpus / f"seed-{i}").write_bytes(seed)
    print(f"== {target}: {seconds}s from {len(seeds)} seeds", flush=True)
    done = subprocess.run(
        [sys.executable, __file__, "--child", target, "--seconds", str(seconds),
         "--corpus", str(corpus), "--artifacts", str(artifacts)],
        check=False,
    )  # fmt: skip
    found = sorted(p for p in artifacts.iterdir() if p.is_file())
    units = len(list(corpus.iterdir()))
    shutil.rmtree(work, ignore_errors=True)
    print(f"== {target}: exit {done.returncode}, corpus grew to {units} inputs", flush=True)
    for path in found:
        print(f"   finding: {path}")
    return done.returncode or (1 if found else 0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", "-s", type=int, default=60, help="Per target.")
    parser.add_argument("--target", choices=sorted(TARGETS), action="append")
    parser.add_argument(
        "--findings",
        type=Path,
        default=Path(tempfile.gettempdir()) / "memplug-fuzz-findings",
        help="Where crashing inputs are kept (outside the repository by default).",
    )
    parser.add_argument("--child", choices=sorted(TARGETS), help=argparse.SUPPRESS)
    parser.add_argument("--corpus", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--artifacts", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.seconds, args.corpus, args.artifacts)
        return 0
    failed = 0
    for target in args.target or sorted(TARGETS):
        failed |= run_target(target, args.seconds, args.findings.resolve())
    return failed


if __name__ == "__main__":
    sys.exit(main())
