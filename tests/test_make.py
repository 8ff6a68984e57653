"""Make targets a newcomer runs on a fresh clone say what they miss in one line."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_make_accept_without_the_shared_folder_names_what_is_missing(tmp_path: Path) -> None:
    nowhere = tmp_path / "nowhere"
    done = subprocess.run(
        ["make", "-s", "accept", f"SHARED={nowhere}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert done.stderr.splitlines()[0] == (
        f"error: make accept needs {nowhere}/acceptance/foundation; nothing was run "
        "(set SHARED=path/to/shared)"
    )
    assert "not found" not in done.stderr
