"""A mistyped command gets the nearest names, as tools people like do (click's own error
line, exit 2)."""

from __future__ import annotations

from collections.abc import Callable

from conftest import CliResult


def test_a_mistyped_command_names_the_nearest(cli: Callable[..., CliResult]) -> None:
    done = cli("itmes")
    assert done.returncode == 2
    assert done.stderr.strip().endswith("Error: No such command 'itmes'. Did you mean 'items'?")
    far = cli("zzzz")
    assert far.returncode == 2 and far.stderr.strip().endswith("Error: No such command 'zzzz'.")
