"""The host registry (memplug/base/host_registry.py) is a literal table: every host shipped
with memplug has a spec whose parts resolve, whose extra is declared and whose page is
linked from the README, and the table is read without scanning source files, so it
works from a zipped or bytecode-only install."""

from __future__ import annotations

import importlib.util
import marshal
import subprocess
import sys
import zipfile
from importlib.metadata import metadata
from pathlib import Path
from typing import get_args

import pytest

from memplug.hosts import BUILTIN, Part, all_hosts, builtin, with_part
from memplug.hosts.claude_code import HOST

REPO = Path(__file__).resolve().parent.parent
HOSTS = REPO / "memplug" / "hosts"


def test_every_host_module_has_a_spec() -> None:
    """A module of memplug/hosts/ is a host (a spec names it) or a helper of one."""
    named = {
        target.partition(":")[0].rsplit(".", 1)[-1]
        for spec in BUILTIN.values()
        for part in get_args(Part)
        if (target := getattr(spec, part)) is not None
    }
    # claude-code's and codex's helpers, and the registry
    helpers = {"claude_code", "claude_idle", "claude_records", "claude_skill", "codex",
               "notice", "registry"}  # fmt: skip
    modules = {p.stem for p in HOSTS.glob("*.py") if not p.stem.startswith("_")}
    assert modules - helpers == named
    assert sorted(BUILTIN) == ["claude-code", "codex", "mcp", "pydantic-ai"]


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_a_builtin_spec_resolves_and_is_documented(name: str) -> None:
    spec = BUILTIN[name]
    assert spec.name == name and builtin(name) is spec and all_hosts()[name] is spec
    parts = [part for part in get_args(Part) if getattr(spec, part) is not None]
    assert parts, "a host with no part"
    for part in parts:
        assert callable(spec.load(part)), part
    extras = metadata("memplug-local").get_all("Provides-Extra") or []
    assert spec.extra is None or spec.extra in extras
    page = f"docs/{name}.md"
    assert (REPO / page).is_file()
    assert f"]({page})" in (REPO / "README.md").read_text(encoding="utf-8")


def test_claude_code_is_the_host_of_its_cursors() -> None:
    assert builtin(HOST) is BUILTIN["claude-code"]


def test_a_part_a_host_lacks_is_named() -> None:
    with pytest.raises(LookupError, match="host 'pydantic-ai' has no hook"):
        BUILTIN["pydantic-ai"].load("hook")
    assert "pydantic-ai" not in with_part("hook") and "claude-code" in with_part("hook")
    assert builtin("no-such-host") is None and builtin("../registry") is None


def test_the_registry_works_from_a_zipped_install(tmp_path: Path) -> None:
    """Bytecode only, from a zip: the hook is found and resolved without source files."""
    archive = tmp_path / "memplug.zip"
    package = REPO / "memplug"
    with zipfile.ZipFile(archive, "w") as zipped:
        for path in sorted(package.rglob("*.py")):
            code = compile(path.read_text(encoding="utf-8"), str(path), "exec")
            name = path.relative_to(REPO).with_suffix(".pyc")
            header = importlib.util.MAGIC_NUMBER + b"\0" * 12  # no source to compare with
            zipped.writestr(str(name), header + marshal.dumps(code))
    probe = (
        "import memplug.base.host_registry as r; from memplug.hosts import builtin; "
        "assert r.__file__.endswith('.pyc') and '.zip' in r.__file__, r.__file__; "
        "print(builtin('claude-code').load('hook').__module__)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env={"PYTHONPATH": str(archive), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.stdout == "memplug.hosts.claude_hook\n", done.stderr


def test_coding_hosts_are_the_specs_marked_coding() -> None:
    from memplug.base.host_registry import BUILTIN, is_coding_host

    assert {name for name, spec in BUILTIN.items() if spec.coding} == {"claude-code", "codex"}
    assert [is_coding_host(name) for name in ("claude-code", "codex", "mcp", "nohost", None)] == [
        True,
        True,
        False,
        False,
        False,
    ]
