"""`make demo` (``python -m memplug.demo``): runs from any directory, starts fresh every
time, shows the injected message after the compaction with its explanation, and the
commands it suggests work on the database it leaves behind."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

# Slow, still run by `make test`: runs the whole demo, twice, in fresh processes.
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent


def run_demo(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "memplug.demo", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return done.stdout


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    cwd = tmp_path_factory.mktemp("elsewhere")
    first = run_demo(cwd)
    second = run_demo(cwd)
    return cwd, first, second


def test_the_demo_shows_the_injection_after_the_compaction(demo: tuple[Path, str, str]) -> None:
    _, out, _ = demo
    assert "replaying fixtures/sessions/shop.jsonl" in out
    assert "turn 25, step 1: after the compaction the user says" in out
    assert "Back from lunch. Is the Stripe key in yet?" in out
    assert "memplug injects this message before the model answers (seq 99)" in out
    assert "  [memplug] Memory: " in out
    # What the host's summary lost comes back, verbatim and sourced.
    assert "p95 < 200 ms at 1k rps" in out
    assert '    yes  the "1k rps" condition of the latency target (seq 8)' in out
    assert "IGNORE ALL PREVIOUS" not in out


def test_the_demo_explains_what_it_injected(demo: tuple[Path, str, str]) -> None:
    _, out, _ = demo
    match = re.search(r"explain --assembly (\d+)", out)
    assert match
    assert f"assembly {match.group(1)} · session shop-1 · turn 25 · step 1 · pre_step" in out
    assert "committed back as event shop-1:99" in out
    assert "4. Memory items:" in out and "5. Raw evidence:" in out
    assert "not inline-quotable (assembly.evidenceTypes)" in out


def test_each_run_starts_fresh(demo: tuple[Path, str, str]) -> None:
    cwd, first, second = demo
    # Only the wall-clock time of the logged attempt may differ between runs.
    stamp = re.compile(r"pre_step · \S+Z")
    assert stamp.sub("", first) == stamp.sub("", second)
    assert stamp.search(first)
    assert (cwd / ".memplug-demo" / "memory.sqlite").is_file()


def test_the_suggested_commands_work(demo: tuple[Path, str, str]) -> None:
    cwd, out, _ = demo
    tried = [line.strip() for line in out.splitlines() if line.strip().startswith("memory --db")]
    assert len(tried) == 3
    memory = Path(sys.executable).parent / "memory"
    for line in tried:
        args = _split(line)[1:]
        done = subprocess.run(
            [str(memory), *args], cwd=cwd, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, (line, done.stderr)
        assert done.stdout.strip()


def test_the_demo_fits_a_terminal(demo: tuple[Path, str, str]) -> None:
    _, out, _ = demo
    # Rules and prose are drawn for 80 columns; only quoted text may run longer.
    for line in out.splitlines():
        if line.startswith("──"):
            assert len(line) <= 80
    assert len(out.splitlines()) < 150


def _split(line: str) -> list[str]:
    import shlex

    return shlex.split(line)
