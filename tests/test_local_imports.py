"""An import kept inside a function is a latency trick (docs/architecture.md, "Anything on
the prompt hook's path"): it stays only while it defers a module that importing its own
module does not already load. One that defers nothing is found here and fails."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "memplug"
# Imported where it is used for a reason other than latency: pydantic-ai 1.x has no
# `capabilities`, and the rest of the adapter works there.
EXEMPT = {("memplug.hosts.pydantic_ai", "pydantic_ai.capabilities")}
LOADED = (
    "import json, sys, importlib; importlib.import_module(sys.argv[1]);"
    " print(json.dumps(sorted(sys.modules)))"
)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _local_imports(path: Path) -> list[tuple[int, list[str]]]:
    """Each function-level import: its line and the modules it names (a ``from X import
    y`` names X, and X.y in case y is a submodule)."""
    found = []
    for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in function.body:
            for inner in ast.walk(node):
                if isinstance(inner, ast.ImportFrom) and inner.level == 0 and inner.module:
                    names = [inner.module, *(f"{inner.module}.{a.name}" for a in inner.names)]
                    found.append((inner.lineno, names))
                elif isinstance(inner, ast.Import):
                    found.append((inner.lineno, [a.name for a in inner.names]))
    return found


def _is_module(name: str) -> bool:
    """Whether ``name`` (from ``from memplug.x import name``) is one of memplug's modules;
    a name imported from another package is taken as an attribute."""
    here = PACKAGE.parent.joinpath(*name.split("."))
    return name.startswith("memplug.") and (here.with_suffix(".py").exists() or here.is_dir())


@pytest.mark.slow
def test_no_import_inside_a_function_defers_a_module_already_loaded() -> None:
    idle = []
    for path in sorted(PACKAGE.rglob("*.py")):
        imports = _local_imports(path)
        if not imports:
            continue
        module = _module_name(path)
        done = subprocess.run(
            [sys.executable, "-c", LOADED, module], capture_output=True, text=True, check=True
        )
        loaded = set(json.loads(done.stdout))
        for line, names in imports:
            # `from pkg import name`: pkg must be loaded, and name too when it is a module.
            needed = [names[0], *(n for n in names[1:] if _is_module(n))]
            if (module, names[0]) not in EXEMPT and all(n in loaded for n in needed):
                idle.append(f"{path.relative_to(PACKAGE.parent)}:{line} {names[0]}")
    assert idle == [], "imported inside a function, yet already loaded by its module"


def test_the_check_sees_an_import_that_defers_nothing(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("import os\n\n\ndef f():\n    import os.path\n    return os\n")
    assert _local_imports(sample) == [(5, ["os.path"])]
