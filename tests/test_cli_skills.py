"""`memory skills ingest` takes skill files only (a README's bullets are not rules)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.installed import memory

REPO = Path(__file__).resolve().parent.parent
SKILL = REPO / "fixtures" / "skills" / "release" / "SKILL.md"


def test_a_file_that_is_not_a_skill_file_is_refused_with_what_one_looks_like(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "m.sqlite")
    done = memory("--db", db, "skills", "ingest", str(REPO / "README.md"))
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"Error: {REPO / 'README.md'} is not a skill file: a skill is a file ")
    assert "(**/SKILL.md)" in line and "frontmatter" in line
    listed = memory("--db", db, "skills", "list", "--json")
    assert listed.returncode != 0 or json.loads(listed.stdout)["skills"] == []


def test_one_skill_file_given_directly_is_ingested(tmp_path: Path) -> None:
    done = memory("--db", str(tmp_path / "m.sqlite"), "skills", "ingest", str(SKILL), "--json")
    assert done.returncode == 0, done.stderr
    (skill,) = done.json()["skills"]
    assert skill["name"] == "release" and skill["rules"] > 0
