"""Sections 2-3 of the assembled message: the resident skill core and task-relevant rules."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from memplug.base.models import parse_event
from memplug.derive.skills import ingest
from memplug.memory import Memory
from memplug.recall.assemble import AssemblyRequest, AssemblyResult
from memplug.reports.explain import explain, find_assembly

REPO = Path(__file__).resolve().parent.parent
SKILLS = REPO / "fixtures" / "skills"
OPS = """\
---
name: ops
description: Operate the cluster.
---
## Steps
1. Check the dashboard.
2. Page the on-call.
3. Write the incident note.

## Rules
- [port] The metrics port is 9090, never 9091.
- [disk] Keep disk usage under 80% on staging nodes.
- [logs] Ship logs to the central store.
"""


def prepared(db: Path, *, config: dict[str, object] | None = None, extra: str = OPS) -> Memory:
    """The fixture skills and ``extra`` ingested as ``skills/`` from the database's folder
    (a relative path, so the rules' source paths do not name the temp folder)."""
    memory = Memory.open(db, config=config)
    root = db.parent / "skills"
    shutil.copytree(SKILLS, root, dirs_exist_ok=True)
    (root / "ops").mkdir(exist_ok=True)
    (root / "ops" / "SKILL.md").write_text(extra, encoding="utf-8")
    cwd = os.getcwd()
    os.chdir(db.parent)
    try:
        assert not ingest(memory.store, "skills", memory.config.skills).errors
    finally:
        os.chdir(cwd)
    event = {"session_id": "s1", "seq": 1, "type": "user/message", "role": "user", "text": "hi"}
    memory.ingest([parse_event(event)])
    return memory


def assemble(memory: Memory, query: str) -> AssemblyResult:
    return memory.assemble(AssemblyRequest("s1", query=query))


def refs(result: AssemblyResult, section: str) -> list[str]:
    return [e.ref for e in result.included if e.section == section]


def test_the_core_lists_every_enabled_skill_and_its_steps(db_path: Path) -> None:
    result = assemble(prepared(db_path, config={"skills": {"coreMaxLines": 2}}), "hello")
    assert refs(result, "rules-core") == [
        "skill:ops",
        "rule:ops:steps-1",
        "rule:ops:steps-2",
        "skill:release",
        "rule:release:workflow-1",
        "rule:release:workflow-2",
    ]
    cut = [(o.ref, o.reason) for o in result.omitted if o.section == "rules-core"]
    assert cut == [("rule:ops:steps-3", "over limit"), ("rule:release:tag", "over limit")]
    assert (
        "- [skill ops] Operate the cluster.\n- [rule ops:steps-1] Check the dashboard."
        in result.text
    )


def test_a_numeric_symbol_of_the_query_pins_its_rule_first(db_path: Path) -> None:
    result = assemble(prepared(db_path), "staging disk or port 9090?")
    assert refs(result, "rules")[:2] == ["rule:ops:port", "rule:ops:disk"]
    line = next(e for e in result.included if e.ref == "rule:ops:port")
    assert line.why == "9090, port"
    assert "- [rule ops:port] constraint: The metrics port is 9090, never 9091. (" in result.text
    assert "(skills/ops/SKILL.md:11)" in result.text


def test_unrelated_rules_are_not_candidates_and_weak_ones_are_logged(db_path: Path) -> None:
    memory = prepared(db_path, config={"skills": {"minRuleScore": 0.3, "rulesLimit": 1}})
    result = assemble(memory, "ship logs from staging, which port and disk?")
    assert len(refs(result, "rules")) == 1
    out = {o.ref: o.reason for o in result.omitted if o.section == "rules"}
    assert sorted(out.values()) == ["below min score", "below min score", "over limit"]
    assert "rule:release:style-1" not in out  # shares nothing with the task
    logged = explain(find_assembly(memory.store))
    section = next(s for s in logged["sections"] if s["name"] == "rules")
    assert {o["ref"] for o in section["omitted"]} == set(out)


def test_rules_are_budgeted_like_every_line(db_path: Path) -> None:
    config = {"assembly": {"softBudgetTokens": 0, "minBudgetTokens": 200}}
    result = assemble(prepared(db_path, config=config), "staging port")
    assert result.used_tokens <= 200
    over = [o.ref for o in result.omitted if o.reason == "over budget"]
    assert any(r.startswith("rule:") or r.startswith("skill:") for r in over)


def test_disabled_skills_and_inactive_rules_stay_out(db_path: Path) -> None:
    memory = prepared(db_path, extra=OPS.replace("name: ops", "name: ops\nenabled: false"))
    from memplug.derive.skills import override_rule

    override_rule(memory.store, "release:current-state-1", active=False)
    result = assemble(memory, "staging port 9090 5433")
    assert not any("ops" in r for r in refs(result, "rules-core") + refs(result, "rules"))
    assert "rule:release:current-state-1" not in refs(result, "rules")


def test_same_skills_and_events_give_the_same_bytes_in_another_database(tmp_path: Path) -> None:
    texts = []
    for name in ("a", "b"):
        memory = prepared(tmp_path / name / "m.sqlite", config={"assembly": {"locale": "zh"}})
        texts.append(assemble(memory, "部署到 staging 用哪个 port？").text)
        memory.close()
    assert texts[0] == texts[1]
    assert "## 技能核心" in texts[0] and "当前状态：Staging runs on port 5433" in texts[0]
    assert "⚠ 动态状态" in texts[0]


@given(
    st.lists(
        st.sampled_from(["## Steps", "## Style", "- a rule", "1. a step", "- [k] keyed", "text"]),
        max_size=12,
    )
)
@settings(max_examples=25, deadline=None)
def test_ingesting_twice_changes_nothing(lines: list[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "skills"
        (root / "x").mkdir(parents=True)
        (root / "x" / "SKILL.md").write_text("\n".join(lines), encoding="utf-8")
        with Memory.open(Path(folder) / "m.sqlite") as memory:
            first = ingest(memory.store, root, memory.config.skills)
            rules = memory.store.skills.rules()
            second = ingest(memory.store, root, memory.config.skills)
            assert (first.new, second.new, second.unchanged) == (1, 0, 1)
            assert memory.store.skills.rules() == rules
