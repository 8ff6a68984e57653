"""The resident project core (assembly section 0, `memory core`) on real database files."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memplug.cli.app import cli
from memplug.memory import Memory
from memplug.recall.assemble import AssemblyRequest
from memplug.recall.core import MAX_LINES, OVER_CORE_BUDGET, resident_core, scope_for_project
from memplug.reports.explain import explain, find_assembly, render_explain

CWD = "/home/ana/payments-api"


def _import(memory: Memory, events: list[dict[str, Any]]) -> None:
    data = "\n".join(json.dumps(e, ensure_ascii=False) for e in events) + "\n"
    summary = memory.import_jsonl([("-", io.BytesIO(data.encode("utf-8")))])
    assert not summary.rejected, summary.rejected


def _time(seq: int) -> str:
    return f"2026-03-02T09:{seq // 60:02d}:{seq % 60:02d}Z"


def _turns(
    session: str, texts: list[str], *, cwd: str = CWD, start: int = 1
) -> list[dict[str, Any]]:
    return [
        {"session_id": session, "seq": start + i, "type": "user/message", "role": "user",
         "text": text, "cwd": cwd, "time": _time(start + i)}
        for i, text in enumerate(texts)
    ]  # fmt: skip


def _standing(memory: Memory) -> None:
    _import(
        memory,
        _turns(
            "pay-1",
            [
                "Never log card numbers, not even masked ones.",
                "Decision: we retry webhooks three times.",
                "I suggest we add a circuit breaker.",
                "Open question: do refunds need a second approval?",
                "Decision: refunds go through the ledger service.",
                "Goal: ship structured traces for refunds.",
            ],
        ),
    )


def test_the_core_holds_standing_memory_in_its_documented_order(memory: Memory) -> None:
    _standing(memory)
    core = resident_core(memory.store, memory.config, scope_for_project(memory.store, CWD))
    data = core.as_dict(500)
    assert [line["kind"] for line in data["lines"]] == [
        "constraint",
        "task",
        "decision",
        "decision",
        "open_question",
    ]
    texts = [line["text"] for line in data["lines"]]
    assert "card numbers" in texts[0]
    # Decisions newest first; an assistant's proposal is never standing memory.
    assert "ledger" in texts[2] and "retry" in texts[3]
    assert not any("circuit breaker" in t for t in texts)
    assert all(line["why"] for line in data["lines"])
    # Every item line carries its provenance.
    lines = {line.ref: line.line for line in core.lines}
    for ref in (line["ref"] for line in data["lines"] if line["kind"] != "task"):
        assert f"[mem {ref}]" in lines[ref] and "[ev pay-1:" in lines[ref]
    assert data["tokens"] == sum(line.tokens for line in core.lines)


def test_over_budget_the_order_decides_and_the_rest_is_omitted_with_a_reason(
    memory: Memory,
) -> None:
    _standing(memory)
    core = resident_core(memory.store, memory.config, scope_for_project(memory.store, CWD))
    first = core.lines[0].tokens
    data = core.as_dict(first)
    assert [line["ref"] for line in data["lines"]] == [core.lines[0].ref]
    assert [o["reason"] for o in data["omitted"]] == [OVER_CORE_BUDGET] * (len(core.lines) - 1)
    assert data["tokens"] <= first


def test_the_core_is_cached_by_the_version_of_its_inputs(memory: Memory) -> None:
    _standing(memory)
    scope = scope_for_project(memory.store, CWD)
    made = resident_core(memory.store, memory.config, scope)
    again = resident_core(memory.store, memory.config, scope)
    assert (made.cached, again.cached) == (False, True)
    assert again.lines == made.lines and again.version == made.version
    # A new standing item changes the version: the core is made again, with it.
    _import(memory, _turns("pay-1", ["We must keep refunds idempotent."], start=7))
    changed = resident_core(memory.store, memory.config, scope)
    assert not changed.cached and changed.version != made.version
    assert any("idempotent" in line.text for line in changed.lines)
    # Retracting an item is a lifecycle event: it leaves the core.
    target = next(line.ref for line in changed.lines if "idempotent" in line.text)
    memory.extractor.retract(target)
    after = resident_core(memory.store, memory.config, scope)
    assert target not in [line.ref for line in after.lines]


def test_purge_and_rebuild_drop_every_cached_core(memory: Memory) -> None:
    _standing(memory)
    scope = scope_for_project(memory.store, CWD)
    resident_core(memory.store, memory.config, scope)
    assert memory.store.core.cached(scope.key) is not None
    memory.extractor.rebuild()
    assert memory.store.core.cached(scope.key) is None
    resident_core(memory.store, memory.config, scope)
    from memplug.reports.purge import purge

    purge(memory, sessions=["pay-1"])
    assert memory.store.core.cached(scope.key) is None
    cached = memory.db.conn.execute("SELECT count(*) FROM meta WHERE value LIKE '%card%'")
    assert cached.fetchone()[0] == 0


def test_same_events_give_the_same_core_bytes_in_two_databases(tmp_path: Path) -> None:
    cores = []
    for name in ("a", "b"):
        with Memory.open(tmp_path / name / "m.sqlite") as memory:
            _standing(memory)
            core = resident_core(memory.store, memory.config, scope_for_project(memory.store, CWD))
            cores.append(json.dumps(core.as_dict(500), sort_keys=True))
    assert cores[0] == cores[1]


def test_an_early_constraint_is_injected_after_compaction_for_an_unrelated_prompt(
    memory: Memory,
) -> None:
    events = _turns(
        "pay-1", ["We're on the payments API. Never log card numbers, not even masked ones."]
    )
    for i in range(40):
        events += _turns(
            "pay-1", [f"Next, look at the flaky integration test on CI (step {i})."], start=2 + i
        )
    events.append(
        {"session_id": "pay-1", "seq": 50, "type": "compaction/summary", "role": "system",
         "text": "Summary: worked on CI.", "cwd": CWD,
         "source": {"kind": "harness", "form": "compaction"}}
    )  # fmt: skip
    _import(memory, events)
    prompt = "Now make the refund handler emit structured traces."
    result = memory.assemble(AssemblyRequest("pay-1", query=prompt))
    assert result.injected
    assert "card numbers" in result.text.lower()
    assert result.text.index("## Project core") < result.text.index("card numbers")
    core_refs = [e.ref for e in result.included if e.section == "core"]
    assert core_refs and result.included[0].section == "core"
    # The same constraint still in the model's context is not repeated.
    from memplug.base.models import Message

    seen = memory.assemble(
        AssemblyRequest(
            "pay-1", query=prompt, messages=(Message(role="user", text=events[0]["text"]),)
        )
    )
    assert "card numbers" not in seen.text.lower()
    record = explain(find_assembly(memory.store, assembly_id=seen.assembly_id))
    core = next(s for s in record["sections"] if s["name"] == "core")
    assert core["number"] == 0
    assert any(o["reason"] == "visible in context" for o in core["omitted"])


def test_one_oversized_tool_result_does_not_make_a_nonsense_query_inject(memory: Memory) -> None:
    big = "\n".join(f"tests/test_mod{i}.py::test_case_{i} PASSED" for i in range(700))
    assert len(big) > 25_000
    _import(
        memory,
        [
            {"session_id": "big-1", "seq": 1, "type": "user/message", "role": "user",
             "text": "Run the test suite and show me the output.", "cwd": "/home/ana/big"},
            {"session_id": "big-1", "seq": 2, "type": "tool/result", "role": "tool",
             "tool_name": "Bash", "text": big, "cwd": "/home/ana/big"},
            {"session_id": "big-1", "seq": 3, "type": "assistant/message", "role": "assistant",
             "text": "All 700 tests passed.", "cwd": "/home/ana/big"},
        ],
    )  # fmt: skip
    result = memory.assemble(AssemblyRequest("big-1", query="xyzzy frobnicate quuxbar"))
    assert not result.injected and result.text == ""
    assert result.coverage.complete
    assert result.why_not == "nothing in scope matched the query, and nothing resident is missing"
    # A term that sits only in the unindexed tail does make it incomplete, and says so.
    tail = memory.assemble(AssemblyRequest("big-1", query="test_case_699"))
    assert "truncated_events" in tail.coverage.reasons


def test_pre_step_on_a_session_with_no_events_says_why_it_returned_nothing(
    memory: Memory,
) -> None:
    from memplug.plugin import Plugin

    plugin = Plugin(memory)
    assert plugin.pre_step({"session_id": "brand-new", "query": "what did we decide?"}) is None
    assert plugin.last_result is not None
    why = plugin.last_result.why_not
    assert why == "session 'brand-new' has no events yet: nothing to recall"
    record = explain(find_assembly(memory.store, assembly_id=plugin.last_result.assembly_id))
    assert record["why_not"] == why
    assert f"injected   no (budget 3000 tokens, estimate): {why}" in render_explain(record)


def test_a_session_with_no_events_gets_the_core_of_the_project_its_host_names(
    memory: Memory,
) -> None:
    _standing(memory)
    named = memory.assemble(AssemblyRequest("fresh", project=CWD))
    assert named.injected and "card numbers" in named.text
    assert not memory.assemble(AssemblyRequest("fresh", project="/elsewhere")).injected


def test_memory_core_cli(db_path: Path) -> None:
    with Memory.open(db_path) as memory:
        _standing(memory)
    runner = CliRunner()
    out = runner.invoke(cli, ["--db", str(db_path), "core", "--project", CWD, "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["project"] == CWD
    assert {"ref", "kind", "text", "why"} == set(data["lines"][0])
    assert data["tokens"] > 0
    text = runner.invoke(cli, ["--db", str(db_path), "core", "--project", CWD])
    assert text.output.startswith(f"core of project {CWD}: 5 lines")
    whole = json.loads(runner.invoke(cli, ["--db", str(db_path), "core", "--json"]).output)
    assert whole["project"] is None and whole["lines"] == data["lines"]
    from memplug.cli import main

    for args, where in ((["--project", "/nope"], db_path), ([], db_path.parent / "none.sqlite")):
        with pytest.raises(SystemExit) as exit_info:
            main(["--db", str(where), "core", *args])
        assert exit_info.value.code == 2
    assert not (db_path.parent / "none.sqlite").exists()


def test_a_zero_core_budget_turns_the_core_off(db_path: Path) -> None:
    with Memory.open(db_path, config={"assembly": {"coreBudgetTokens": 0}}) as memory:
        _standing(memory)
        result = memory.assemble(AssemblyRequest("pay-1", query="xyzzy"))
        assert not any(e.section == "core" for e in result.included)


def _expected_order(memory: Memory, kind: str) -> list[str]:
    """Items of ``kind`` in the core's documented order, worked out here from the rows."""
    rows = [
        row
        for session in ("a", "b")
        for row in memory.store.items.session_items(session, ["active", "disputed"])
        if row.kind == kind
    ]
    times = {
        (e.session_id, e.seq): e.event_time or ""
        for session in ("a", "b")
        for e in memory.store.events.session_events(session)
    }
    rows.sort(
        key=lambda r: (times[(r.session_id, r.derived_from_seq)], r.session_id,
                       r.derived_from_seq, r.id),
        reverse=True,
    )  # fmt: skip
    return [r.id for r in rows]


