"""`make bench` (bench.run): missing data stops it in one line before anything runs,
and a run that fails part-way never rewrites docs/benchmarks.md."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

from bench.run import run_all


def test_missing_shared_data_is_one_line_and_nothing_runs(tmp_path: Path) -> None:
    report = REPO / "docs" / "benchmarks.md"
    before = report.read_bytes()
    done = subprocess.run(
        [sys.executable, "-m", "bench.run", "--shared", str(tmp_path / "nowhere")],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == (
        f"error: make bench needs {tmp_path / 'nowhere' / 'acceptance/gen_events.py'} "
        "(and 3 more); nothing was run (set SHARED=path/to/shared)\n"
    )
    assert report.read_bytes() == before


def _writes(heading: str, code: int) -> list[str]:
    script = (
        f"from bench.report import write_section; write_section({heading!r}, 'figures')\n"
        f"raise SystemExit({code})"
    )
    return [sys.executable, "-c", script]


def test_a_partial_run_leaves_the_report_alone_and_stages_what_ran(tmp_path: Path) -> None:
    report, staged = tmp_path / "benchmarks.md", tmp_path / "build" / "partial.md"
    report.write_text("# Benchmarks\n\n## Old\n\nold figures\n")
    failed = run_all([("a", _writes("A", 0)), ("b", _writes("B", 1))], report, staged)
    assert failed == ["b"]
    assert report.read_text() == "# Benchmarks\n\n## Old\n\nold figures\n"
    assert "## A\n\nfigures" in staged.read_text() and "## B" in staged.read_text()
    assert run_all([("a", _writes("A", 0))], report, staged) == []
    assert report.read_text() == "# Benchmarks\n\n## Old\n\nold figures\n\n## A\n\nfigures\n"
    assert not staged.exists()


def test_the_staging_variable_is_not_read_as_a_config_key(tmp_path: Path) -> None:
    """bench.run hands the staged report to each benchmark in the environment; the
    benchmarks open databases, whose config rejects unknown MEMPLUG_* variables."""
    from bench.report import REPORT_ENV
    from memplug.base.config import load_config

    staged = {REPORT_ENV: str(tmp_path / "benchmarks.md")}
    assert load_config(None, environ=staged) == load_config(None, environ={})


def test_a_rewritten_section_leaves_the_hand_kept_one_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/benchmarks.md keeps by hand what a run cannot show ("## Retrieval: how the
    ranking was chosen" after the generated "## Retrieval"); a benchmark rewriting its
    section must not take the hand-kept one with it."""
    from bench.report import REPORT_ENV, write_section

    report = tmp_path / "benchmarks.md"
    kept = "## Retrieval: how the ranking was chosen\n\nround by round\n"
    report.write_text(f"# Benchmarks\n\n## Retrieval\n\nold figures\n\n{kept}")
    monkeypatch.setenv(REPORT_ENV, str(report))
    write_section("Retrieval", "new figures")
    assert report.read_text() == f"# Benchmarks\n\n## Retrieval\n\nnew figures\n\n{kept}"


def test_every_hand_kept_section_of_the_report_follows_its_generated_one() -> None:
    text = (REPO / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    for generated, kept in (
        ("## Retrieval", "## Retrieval: how the ranking was chosen"),
        ("## Assembly budget curve", "## Assembly budget curve: how to read it"),
    ):
        assert headings.index(kept) == headings.index(generated) + 1


# Today's figures, each with its command; what led to them lives in docs/history/.
REPORT_LINES = 480
PAGE = r"(?:docs/)?(?:history/)?benchmarks(?:-\d+)?\.md"
LINKED = re.compile(rf"\(({PAGE})#([\w-]+)\)")
QUOTED = re.compile(rf"\b({PAGE}),?\s+\(?\"([^\"]+)\"")


def _anchor(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def _headings(page: str) -> list[str]:
    path = REPO / "docs" / page.removeprefix("docs/")
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.lstrip("#").strip() for line in lines if line.startswith("##")]


def test_the_report_holds_todays_figures_not_their_history() -> None:
    lines = (REPO / "docs" / "benchmarks.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= REPORT_LINES, "move what led to a figure to docs/history/"


def test_every_reference_to_a_report_section_finds_it() -> None:
    """A link (``benchmarks.md#anchor``) or a quoted name (``benchmarks.md, "Upgrades"``)
    in the docs, the code or the benchmarks names a section that exists."""
    sources = [*(REPO / "docs").glob("*.md"), REPO / "README.md"]
    sources += [*(REPO / "memplug").rglob("*.py"), *(REPO / "bench").rglob("*.py")]
    broken = []
    for source in sources:
        # A reference may wrap onto a comment's next line.
        text = re.sub(r"\n\s*#?\s*", " ", source.read_text(encoding="utf-8"))
        for page, anchor in LINKED.findall(text):
            if anchor not in {_anchor(h) for h in _headings(page)}:
                broken.append(f"{source.name}: {page}#{anchor}")
        for page, name in QUOTED.findall(text):
            if not any(h.startswith(name) for h in _headings(page)):
                broken.append(f'{source.name}: {page} "{name}"')
    assert broken == []
