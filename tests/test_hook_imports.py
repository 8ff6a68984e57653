"""What a Claude Code hook process imports: the hook's latency floor is its imports
(docs/benchmarks.md), so they are checked here, in a fresh process through the real
entry point (``memory hook claude-code``), and a change that brings pydantic, click,
package metadata or rule compilation back onto the path fails. What is pinned is what
must stay out (and memplug's own modules on the idle path), never the interpreter's or
a library's own set, which an upgrade may change."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memplug.hosts.claude_idle import TOOL_BACKLOG_BYTES

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "claude_code"
SID = "5e1f0c2a-7b3d-4e8f-9a10-c0ffee000001"
# Run the console script's function, then write every loaded module's name to argv[1].
RUN = """
import sys, json
from memplug.cli import main
out = sys.argv.pop(1)
try:
    main(sys.argv[1:])
finally:
    open(out, "w").write(json.dumps(sorted(sys.modules)))
"""
# Costly or pointless on any hook path: validation models, the CLI framework, package
# metadata scans (and the email parser they pull in), extraction and its rule tables;
# the storage Protocols (slow classes to build; the hook only types against them) and
# base64 (call tokens are written with binascii).
NEVER = (
    "base64",
    "memplug.store.ports",
    "pydantic",
    "pydantic_core",
    "click",
    "importlib.metadata",
    "email",
    "memplug.base.models",
    "memplug.cli.app",
    "memplug.base.extensions",
    "memplug.derive.extract",
    "memplug.derive.rederive",
    "memplug.derive.dialogue",
    "memplug.derive.cues",
    "memplug.derive.quantities",
    "memplug.capture.append",
    "memplug.capture.jsonl",
    # What tells a person of a failing database: a hook that works never needs it.
    "memplug.hosts.notice",
)
# A tool hook with nothing new reads the payload, the transcript's size and its saved
# cursor, and stops: these are the only memplug modules it imports, and beyond the
# interpreter, json and apsw it imports none of IDLE_NEVER (each costs that process
# more than its work).
IDLE_NEVER = (
    *NEVER,
    "typing",
    "dataclasses",
    "pathlib",
    "logging",
    "msgspec",
    "Stemmer",
)
IDLE_PATH = {
    "memplug",
    "memplug.cli",
    "memplug.hosts",
    "memplug.hosts.claude_idle",
    "memplug.base",
    "memplug.base.paths",
    "memplug.store",
    "memplug.store.peek",
}


def loaded(args: list[str], stdin: str, tmp_path: Path) -> list[str]:
    out = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", RUN, str(out), *args], input=stdin, capture_output=True, text=True
    )
    assert out.exists(), done.stderr
    return list(json.loads(out.read_text()))


def under(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == n or m.startswith(n + ".") for n in names)]


@pytest.fixture
def hook_run(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A database that has captured the fixture session (the Stop hook read it all)."""
    project = tmp_path / "projects" / "-home-ana-shop"
    shutil.copytree(FIXTURES, project)
    db = tmp_path / "m.sqlite"
    payload = {
        "session_id": SID,
        "transcript_path": str(project / f"{SID}.jsonl"),
        "cwd": "/home/ana/shop",
    }
    subprocess.run(
        [sys.executable, "-m", "memplug.cli", "--db", str(db), "hook", "claude-code"],
        input=json.dumps({**payload, "hook_event_name": "Stop"}),
        check=True,
        capture_output=True,
        text=True,
    )
    return db, {k: str(v) for k, v in payload.items()}


def floor(tmp_path: Path) -> set[str]:
    """What the interpreter with apsw loads anyway (site hooks of the venv included)."""
    out = tmp_path / "floor.json"
    code = f"import sys, json, apsw; open({str(out)!r}, 'w').write(json.dumps(sorted(sys.modules)))"
    subprocess.run([sys.executable, "-c", code], check=True)
    return set(json.loads(out.read_text()))


# The records' library (docs/architecture.md "Records"), and the typing backports its
# import reads when they are installed.
RECORDS = {"msgspec", "typing_extensions"}
# The Snowball stemmer ranking needs for query words (a C extension built with Cython;
# importing it costs under 1 ms).
STEMMER = {"Stemmer", "cython_runtime"}


def third_party(modules: list[str], baseline: set[str]) -> list[str]:
    allowed = set(sys.stdlib_module_names) | {"memplug", "apsw", "__main__"} | RECORDS | STEMMER
    modules = [m for m in modules if not m.startswith("_cython_")]
    return sorted(m for m in modules if m not in baseline and m.split(".")[0] not in allowed)


