"""The prompt hook's cost as one budget: its instruction count against a reference commit.

    python -m bench.instruction_budget --shared ../shared [--against REF] [--budget 0.03]

``memory hook claude-code`` answers a ``UserPromptSubmit`` at 100,000 events in the
transcript's own project (``bench.hook_latency``'s *same* shape), once from this
checkout and once from ``REF``'s tree (``git archive REF memplug migrations``, with this
checkout's dependencies), each under valgrind's callgrind. Unlike time, the count does
not move with the machine's load, so a 3% budget holds on a shared machine. Exits 1
when this checkout executes more than ``1 + budget`` times the reference's instructions.

``REF`` defaults to the commit named in ``bench/instruction_reference``: the prompt hook
is held within the budget of that commit, and a change that may cost more moves the
reference on purpose, in a commit that says why — so small costs cannot add up unseen.
"""

from __future__ import annotations

import argparse
import compileall
import io
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from bench.hook_latency import PROMPT_ROW, SHAPES, measure

REPO = Path(__file__).resolve().parent.parent
REFERENCE = Path(__file__).with_name("instruction_reference")
EVENTS = 100_000
BUDGET = 0.03


def reference_commit() -> str:
    """The first word of ``bench/instruction_reference`` (the rest says why)."""
    return REFERENCE.read_text(encoding="utf-8").split()[0]


def is_shallow() -> bool:
    done = subprocess.run(
        ["git", "rev-parse", "--is-shallow-repository"], cwd=REPO, capture_output=True, text=True
    )
    return done.stdout.strip() == "true"


def over_budget(ours: float, theirs: float, budget: float) -> bool:
    return ours > theirs * (1 + budget)


def checkout(ref: str, into: Path) -> Path:
    """``ref``'s ``memplug`` package (and the migrations it reads) under ``into``."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", ref, "memplug", "migrations"],
        cwd=REPO,
        capture_output=True,
        check=False,
    )
    if archive.returncode:
        message = archive.stderr.decode(errors="replace").strip().splitlines()
        raise SystemExit(f"error: cannot read {ref} from git: {message[-1] if message else ''}")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into


def counts(shared: Path, baseline: Path) -> tuple[float, float]:
    """Millions of instructions of one prompt hook: ``(this checkout, baseline)``."""
    rows = measure(EVENTS, 1, SHAPES["same"], shared, baseline, counted=True)
    found = {name: figures["instr"] for _, name, figures in rows if "instr" in figures}
    return found[PROMPT_ROW], found[f"{PROMPT_ROW} — baseline"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", default="../shared", help="the shared data folder")
    parser.add_argument(
        "--against", help="the reference commit (default: bench/instruction_reference)"
    )
    parser.add_argument("--budget", type=float, default=BUDGET, help="the share allowed above it")
    args = parser.parse_args()
    shared = Path(args.shared)
    if not (shared / "acceptance" / "claude-code").exists():
        sys.exit(f"error: the budget needs {shared / 'acceptance' / 'claude-code'} (set --shared)")
    ref = args.against or reference_commit()
    known = subprocess.run(
        ["git", "cat-file", "-e", f"{ref}^{{commit}}"], cwd=REPO, capture_output=True
    )
    if known.returncode and is_shallow():
        # Said, not hidden: a shallow clone cannot hold the reference, and nothing is measured.
        print(
            f"instruction budget not checked: {ref} is not in this shallow clone (git fetch --unshallow)"
        )
        return
    # One hash seed for both sides: set and dict orders then cost the same on each.
    os.environ["PYTHONHASHSEED"] = "0"
    with tempfile.TemporaryDirectory() as tmp:
        baseline = checkout(ref, Path(tmp))
        for tree in (REPO, baseline):
            compileall.compile_dir(str(tree / "memplug"), quiet=1)
        ours, theirs = counts(shared, baseline)
    over = over_budget(ours, theirs, args.budget)
    print(
        f"prompt hook at {EVENTS:,} events: {ours:.1f} M instructions, {theirs:.1f} M at"
        f" {ref[:12]} ({ours / theirs - 1:+.1%}; {'over' if over else 'within'} the"
        f" {args.budget:.0%} budget)"
    )
    if over:
        sys.exit(1)


if __name__ == "__main__":
    main()
