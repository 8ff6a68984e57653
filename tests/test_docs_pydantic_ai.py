"""docs/pydantic-ai.md: its offline example runs with only the extra installed, and
prints the request the page shows."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOC = (REPO / "docs" / "pydantic-ai.md").read_text(encoding="utf-8")


def _block(marker: str) -> str:
    found = re.search(rf"<!-- {marker} -->\n```\w+\n(.*?)```", DOC, re.S)
    assert found, marker
    return found[1]


def test_the_offline_example_prints_what_the_page_says_the_model_receives(
    tmp_path: Path,
) -> None:
    script = tmp_path / "example.py"
    script.write_text(_block("example: offline"), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env={**os.environ, "MEMPLUG_HOME": str(tmp_path / "home")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == _block("output: offline")


def test_the_offline_example_names_no_provider_the_extra_does_not_install() -> None:
    example = _block("example: offline")
    assert "FunctionModel" in example and not re.search(r"Agent\(\s*[\"']", example)
