"""Rebuild fixtures/schemas/: one small database written by each schema memplug shipped.

For each schema version the code of the commit that added its migration (no git tags
exist; ``git log -- migrations/`` names them) is unpacked with ``git archive`` into a
temp dir and put in a temp venv whose only addition is that source (its dependencies
come from this checkout's venv, which holds every library those commits import). That
old memplug then writes the database: ``memory import`` of ``events.jsonl`` (generic
JSONL), a Claude Code ``UserPromptSubmit`` hook over the transcript fixture
``fixtures/claude_code/…000001.jsonl`` with its subagents, and ``memory retract`` of
the item that says "Redis" (a person's action an upgrade must keep). Its own
``memory export`` is saved beside the file as ``vNN.export.jsonl``.

    python -m bench.schema_fixtures            # every version
    python -m bench.schema_fixtures --only 2,7

Schema 1's commit (346c82a) is the scaffold, with no CLI: schema 1 is built from the
last commit before migration 0002 (2b87a76), the code that shipped schema 1.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "fixtures" / "schemas"
TRANSCRIPT = REPO / "fixtures" / "claude_code" / "5e1f0c2a-7b3d-4e8f-9a10-c0ffee000001.jsonl"
SESSION = TRANSCRIPT.stem
# schema version → the commit whose code wrote it (see the module docstring).
COMMITS: dict[int, str] = {
    1: "2b87a76",
    2: "8a0323b",
    3: "c289cfb",
    4: "21e66f6",
    5: "7eb08a7",
    6: "18a6d5f",
    7: "5003a07",
    8: "dd16df0",
    9: "9cd7b95",
    10: "591f0ca",
}
RETRACT_WORD = "Redis"


def unpack(commit: str, into: Path) -> Path:
    source = into / "src"
    source.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", commit], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(source)], input=archive, check=True)
    return source


def make_venv(source: Path, into: Path) -> Path:
    """A venv that imports memplug from ``source`` and the libraries from this one."""
    venv = into / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    libraries = sysconfig.get_paths()["purelib"]
    (Path(site) / "memplug_old.pth").write_text(f"{source}\n{libraries}\n", encoding="utf-8")
    return python


def memory(python: Path, db: Path, home: Path, *args: str, stdin: bytes | None = None) -> str:
    env = {**os.environ, "MEMPLUG_HOME": str(home)}
    env.pop("MEMPLUG_DB", None)
    done = subprocess.run(
        [str(python), "-m", "memplug.cli", "--db", str(db), *args],
        input=stdin,
        capture_output=True,
        env=env,
        cwd=home,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"memory {' '.join(args)}: {done.stderr.decode()[-400:]}")
    return done.stdout.decode()


def hook(python: Path, db: Path, home: Path) -> None:
    transcripts = home / "transcripts"
    shutil.copy(TRANSCRIPT, transcripts / TRANSCRIPT.name)
    subagents = TRANSCRIPT.with_suffix("")
    if subagents.is_dir():
        shutil.copytree(subagents, transcripts / subagents.name)
    payload = {
        "hook_event_name": "UserPromptSubmit",
        "session_id": SESSION,
        "transcript_path": str(transcripts / TRANSCRIPT.name),
        "cwd": "/home/ana/shop",
        "prompt": "What did we decide about the port?",
    }
    memory(python, db, home, "hook", "claude-code", stdin=json.dumps(payload).encode())


def query(python: Path, db: Path, sql: str) -> list[list[object]]:
    """Rows read with the old venv's apsw (never this process's: one library per file)."""
    code = (
        "import apsw, json, sys; "
        "print(json.dumps(apsw.Connection(sys.argv[1]).execute(sys.argv[2]).fetchall()))"
    )
    done = subprocess.run(
        [str(python), "-c", code, str(db), sql], check=True, capture_output=True, text=True
    )
    return [list(row) for row in json.loads(done.stdout)]


def retract(python: Path, db: Path, home: Path) -> None:
    """A person retracts the first item naming Redis."""
    rows = query(python, db, f"SELECT id FROM memory_items WHERE content LIKE '%{RETRACT_WORD}%'")
    wanted = sorted(str(row[0]) for row in rows)
    if wanted:
        memory(python, db, home, "retract", wanted[0])


def build(version: int, commit: str) -> None:
    with tempfile.TemporaryDirectory(prefix=f"memplug-schema{version}-") as tmp:
        work = Path(tmp)
        python = make_venv(unpack(commit, work), work)
        home = work / "home"
        (home / "transcripts").mkdir(parents=True)
        db = home / "memory.sqlite"
        # The command list: each step runs where the old code had the command.
        commands = memory(python, db, home, "--help").split("Commands:")[-1]
        memory(python, db, home, "import", str(OUT / "events.jsonl"))
        if " hook " in commands:
            hook(python, db, home)
        if " retract " in commands:
            retract(python, db, home)
        export = memory(python, db, home, "export")
        written = int(str(query(python, db, "PRAGMA user_version")[0][0]))
        if written != version:
            raise RuntimeError(f"{commit} wrote schema {written}, not {version}")
        if Path(f"{db}-wal").exists():
            raise RuntimeError(f"{db}-wal was left behind")
        shutil.copyfile(db, OUT / f"v{version:02d}.sqlite")
        (OUT / f"v{version:02d}.export.jsonl").write_text(export, encoding="utf-8")
        print(f"schema {version}: {commit}, {len(export.splitlines())} events", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated schema versions")
    args = parser.parse_args()
    versions = [int(v) for v in args.only.split(",")] if args.only else sorted(COMMITS)
    for version in versions:
        build(version, COMMITS[version])


if __name__ == "__main__":
    main()
