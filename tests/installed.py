"""The ``memory`` script pip installed beside this interpreter, run as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import CliResult

MEMORY = Path(sys.executable).parent / "memory"


def memory(
    *args: str,
    input: str | None = None,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> CliResult:
    """``memory ARGS…`` in a fresh process through the installed entry point."""
    completed = subprocess.run(
        [str(MEMORY), *args],
        input=input,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=120,
    )
    return CliResult(completed.returncode, completed.stdout, completed.stderr)
