"""memplug on a CPython build without its builtin hash modules (``_blake2``, ``_sha256``,
``_sha2``, …), as FIPS builds and some distributions ship it: capture, assembly and the
Claude Code hook run end to end in fresh processes with those modules hidden
(tests/nohash/sitecustomize.py), and give the same bytes as with them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli

REPO = Path(__file__).resolve().parent.parent
NOHASH = REPO / "tests" / "nohash"
SID = "5e1f0c2a-7b3d-4e8f-9a10-c0ffee000001"


def _env(hidden: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if hidden:
        env["PYTHONPATH"] = str(NOHASH)
    return env


def _memory(env: dict[str, str], *args: str, stdin: str | None = None) -> str:
    done = run_cli(*args, input=stdin, env=env)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    return done.stdout


def _scenario(root: Path, hidden: bool) -> dict[str, str]:
    """Import a session, assemble for it, export it; then a Claude Code session captured
    by its Stop hook and answered by its prompt hook."""
    env = _env(hidden)
    db = str(root / "m.sqlite")
    _memory(env, "--db", db, "import", str(REPO / "fixtures" / "sessions" / "shop.jsonl"))
    query = ("--session", "shop-1", "--query", "what p95 must checkout keep?", "--json")
    assembled = json.loads(_memory(env, "--db", db, "assemble", *query))
    project = root / "projects" / "-home-ana-shop"
    shutil.copytree(REPO / "fixtures" / "claude_code", project)
    payload = {"session_id": SID, "transcript_path": str(project / f"{SID}.jsonl"),
               "cwd": "/home/ana/shop"}  # fmt: skip
    hook = ("--db", db, "hook", "claude-code")
    stop = _memory(env, *hook, stdin=json.dumps({**payload, "hook_event_name": "Stop"}))
    prompt = {**payload, "hook_event_name": "UserPromptSubmit", "prompt": "which port?"}
    return {
        "assembled": assembled["text"],
        "stop": stop,
        "prompt": _memory(env, *hook, stdin=json.dumps(prompt)),
        "export": _memory(env, "--db", db, "export"),
    }


def test_the_hidden_modules_are_hidden() -> None:
    """The shim can fail: a process under it cannot import them, one without it can."""
    probe = "import _blake2, _sha256"
    hidden = subprocess.run([sys.executable, "-c", probe], env=_env(True), capture_output=True)
    assert b"ModuleNotFoundError: No module named '_blake2' (hidden)" in hidden.stderr
    subprocess.run([sys.executable, "-c", probe], env=_env(False), check=True)


@pytest.mark.slow
def test_capture_assembly_and_the_hook_give_the_same_bytes_without_them(
    tmp_path: Path,
) -> None:
    without = _scenario(tmp_path / "without", hidden=True)
    assert "p95 < 200 ms at 1k rps" in without["assembled"]
    assert json.loads(without["prompt"])["hookSpecificOutput"]["additionalContext"]
    assert without["export"].count("\n") > 60
    assert without == _scenario(tmp_path / "with", hidden=False)
