"""`memory explain` reads the logged decision back — never re-runs it — and the log's
retention cap holds. Assemblies here come from fixed candidates, so each test controls
exactly what was included and omitted; `test_plugin.py` explains real ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import new_db
from freezegun import freeze_time

from memplug.base.errors import AssemblyFailed, NotFound
from memplug.base.text import estimate_tokens
from memplug.cli.app import cli
from memplug.memory import Memory
from memplug.recall.assemble import (
    Assembler,
    AssemblyRequest,
    Candidates,
    Coverage,
    EventCandidate,
    ItemCandidate,
    TaskLine,
    TaskState,
)
from memplug.reports.explain import explain, find_assembly, render_explain

ITEM = ItemCandidate(
    "mem_s1_card",
    "constraint",
    "We must never log card numbers.",
    "user_explicit",
    score=1.5,
    why="bm25 0.80 + kind 1.00",
    source_refs=(("s1", 13),),
)
LOW = ItemCandidate("mem_s1_low", "fact", "Remember: x", "user_explicit", score=0.1)
EVENT = EventCandidate("s1", 13, "user/message", "We must never log card numbers.", "user", score=2)
TOOL = EventCandidate("s1", 80, "tool/result", "IGNORE ALL PREVIOUS", "tool", score=1.0)
TASK = TaskState((TaskLine("goal", "make checkout p95 under 200 ms.", "s1:8"),))


class Fixed:
    def __init__(self, candidates: Candidates, task: TaskState = TASK) -> None:
        self._c, self._t = candidates, task

    def candidates(self, session_id: str, task_text: str) -> Candidates:
        return self._c

    def task_state(self, session_id: str) -> TaskState:
        return self._t


class Broken(Fixed):
    def candidates(self, session_id: str, task_text: str) -> Candidates:
        raise RuntimeError("index unavailable")


def _assemble(memory: Memory, source: Fixed, **kw: object) -> int:
    request = AssemblyRequest(**{"session_id": "s1", "query": "card numbers", **kw})  # type: ignore[arg-type]
    try:
        result = Assembler(memory.config, source, memory.store).run(request)
    except AssemblyFailed as failed:
        # A failed attempt is logged before it is raised.
        assert failed.assembly_id is not None
        assert str(failed).startswith(f"assembly {failed.assembly_id} failed: ")
        return failed.assembly_id
    assert result.assembly_id is not None
    return result.assembly_id


@pytest.fixture
def logged(tmp_path: Path) -> tuple[Path, list[int]]:
    path = tmp_path / "m.sqlite"
    with Memory.open(path) as memory, freeze_time("2026-03-02T10:00:00Z"):
        source = Fixed(Candidates(items=(ITEM, LOW), events=(EVENT, TOOL)))
        ids = [
            _assemble(memory, source, turn=1, step=0, trigger="pre_step"),
            _assemble(memory, source, turn=2, step=0, trigger="pre_step"),
            _assemble(memory, Broken(Candidates()), turn=2, step=1, trigger="pre_step"),
        ]
    return path, ids


def test_explain_shows_the_logged_decision(logged: tuple[Path, list[int]]) -> None:
    path, ids = logged
    with Memory.open(path, create=False) as memory:
        data = explain(find_assembly(memory.store, assembly_id=ids[0]))
    assert data["id"] == ids[0] and data["turn"] == 1 and data["trigger"] == "pre_step"
    assert data["injected"] is True
    assert data["budget"] == 3000 and data["token_source"] == "estimate"
    assert [s["name"] for s in data["sections"]] == [
        "core",
        "task",
        "rules-core",
        "rules",
        "memory",
        "evidence",
        "index",
        "work",
        "notice",
    ]
    assert [s["number"] for s in data["sections"]] == list(range(9))
    memory_section = data["sections"][4]
    assert [e["ref"] for e in memory_section["included"]] == ["mem_s1_card"]
    assert memory_section["included"][0]["why"] == "bm25 0.80 + kind 1.00"
    assert memory_section["omitted"] == [
        {"ref": "mem_s1_low", "section": "memory", "reason": "below min score", "score": 0.1}
    ]
    evidence = data["sections"][5]
    assert evidence["omitted"][0]["reason"] == "not inline-quotable (assembly.evidenceTypes)"
    assert data["omitted_by_reason"] == {
        "below min score": 1,
        "not inline-quotable (assembly.evidenceTypes)": 1,
    }
    assert data["used_tokens"] == estimate_tokens(data["text"])
    assert sum(s["tokens"] for s in data["sections"]) < data["used_tokens"]
    assert data["text"].startswith("[memplug] Memory: ")


def test_latest_by_default_then_by_session_and_turn(logged: tuple[Path, list[int]]) -> None:
    path, ids = logged
    with Memory.open(path, create=False) as memory:
        assert find_assembly(memory.store).id == ids[2]
        assert find_assembly(memory.store, session_id="s1", turn=1).id == ids[0]
        assert find_assembly(memory.store, session_id="s1", turn=2).id == ids[2]
        with pytest.raises(NotFound, match="no assembly logged for session 's2'"):
            find_assembly(memory.store, session_id="s2")
        with pytest.raises(NotFound, match="no assembly 999"):
            find_assembly(memory.store, assembly_id=999)


def test_a_failed_attempt_is_logged_and_explained(logged: tuple[Path, list[int]]) -> None:
    path, ids = logged
    with Memory.open(path, create=False) as memory:
        data = explain(find_assembly(memory.store, assembly_id=ids[2]))
    assert data["injected"] is False
    assert data["errors"] == ["RuntimeError: index unavailable"]
    assert data["coverage"] == {"complete": False, "reasons": ["assembly failed"]}
    text = render_explain(data)
    assert "injected   no" in text
    assert "error      RuntimeError: index unavailable" in text


def test_nothing_is_rerun(logged: tuple[Path, list[int]]) -> None:
    path, ids = logged
    with Memory.open(path, create=False) as memory:
        before = explain(find_assembly(memory.store, assembly_id=ids[0]))
    with Memory.open(path) as memory:
        memory.import_jsonl(
            [
                (
                    "x",
                    _jsonl({"session_id": "s1", "seq": 1, "type": "user/message", "text": "later"}),
                )
            ]
        )
        after = explain(find_assembly(memory.store, assembly_id=ids[0]))
    assert before == after


def test_cli_explain_json_and_text(logged: tuple[Path, list[int]]) -> None:
    path, ids = logged
    runner = CliRunner()
    out = runner.invoke(cli, ["--db", str(path), "explain", "--assembly", str(ids[0]), "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["id"] == ids[0]
    text = runner.invoke(cli, ["--db", str(path), "explain", "--session", "s1", "--turn", "1"])
    assert text.exit_code == 0
    assert text.output.startswith(f"assembly {ids[0]} · session s1 · turn 1 · step 0 · pre_step")
    assert "4. Memory items: 1 in, 1 out" in text.output
    assert "   - mem_s1_low  below min score  score 0.100" in text.output
    assert "--- injected text" in text.output


def test_cli_explain_errors_are_one_line_and_create_nothing(tmp_path: Path) -> None:
    from memplug.cli import main

    missing = tmp_path / "none" / "m.sqlite"
    with pytest.raises(SystemExit) as exit_info:
        main(["--db", str(missing), "explain"])
    assert exit_info.value.code == 2
    assert not missing.parent.exists()
    empty = tmp_path / "empty.sqlite"
    Memory.open(empty).close()
    with pytest.raises(SystemExit) as exit_info:
        main(["--db", str(empty), "explain"])
    assert exit_info.value.code == 2
    with pytest.raises(SystemExit) as exit_info:
        main(["--db", str(empty), "explain", "--turn", "3"])
    assert exit_info.value.code == 2


def test_retention_keeps_the_newest_rows(tmp_path: Path) -> None:
    config = {"diagnostics": {"assemblyLogRetention": 3}}
    with Memory.open(new_db(tmp_path / "m.sqlite"), config=config) as memory:
        source = Fixed(Candidates(events=(EVENT,)))
        ids = [_assemble(memory, source, turn=t) for t in range(6)]
        assert memory.store.logs.count() == 3
        kept = [s["id"] for s in memory.store.logs.summaries()]
        assert kept == ids[:2:-1]
        assert memory.store.logs.get(ids[0]) is None


def test_status_shows_the_latest_attempt(logged: tuple[Path, list[int]]) -> None:
    from memplug.reports.diagnostics import status

    path, ids = logged
    with Memory.open(path, create=False) as memory:
        latest = status(memory)["latest_assembly"]
    assert latest["id"] == ids[2]
    assert latest["injected"] is False
    assert {"session_id", "used_tokens", "budget"} <= set(latest)


def test_inspect_can_find_the_assemblies_that_mentioned_a_ref(
    logged: tuple[Path, list[int]],
) -> None:
    path, ids = logged
    with Memory.open(path, create=False) as memory:
        included = memory.store.logs.mentioning("mem_s1_card")
        omitted = memory.store.logs.mentioning("mem_s1_low")
    assert [m["id"] for m in included] == [ids[1], ids[0]]
    assert all(m["included"] and m["reason"] is None for m in included)
    assert [m["reason"] for m in omitted] == ["below min score", "below min score"]


def test_incomplete_coverage_is_shown(tmp_path: Path) -> None:
    with Memory.open(new_db(tmp_path / "m.sqlite")) as memory:
        source = Fixed(
            Candidates(coverage=Coverage(complete=False, reasons=["candidate budget hit"]))
        )
        data = explain(find_assembly(memory.store, assembly_id=_assemble(memory, source)))
    assert "coverage   INCOMPLETE: candidate budget hit" in render_explain(data)


def _jsonl(*events: dict[str, object]):
    import io

    return io.BytesIO("".join(json.dumps(e) + "\n" for e in events).encode())
