"""bench.instruction_budget: the prompt hook held within 3% of a reference commit's
instruction count (the count itself runs in .ci/run, `make instructions`)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.instruction_budget import BUDGET, checkout, over_budget, reference_commit


def test_the_budget_allows_three_percent_and_not_more() -> None:
    assert not over_budget(103.0, 100.0, BUDGET)
    assert over_budget(103.1, 100.0, BUDGET)
    assert not over_budget(90.0, 100.0, BUDGET)


def test_the_reference_is_a_full_commit_id_with_its_reason() -> None:
    assert re.fullmatch(r"[0-9a-f]{40}", reference_commit())


def test_an_unknown_reference_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as stopped:
        checkout("no-such-ref", tmp_path)
    assert str(stopped.value).startswith("error: cannot read no-such-ref from git: ")
    assert "\n" not in str(stopped.value)


def test_a_reference_tree_holds_the_package_and_its_migrations(tmp_path: Path) -> None:
    tree = checkout("HEAD", tmp_path)
    assert (tree / "memplug" / "plugin.py").is_file()
    assert any((tree / "migrations").glob("*.sql"))