def test_the_core_keeps_its_first_max_lines_in_order_over_many_items(memory: Memory) -> None:
    # Two sessions stating things at the same host times: ties go to session, seq, id.
    # Read only the first MAX_LINES of a kind, the lines must be the ones sorting every
    # item would give, cut at MAX_LINES across the kinds in CORE_ORDER.
    many = MAX_LINES // 2 + 10
    for session in ("a", "b"):
        # b states one more, so the cut falls between the two items of one host time.
        count = many + (session == "b")
        texts = [f"Never deploy service number {n} of {session} on a Friday." for n in range(count)]
        texts += [f"Decision: refunds use queue {n} of {session}." for n in range(3)]
        texts += ["Goal: ship structured traces for refunds."]
        _import(memory, _turns(session, texts))
    scope = scope_for_project(memory.store, CWD)
    lines = resident_core(memory.store, memory.config, scope).lines
    constraints = _expected_order(memory, "constraint")
    assert len(constraints) == 2 * many + 1 > MAX_LINES
    assert [line.ref for line in lines] == constraints[:MAX_LINES]


def test_the_core_fills_up_to_max_lines_across_kinds(memory: Memory) -> None:
    many = MAX_LINES // 2 + 10
    for session in ("a", "b"):
        texts = [f"Never deploy service {n} of {session} on a Friday." for n in range(2)]
        texts += [f"Decision: refunds use queue number {n} of {session}." for n in range(many)]
        texts += [f"Open question: is region {session} ready?", "Goal: ship traces."]
        _import(memory, _turns(session, texts))
    scope = scope_for_project(memory.store, CWD)
    lines = resident_core(memory.store, memory.config, scope).lines
    kinds = [line.kind for line in lines]
    constraints = _expected_order(memory, "constraint")
    decisions = _expected_order(memory, "decision")
    tasks = kinds.count("task")
    assert len(constraints) == 4 and tasks > 0
    assert kinds == ["constraint"] * 4 + ["task"] * tasks + ["decision"] * (MAX_LINES - 4 - tasks)
    items = [line.ref for line in lines if line.kind != "task"]
    assert items == constraints + decisions[: MAX_LINES - 4 - tasks]
