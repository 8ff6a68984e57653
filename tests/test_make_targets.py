"""`make test` is the whole suite and `make check` the fast loop without the tests marked
slow; CI (.ci/run) runs the whole suite, then the fast loop again with the builtin hash
modules hidden."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# What narrows a pytest run to part of the suite.
NARROWING = ("-m", "-k", "--deselect", "--ignore", "--lf", "--last-failed", "-x")


def recipe(target: str) -> list[list[str]]:
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    found = re.search(rf"^{target}:.*\n((?:\t.*\n)+)", text, re.M)
    assert found, target
    return [shlex.split(line.strip()) for line in found.group(1).splitlines()]


def test_make_test_runs_the_whole_suite() -> None:
    (command,) = recipe("test")
    assert command[1:3] == ["-m", "pytest"]
    assert not [a for a in command[3:] if a.split("=")[0] in NARROWING]
    addopts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]
    options = shlex.split(addopts["ini_options"]["addopts"])
    assert not [a for a in options if a.split("=")[0] in NARROWING]


def test_make_check_leaves_out_the_slow_tests_only() -> None:
    (command,) = recipe("check")
    assert command[1:3] == ["-m", "pytest"]
    args = command[3:]
    assert [a for a in args if a.split("=")[0] in NARROWING] == ["-m"]
    assert args[args.index("-m") + 1] == "not slow"


def test_ci_runs_both_and_the_fast_loop_with_the_hashes_hidden() -> None:
    lines = [
        line for line in (REPO / ".ci" / "run").read_text().splitlines()
        if line and not line.startswith("#")
    ]  # fmt: skip
    assert "make test" in lines
    assert 'PYTHONPATH="$PWD/tests/nohash" make check' in lines
