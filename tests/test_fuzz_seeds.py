"""The fuzz targets' seed inputs hold their invariants: `make fuzz` is not part of
`make test` (it needs atheris and wall time), but its targets must not rot."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

FUZZ = Path(__file__).resolve().parent / "fuzz"
sys.path.insert(0, str(FUZZ))
TARGETS = ("fuzz_jsonl", "fuzz_query")


@pytest.mark.parametrize("target", TARGETS)
def test_each_seed_holds_the_targets_invariants(target: str) -> None:
    module = importlib.import_module(target)
    assert module.SEEDS
    for seed in module.SEEDS:
        module.test_one_input(seed)
