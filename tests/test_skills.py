"""Skill files → versioned rules: parsing, ingestion, overrides, and the CLI over them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec.structs import replace

from memplug.base.config import Config
from memplug.base.errors import UsageError, ValidationError
from memplug.base.text import glob_regex
from memplug.cli import main
from memplug.cli.app import cli
from memplug.derive.skills import (
    find_skill_files,
    ingest,
    override_rule,
    parse_rules,
    parse_skill,
)
from memplug.memory import Memory

REPO = Path(__file__).resolve().parent.parent
RELEASE = (REPO / "fixtures" / "skills" / "release" / "SKILL.md").read_text(encoding="utf-8")


def write_skill(root: Path, folder: str, text: str) -> Path:
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def categories(body: str) -> list[tuple[str, str]]:
    return [(r.key, r.category) for r in parse_rules(body.split("\n"))]


# -- parsing -----------------------------------------------------------------------------


def test_categories_come_from_headings_then_list_markers() -> None:
    body = """\
1. numbered, no heading
- bulleted, no heading
## Must not do
- never this
### Git
- nested under a constraint heading
## Coding conventions
1. a numbered style item
## 约束
- 不要直接推送
## Status of the cluster
- three nodes
## Miscellany
- plain bullet
2. plain step"""
    assert categories(body) == [
        ("rule-1", "workflow"),
        ("rule-2", "reference"),
        ("must-not-do-1", "constraint"),
        ("git-1", "constraint"),
        ("coding-conventions-1", "style"),
        ("约束-1", "constraint"),
        ("status-of-the-cluster-1", "current_state"),
        ("miscellany-1", "reference"),
        ("miscellany-2", "workflow"),
    ]


def test_a_sentence_never_decides_the_category() -> None:
    # "must" and "never" in the text itself are not structure: no heading, a bullet.
    assert categories("- You must never force-push.") == [("rule-1", "reference")]


def test_keys_lines_continuations_fences_and_checkboxes() -> None:
    text = RELEASE.replace("# Release", "# Release\n- [x] [done] checked off")
    skill = parse_skill(text, default_name="fallback")
    by_key = {r.key: r for r in skill.rules}
    assert skill.name == "release" and skill.enabled
    assert skill.when_to_use == "The user asks to release, deploy or tag a version."
    assert by_key["done"].text == "checked off"
    assert by_key["tag"].line == 12 and by_key["tag"].text.startswith("Tag the commit")
    assert by_key["constraints-1"].text == (
        "Do not force-push to `main`; ask the user first if history must change."
    )
    assert not any("code fence" in r.text for r in skill.rules)
    assert by_key["no-friday"].scope == {"section": "Release > Constraints"}


def test_a_byte_order_mark_does_not_hide_the_frontmatter() -> None:
    skill = parse_skill("\ufeff---\nname: bom\n---\n- one", default_name="x")
    assert skill.name == "bom" and [r.line for r in skill.rules] == [4]


def test_a_repeated_key_gets_a_suffix() -> None:
    lines = ["- [a] one", "- [a] two", "## A", "- three", "- [a-1] four"]
    assert [r.key for r in parse_rules(lines)] == ["a", "a-2", "a-1", "a-1-2"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("---\nname: [unclosed\n---\n- x", "not valid YAML"),
        ("---\nname: x\n- y", "never closed"),
        ("---\n- a\n- b\n---\n", "must be a mapping"),
        ("---\nenabled: maybe\n---\n", "'enabled' must be true or false"),
    ],
)
def test_bad_frontmatter_is_one_clear_error(text: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        parse_skill(text, default_name="x")


@given(
    st.lists(
        st.one_of(
            st.sampled_from(["## Steps", "## Rules", "```", "   cont", "", "- [k] keyed"]),
            st.text(alphabet="-*1. ab#[]`約束\n", max_size=12),
        ),
        max_size=25,
    )
)
@settings(max_examples=150, deadline=None)
def test_parsing_is_deterministic_and_keys_are_unique(lines: list[str]) -> None:
    first = parse_rules(lines)
    assert first == parse_rules(list(lines))
    keys = [r.key for r in first]
    assert len(keys) == len(set(keys))
    assert all(r.text and r.text == " ".join(r.text.split()) for r in first)


# -- finding files ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("**/SKILL.md", "SKILL.md", True),
        ("**/SKILL.md", "a/b/SKILL.md", True),
        ("*/SKILL.md", "a/b/SKILL.md", False),
        ("migrations/*.sql", "migrations/0001_init.sql", True),
        ("migrations/*.sql", "migrations/old/0001.sql", False),
        ("src/**", "src/a/b.py", True),
        ("a?c", "abc", True),
        ("a.c", "abc", False),
    ],
)
def test_glob_rules(pattern: str, path: str, matches: bool) -> None:
    assert bool(glob_regex(pattern).match(path)) is matches


def test_include_and_exclude_globs(tmp_path: Path) -> None:
    write_skill(tmp_path, "a", "- one")
    write_skill(tmp_path, "node_modules/pkg", "- hidden")
    (tmp_path / "a" / "README.md").write_text("- not a skill")
    config = Config().skills
    assert find_skill_files(tmp_path, config) == [tmp_path / "a" / "SKILL.md"]
    other = replace(config, include=("**/*.md",), exclude=())
    assert len(find_skill_files(tmp_path, other)) == 3


# -- ingestion ----------------------------------------------------------------------------


def table_rows(memory: Memory, table: str) -> list[tuple[object, ...]]:
    return [tuple(r) for r in memory.db.conn.execute(f"SELECT * FROM {table} ORDER BY 1")]


def test_reingesting_unchanged_files_changes_nothing(memory: Memory, tmp_path: Path) -> None:
    root = tmp_path / "skills"
    write_skill(root, "release", RELEASE)
    first = ingest(memory.store, root, memory.config.skills)
    assert (first.new, first.unchanged) == (1, 0)
    before = {t: table_rows(memory, t) for t in ("skill_versions", "skill_files", "rules")}
    again = ingest(memory.store, root, memory.config.skills)
    assert (again.new, again.changed, again.unchanged) == (0, 0, 1)
    assert {t: table_rows(memory, t) for t in before} == before


def test_a_changed_file_is_a_new_version_and_dropped_rules_turn_inactive(
    memory: Memory, tmp_path: Path
) -> None:
    root = tmp_path / "skills"
    path = write_skill(root, "release", RELEASE)
    ingest(memory.store, root, memory.config.skills)
    path.write_text(RELEASE.replace("- [no-friday] Never deploy on a Friday after 15:00.\n", ""))
    summary = ingest(memory.store, root, memory.config.skills)
    assert (summary.new, summary.changed) == (1, 1)
    versions = memory.db.conn.execute(
        "SELECT id, version, supersedes FROM skill_versions ORDER BY id"
    ).fetchall()
    assert [(v[1], v[2]) for v in versions] == [(1, None), (2, versions[0][0])]
    rule = memory.store.skills.rule_by_key("release", "no-friday")
    assert rule is not None and not rule.active and rule.version == 1
    path.write_text(RELEASE)
    ingest(memory.store, root, memory.config.skills)
    back = memory.store.skills.rule_by_key("release", "no-friday")
    assert back is not None and back.active and back.version == 3
    assert rule.id == back.id


def test_a_deleted_file_retires_its_skill_until_it_returns(memory: Memory, tmp_path: Path) -> None:
    root = tmp_path / "skills"
    path = write_skill(root, "release", RELEASE)
    broken = write_skill(root, "other", "- [k] kept")
    ingest(memory.store, root, memory.config.skills)
    broken.write_text("---\nname: [\n---\n")
    path.unlink()
    summary = ingest(memory.store, root, memory.config.skills)
    assert summary.removed == ["release"] and len(summary.errors) == 1
    skill = memory.store.skills.skill("release")
    assert skill is not None and skill.removed_at is not None and not skill.in_force
    assert memory.store.skills.rules(skill="release", active=True) == []
    assert memory.store.skills.rules(skill="other", active=True) != []
    assert ingest(memory.store, root, memory.config.skills).removed == []
    path.write_text(RELEASE)
    back = ingest(memory.store, root, memory.config.skills)
    assert (back.new, back.changed, back.removed) == (1, 1, [])
    again = memory.store.skills.skill("release")
    assert again is not None and again.in_force and again.version == 2
    assert len(memory.store.skills.rules(skill="release", active=True)) == 8


def test_overrides_survive_reingestion(memory: Memory, tmp_path: Path) -> None:
    root = tmp_path / "skills"
    path = write_skill(root, "release", RELEASE)
    ingest(memory.store, root, memory.config.skills)
    rule = override_rule(memory.store, "release:notes-1", category="constraint", active=False)
    assert (rule.category, rule.active, rule.overridden) == (
        "constraint",
        False,
        ("category", "active"),
    )
    path.write_text(RELEASE + "\n- one more note\n")
    ingest(memory.store, root, memory.config.skills)
    kept = memory.store.skills.rule(rule.id)
    assert kept is not None and (kept.category, kept.active) == ("constraint", False)
    cleared = override_rule(memory.store, rule.id, clear=True)
    assert (cleared.category, cleared.active, cleared.overridden) == ("reference", True, ())
    with pytest.raises(UsageError, match="nothing to override"):
        override_rule(memory.store, rule.id)
    with pytest.raises(UsageError, match="unknown category"):
        override_rule(memory.store, rule.id, category="vibes")


def test_a_bad_file_is_reported_and_the_others_are_ingested(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "skills"
    write_skill(root, "a", "---\nname: same\n---\n- first")
    write_skill(root, "b", "---\nname: same\n---\n- second")
    write_skill(root, "c", "---\nname: [\n---\n")
    write_skill(root, "d", "- fine")
    db = tmp_path / "m.sqlite"
    with pytest.raises(SystemExit) as exit_info:
        main(["--db", str(db), "skills", "ingest", str(root), "--json"])
    assert exit_info.value.code == 2
    data = json.loads(capsys.readouterr().out)
    assert data["new"] == 2 and [s["name"] for s in data["skills"]] == ["same", "d"]
    assert [e["path"].split("/")[-2] for e in data["errors"]] == ["b", "c"]
    assert "also defined by" in data["errors"][0]["error"]


# -- CLI ------------------------------------------------------------------------------------


@pytest.fixture
def ingested(tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    write_skill(root, "release", RELEASE)
    write_skill(root, "off", "---\nenabled: false\ndescription: parked\n---\n- [k] parked rule")
    db = tmp_path / "m.sqlite"
    out = CliRunner().invoke(cli, ["--db", str(db), "skills", "ingest", str(root)])
    assert out.exit_code == 0 and out.stdout == "2 new, 0 unchanged\n"
    return db


def invoke(db: Path, *args: str) -> Any:
    out = CliRunner().invoke(cli, ["--db", str(db), *args, "--json"])
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)


def test_cli_lists_shows_and_overrides(ingested: Path) -> None:
    skills = invoke(ingested, "skills", "list")["skills"]
    assert [(s["name"], s["enabled"], s["rules"]) for s in skills] == [
        ("off", False, 1),
        ("release", True, 8),
    ]
    rule = invoke(ingested, "rules", "show", "release:no-friday")
    assert (rule["category"], rule["line"]) == ("constraint", 14)
    assert invoke(ingested, "rules", "show", str(rule["id"]))["key"] == "no-friday"
    changed = invoke(
        ingested, "rules", "override", "release:no-friday", "--scope", '{"days": "Fri"}'
    )
    assert changed["scope"] == {"days": "Fri"} and changed["overridden"] == ["scope"]
    styles = invoke(ingested, "rules", "list", "--category", "style")["rules"]
    assert [r["key"] for r in styles] == ["style-1"]
    invoke(ingested, "rules", "override", "release:style-1", "--inactive")
    assert invoke(ingested, "rules", "list", "--inactive")["rules"][0]["key"] == "style-1"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["rules", "show", "release:nope"], "Error: no rule 'release:nope'"),
        (["rules", "show", "nope"], "Error: 'nope' is not a rule id (rule_…) or SKILL:KEY"),
        (
            ["rules", "override", "release:tag", "--scope", "[1]"],
            "Error: --scope must be a JSON object",
        ),
        (["rules", "override", "release:tag", "--clear", "--active"], "Error: --clear removes"),
        (["rules", "override", "release:tag", "--category", "vibes"], "Error: Invalid value"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(
    ingested: Path, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--db", str(ingested), *args])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1


@pytest.mark.parametrize(
    "args", [["skills", "list"], ["rules", "list"], ["validate", "--session", "s"]]
)
def test_reading_commands_create_nothing(tmp_path: Path, args: list[str]) -> None:
    missing = tmp_path / "none" / "m.sqlite"
    with pytest.raises(SystemExit) as exit_info:
        main(["--db", str(missing), *args])
    assert exit_info.value.code == 2 and not missing.parent.exists()
