"""bench.hook_events prints every hook's figure both ways (make bench's, a user's)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench.hook_events import CASES

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parent.parent


def test_every_hook_gets_a_row_with_both_figures() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.hook_events",
            "--runs",
            "1",
            "--events",
            "200",
            "--load",
            "0",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    row = re.compile(r"^\| ([^|]+?) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|$", re.M)
    rows = {m[1]: m.groups()[1:] for m in row.finditer(done.stdout)}
    assert sorted(rows) == sorted(label for label, *_ in CASES)
    assert all(int(figure) > 0 for figures in rows.values() for figure in figures)