def test_a_prompt_hook_imports_only_the_stdlib_apsw_and_what_it_uses(
    hook_run: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    db, payload = hook_run
    stdin = json.dumps(
        {**payload, "hook_event_name": "UserPromptSubmit", "prompt": "which port for checkout?"}
    )
    modules = loaded(["--db", str(db), "hook", "claude-code"], stdin, tmp_path)
    assert "memplug.recall.assemble.assembler" in modules, "the prompt hook did not assemble"
    assert under(modules, NEVER) == []
    assert third_party(modules, floor(tmp_path)) == []


def test_a_hook_with_nothing_new_imports_its_probe_and_nothing_else(
    hook_run: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """Beyond ``json`` and apsw: no typing, dataclasses, pathlib, host registry or store."""
    db, payload = hook_run
    stdin = json.dumps({**payload, "hook_event_name": "PostToolUse"})
    modules = loaded(["--db", str(db), "hook", "claude-code"], stdin, tmp_path)
    new = sorted(set(modules) - floor(tmp_path))
    assert {m for m in new if m.split(".")[0] == "memplug"} == IDLE_PATH
    assert under(new, IDLE_NEVER) == []
    assert third_party(new, set()) == []


def test_a_tool_hook_with_new_lines_goes_on_to_the_hook(
    hook_run: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """The idle check above can fail: a backlog past what a tool hook leaves to the
    turn's end is captured by the hook module."""
    db, payload = hook_run
    with open(payload["transcript_path"], "a", encoding="utf-8") as transcript:
        transcript.write("{}\n" * (TOOL_BACKLOG_BYTES // 3 + 1))
    stdin = json.dumps({**payload, "hook_event_name": "PostToolUse"})
    modules = loaded(["--db", str(db), "hook", "claude-code"], stdin, tmp_path)
    assert "memplug.hosts.claude_hook" in modules
    assert under(modules, IDLE_NEVER), "the idle check would not see a costly import"


def test_a_turn_that_captures_and_derives_never_imports_pydantic(tmp_path: Path) -> None:
    """A Stop over new transcript lines validates them as events (msgspec records) and
    derives memory from them: the boundary models, pydantic and retrieval stay out."""
    project = tmp_path / "projects" / "-home-ana-shop"
    shutil.copytree(FIXTURES, project)
    stdin = json.dumps(
        {
            "hook_event_name": "Stop",
            "session_id": SID,
            "transcript_path": str(project / f"{SID}.jsonl"),
            "cwd": "/home/ana/shop",
        }
    )
    modules = loaded(["--db", str(tmp_path / "m.sqlite"), "hook", "claude-code"], stdin, tmp_path)
    assert {"memplug.base.events", "memplug.capture.append", "memplug.derive.extract"} <= set(
        modules
    )
    never = ("pydantic", "pydantic_core", "memplug.base.models", "click", "memplug.recall.retrieve")
    assert under(modules, never) == []


def test_the_check_sees_what_it_forbids(tmp_path: Path) -> None:
    """The assertions above can fail: the click CLI and the JSONL importer are seen."""
    modules = loaded(["--db", str(tmp_path / "m.sqlite"), "import", "-"], "{}\n", tmp_path)
    assert {"click", "memplug.capture.jsonl", "memplug.capture.append"} <= set(
        under(modules, NEVER)
    )
    assert "click" in third_party(modules, floor(tmp_path))


@pytest.mark.parametrize("before", [None, "logfire"])
def test_the_hook_runs_without_the_collector_and_pydantic_plugins_and_gives_them_back(
    monkeypatch: pytest.MonkeyPatch, before: str | None
) -> None:
    """Off for the hook (a process that lives for one payload), on again after, for a
    caller that runs the hook in its own process (and its child processes)."""
    import gc
    import os

    import memplug.hosts.claude_hook
    from memplug.cli import main

    during: list[tuple[bool, str | None]] = []

    def hook(stdin: bytes, **_: object) -> str:
        during.append((gc.isenabled(), os.environ.get("PYDANTIC_DISABLE_PLUGINS")))
        return ""

    monkeypatch.setattr(memplug.hosts.claude_hook, "main", hook)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b'{"hook_event_name": "Stop"}')))
    if before is None:
        monkeypatch.delenv("PYDANTIC_DISABLE_PLUGINS", raising=False)
    else:
        monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", before)
    assert gc.isenabled()
    main(["hook", "claude-code"])
    assert during == [(False, before or "__all__")]
    assert gc.isenabled()
    assert os.environ.get("PYDANTIC_DISABLE_PLUGINS") == before


def test_a_prompt_hook_with_the_semantic_provider_imports_its_extra_and_no_metadata(
    hook_run: tuple[Path, dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The provider on costs the prompt hook its extra (numpy, tokenizers, the table's
    package) and its table's rows, not an entry-point scan (docs/semantic.md, "Cost")."""
    db, payload = hook_run
    monkeypatch.setenv("MEMPLUG_SEMANTIC__PROVIDER", "builtin")
    stdin = json.dumps(
        {**payload, "hook_event_name": "UserPromptSubmit", "prompt": "which port for checkout?"}
    )
    modules = loaded(["--db", str(db), "hook", "claude-code"], stdin, tmp_path)
    assert {"memplug.semantic.builtin", "memplug.semantic.vecmath"} <= set(modules)
    assert under(modules, NEVER) == []
    assert {m.split(".")[0] for m in third_party(modules, floor(tmp_path))} == {
        "memplug_table",
        "numpy",
        "tokenizers",
    }
