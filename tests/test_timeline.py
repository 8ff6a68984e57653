"""The timeline: derived from events and items, deterministic, paged, scoped."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from derived_state import dump, ev
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memplug.base.models import HostEvent
from memplug.cli import main
from memplug.cli.app import cli
from memplug.memory import Memory

CWD = "/home/ana/api"


def api_session(session: str = "s1", cwd: str = CWD) -> list[HostEvent]:
    """A small working session touching every kind of timeline entry."""
    call = {"file_path": "src/api/main.py", "old_string": "a", "new_string": "b"}
    return [
        ev(session, 1, "Session started.", type="session/start", role="system", cwd=cwd),
        ev(session, 2, "Decision: the service runs on uvicorn==0.30.1 behind nginx.", cwd=cwd),
        ev(session, 3, "Edit " + json.dumps(call), type="tool/call", tool_name="Edit",
           call_id="e1", cwd=cwd),
        ev(session, 4, "ok", type="tool/result", tool_name="Edit", call_id="e1",
           outcome="succeeded", cwd=cwd),
        ev(session, 5, "remember: the API port is 8080", cwd=cwd),
        ev(session, 6, 'Bash {"command":"pytest tests/test_api.py"}', type="tool/call",
           tool_name="Bash", call_id="b1", cwd=cwd),
        ev(session, 7, "\nE   ConnectionRefusedError: localhost:8080\nmore", type="tool/result",
           tool_name="Bash", call_id="b1", outcome="failed", is_error=True, cwd=cwd),
        ev(session, 8, "We must never commit .env files", cwd=cwd),
        ev(session, 9, "Conversation compacted", type="compaction/start", role="system",
           source={"kind": "compaction-checkpoint"}, cwd=cwd),
        ev(session, 10, "correction: the API port is 9090", cwd=cwd),
        ev(session, 11, "I suggest we cache tokens", type="assistant/message", cwd=cwd),
        ev(session, 12, "Session ended.", type="session/end", role="system", cwd=cwd),
    ]  # fmt: skip


def kinds(page: dict[str, Any]) -> list[str]:
    return [entry["kind"] for entry in page["entries"]]


def test_each_kind_of_entry_with_its_provenance(memory: Memory) -> None:
    memory.ingest(api_session())
    page = memory.timeline.query(scope="global", limit=100)
    assert kinds(page) == [
        "session_started", "decision", "file_touched", "tool_succeeded", "tool_failed",
        "constraint", "compaction", "session_ended",
    ]  # fmt: skip
    entries = {e["kind"]: e for e in page["entries"]}
    failed = entries["tool_failed"]
    # A tool outcome spans its call and its result; the text is the first line of output.
    assert (failed["seq_from"], failed["seq_to"]) == (6, 7)
    assert failed["text"] == "Bash failed: E   ConnectionRefusedError: localhost:8080"
    assert failed["event_time"] == "2026-03-02T09:00:07Z"
    assert failed["ingested_at"]  # read from the event, never copied into derived rows
    assert entries["file_touched"]["text"] == "Edit /home/ana/api/src/api/main.py"
    assert entries["file_touched"]["entities"] == ["file:/home/ana/api/src/api/main.py"]
    decision = entries["decision"]
    assert decision["ref"].startswith("mem_") and decision["status"] == "active"
    assert "package:uvicorn" in decision["entities"]
    assert entries["session_started"]["text"] == f"session started in {CWD}"
    assert page["scope"] == "global" and page["coverage"] == {"complete": True, "reasons": []}
    assert all(e["scope"] == f"project:{CWD}" for e in page["entries"])


def test_a_follow_token_reads_the_entry_s_events(memory: Memory) -> None:
    memory.ingest(api_session())
    page = memory.timeline.query(scope="global", kinds=["tool_failed"])
    [entry] = page["entries"]
    expanded = memory.retriever.expand(entry["follow"])
    assert [(e.seq, e.type) for e in expanded.events] == [(6, "tool/call"), (7, "tool/result")]


def test_an_item_shows_with_its_kind_and_status_when_read(memory: Memory) -> None:
    memory.ingest(api_session())
    [proposal] = [i for i in memory.store.items.find() if i.kind == "proposal"]
    assert "decision" not in kinds(memory.timeline.query(scope="global", kinds=["decision"]))[1:]
    memory.extractor.promote(proposal.id)
    decisions = memory.timeline.query(scope="global", kinds=["decision"])["entries"]
    assert [d["text"] for d in decisions][-1] == "I suggest we cache tokens"
    memory.extractor.retract(proposal.id)
    decisions = memory.timeline.query(scope="global", kinds=["decision"])["entries"]
    assert decisions[-1]["status"] == "retracted"


def timeline_state(memory: Memory) -> dict[str, Any]:
    full = dump(memory)
    return {t: full[t] for t in ("timeline_entries", "graph_entities", "graph_edges")}


_FIXTURES_OK = [HealthCheck.function_scoped_fixture]


@settings(max_examples=8, deadline=None, suppress_health_check=_FIXTURES_OK)
@given(order=st.permutations(range(12)), cut=st.integers(1, 11))
def test_any_delivery_order_gives_identical_rows_and_ids(
    tmp_path_factory: pytest.TempPathFactory, order: list[int], cut: int
) -> None:
    events = api_session() + api_session("s2", cwd="/home/ana/web")
    folder = tmp_path_factory.mktemp("orders")
    with Memory.open(folder / "a.sqlite") as ordered, Memory.open(folder / "b.sqlite") as shuffled:
        ordered.ingest(events)
        scrambled = [events[i] for i in order] + [events[12 + i] for i in reversed(order)]
        shuffled.ingest(scrambled[:cut])
        shuffled.ingest(scrambled[cut:])
        want = timeline_state(ordered)
        assert want["timeline_entries"] and want["graph_edges"]
        assert timeline_state(shuffled) == want
        shuffled.extractor.rebuild()
        assert timeline_state(shuffled) == want


def test_pages_follow_with_tokens_pinned_to_their_snapshot(memory: Memory) -> None:
    memory.ingest(api_session())
    whole = memory.timeline.query(scope="global", limit=100)["entries"]
    first = memory.timeline.query(scope="global", limit=4)
    assert first["total"] == len(whole) and first["next"]
    # Events arriving between pages do not shift what the token continues.
    memory.ingest([ev("s1", 13, "Decision: also ship a CLI.", cwd=CWD)])
    seen = list(first["entries"])
    page = first
    while page["next"]:
        page = memory.timeline.page(page["next"])
        seen += page["entries"]
    assert [e["id"] for e in seen] == [e["id"] for e in whole]
    assert len(memory.timeline.query(scope="global", limit=100)["entries"]) == len(whole) + 1


def test_filters_time_entity_and_kind(memory: Memory) -> None:
    memory.ingest(api_session())
    since = memory.timeline.query(scope="global", since="2026-03-02T09:00:06Z")
    assert kinds(since)[0] == "tool_failed"
    until = memory.timeline.query(scope="global", until="2026-03-02T09:00:03Z")
    assert kinds(until) == ["session_started", "decision"]
    touched = memory.timeline.query(scope="global", entity="src/api/main.py")
    assert kinds(touched) == ["file_touched", "tool_succeeded"]
    by_id = memory.timeline.query(scope="global", entity="package:uvicorn")
    assert kinds(by_id) == ["decision"]


def test_scope_defaults_to_the_current_context_and_is_reported(memory: Memory) -> None:
    memory.ingest(api_session() + api_session("w1", cwd="/home/ana/web"))
    here = memory.timeline.query(cwd=CWD)
    assert here["scope"] == f"project:{CWD}"
    assert {e["session_id"] for e in here["entries"]} == {"s1"}
    assert memory.timeline.query(cwd="/somewhere/else")["scope"] == "global"
    assert memory.timeline.query(session="w1")["scope"] == "project:/home/ana/web"
    one = memory.timeline.query(scope="session:w1")
    assert one["scope"] == "session:w1" and {e["session_id"] for e in one["entries"]} == {"w1"}


def test_lagging_derivation_is_not_complete_coverage(db_path: Path) -> None:
    with Memory.open(db_path, config={"extraction": {"enabled": False}}) as memory:
        memory.ingest(api_session())
        page = memory.timeline.query(scope="global")
        assert page["entries"] == []
        assert page["coverage"] == {"complete": False, "reasons": ["extraction_disabled"]}


def test_purge_removes_entries_and_a_partial_purge_derives_the_rest(memory: Memory) -> None:
    from memplug.reports.purge import purge

    memory.ingest(api_session() + api_session("w1", cwd="/home/ana/web"))
    purge(memory, sessions=["w1"])
    rows = timeline_state(memory)
    assert rows["timeline_entries"] and all("w1" not in row for t in rows.values() for row in t)
    purge(memory, before="2026-03-02T09:00:05Z")
    left = memory.timeline.query(scope="global")["entries"]
    assert [e["kind"] for e in left][:2] == ["tool_failed", "constraint"]
    assert min(e["seq_from"] for e in left) == 6


# -- the command line --------------------------------------------------------------------


def run(db: Path, *args: str) -> Any:
    return CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)


def test_cli_json_contract_and_paging(memory: Memory, db_path: Path) -> None:
    memory.ingest(api_session())
    result = run(db_path, "timeline", "--scope", "global", "--limit", "3", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert set(data) >= {"entries", "next", "scope", "coverage"}
    for entry in data["entries"]:
        assert set(entry) >= {"kind", "session_id", "seq_from", "seq_to", "event_time", "text"}
    second = json.loads(run(db_path, "timeline", "--next", data["next"], "--json").output)
    assert second["entries"][0]["id"] not in {e["id"] for e in data["entries"]}
    text = run(db_path, "timeline", "--project", CWD, "--kind", "tool_failed").output
    assert f"scope: project:{CWD}" in text and "s1:6-7" in text and "Bash failed" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--since", "yesterday"], "Error: --since must be an ISO-8601 date or time"),
        (["--next", "mp1.garbage"], "Error: malformed memplug call token"),
        (
            ["--scope", "team:x"],
            "Error: scope must be global, project:<key>, session:<id> or agent:<id>",
        ),
        (["--session", "nope"], "Error: no session 'nope' in this database"),
        (["--entity", "nothing-here"], "Error: no entity 'nothing-here' in scope global"),
        (["--limit", "0"], "Error: --limit must be between 1 and 100"),
    ],
)
def test_cli_bad_input_is_one_error_line_and_exit_2(
    memory: Memory,
    db_path: Path,
    args: list[str],
    message: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    memory.ingest(api_session())
    with pytest.raises(SystemExit) as exit_info:
        main(["--db", str(db_path), "timeline", "--scope", "global", *args])
    assert exit_info.value.code == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(message)


def test_cli_never_creates_a_database(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--db", str(tmp_path / "none.sqlite"), "timeline"])
    assert exit_info.value.code == 2 and "no memplug database" in capsys.readouterr().err
    assert not (tmp_path / "none.sqlite").exists()


def test_random_interleavings_of_two_sessions_agree(tmp_path: Path) -> None:
    # The same check as the property above, over one larger interleaving a human can replay.
    events = api_session("a1") + api_session("b1", cwd="/home/ana/web")
    rng = random.Random(7)
    shuffled = events[:]
    rng.shuffle(shuffled)
    with Memory.open(tmp_path / "x.sqlite") as x, Memory.open(tmp_path / "y.sqlite") as y:
        x.ingest(events)
        for event in shuffled:
            y.ingest([event])
        assert timeline_state(x) == timeline_state(y)
