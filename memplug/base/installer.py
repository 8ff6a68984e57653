"""How this memplug was installed, and the command that adds an extra to it.

A ``pip install`` hint is wrong for a pipx or uv tool install: there the package lives
in a venv of its own that pip (on PATH) does not reach. Told from the interpreter's
prefix, which those tools name after themselves.
"""

from __future__ import annotations

import sys

from memplug.base.paths import DISTRIBUTION


def installer(prefix: str | None = None) -> str:
    """``pipx``, ``uv`` (a uv tool) or ``pip``, from ``prefix`` (default: this venv's)."""
    parts = (prefix or sys.prefix).replace("\\", "/").split("/")
    if "pipx" in parts or ".pipx" in parts:
        return "pipx"
    if "uv" in parts and "tools" in parts:
        return "uv"
    return "pip"


def extra_command(extra: str, prefix: str | None = None) -> str:
    """The one command that adds ``extra`` to this installation."""
    spec = f"'{DISTRIBUTION}[{extra}]'"
    return {
        "pipx": f"pipx install --force {spec}",
        "uv": f"uv tool install --force {spec}",
        "pip": f"pip install {spec}",
    }[installer(prefix)]
