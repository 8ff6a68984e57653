"""docs/skills.md: its skill file is the fixture, and its outputs are what the CLI prints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memplug.derive.skills import HEADING_KEYWORDS
from tests.doc_examples import REPO, examples, run_transcript

FIXTURE = REPO / "fixtures" / "skills" / "release" / "SKILL.md"


@pytest.fixture
def ingested(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The doc's skill file at ``skills/release/SKILL.md`` under the working directory."""
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "skills" / "release" / "SKILL.md"
    target.parent.mkdir(parents=True)
    target.write_text(examples("skills.md")["SKILL.md"], encoding="utf-8")
    return tmp_path / "memory.sqlite"


def test_the_documented_skill_file_is_the_fixture() -> None:
    assert examples("skills.md")["SKILL.md"] == FIXTURE.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", ["ingest", "rules-list"])
def test_documented_commands_print_what_the_doc_shows(ingested: Path, name: str) -> None:
    if name != "ingest":
        run_transcript("$ memory skills ingest skills\n", ingested)
    for expected, actual in run_transcript(examples("skills.md")[name], ingested):
        assert actual == expected


def test_documented_assembly_is_what_assemble_prints(ingested: Path) -> None:
    from memplug.base.models import parse_event
    from memplug.memory import Memory

    run_transcript("$ memory skills ingest skills\n", ingested)
    with Memory.open(ingested) as memory:
        text = "Can we deploy to staging today? Which port?"
        event = {"session_id": "demo", "seq": 1, "type": "user/message", "role": "user"}
        memory.ingest([parse_event({**event, "text": text})])
    for expected, actual in run_transcript(examples("skills.md")["assemble"], ingested):
        assert actual == expected


def test_the_category_table_is_the_code() -> None:
    doc = (REPO / "docs" / "skills.md").read_text(encoding="utf-8")
    for category, words in HEADING_KEYWORDS:
        assert f"| `{category}` | {', '.join(words)} |" in doc


def test_rules_list_json_is_the_contract(ingested: Path) -> None:
    from click.testing import CliRunner

    from memplug.cli.app import cli

    run_transcript("$ memory skills ingest skills\n", ingested)
    out = CliRunner().invoke(cli, ["--db", str(ingested), "rules", "list", "--json"])
    rules = json.loads(out.stdout)["rules"]
    assert {"key", "skill", "category", "text", "source_path", "line", "active"} <= set(rules[0])
    assert [(r["key"], r["line"]) for r in rules][:3] == [
        ("workflow-1", 9),
        ("workflow-2", 10),
        ("tag", 11),
    ]
