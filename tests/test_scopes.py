"""Scopes everywhere: the agent tag on derived rows, ``agent:<id>``, and every query's
default (the current context) and report of the scope it read."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import CliResult
from derived_state import dump, ev

from memplug.base.errors import NotFound
from memplug.base.models import HostEvent
from memplug.memory import Memory
from memplug.store.db import load_migrations

CWD = "/home/ana/api"
AGENT = "a7f3"
SUB = f"s1/agent-{AGENT}"


def main_session() -> list[HostEvent]:
    return [
        ev("s1", 1, "Decision: the service runs on uvicorn==0.30.1.", cwd=CWD),
        ev("s1", 2, 'Read {"file_path":"src/api/main.py"}', type="tool/call",
           tool_name="Read", call_id="m1", cwd=CWD),
        ev("s1", 3, "done", type="tool/result", tool_name="Read", call_id="m1",
           outcome="succeeded", cwd=CWD),
    ]  # fmt: skip


def agent_session(agent: str = AGENT, session: str = SUB) -> list[HostEvent]:
    """A subagent's own session, as Claude Code writes one: every event names the agent."""
    tag = {"agent_id": agent, "is_sidechain": True, "cwd": CWD}
    read = {"file_path": "src/api/auth.py"}
    return [
        ev(session, 1, "Decision: tokens live in redis:6379.", **tag),
        ev(session, 2, "Read " + json.dumps(read), type="tool/call", tool_name="Read",
           call_id="r1", **tag),
        ev(session, 3, "Error: no such file", type="tool/result", tool_name="Read",
           call_id="r1", outcome="failed", is_error=True, **tag),
    ]  # fmt: skip


@pytest.fixture
def both(memory: Memory) -> Memory:
    memory.ingest(main_session() + agent_session())
    return memory


def test_rows_an_agent_made_carry_its_tag_and_only_those(both: Memory) -> None:
    page = both.timeline.query(scope="global", limit=100)
    tagged = {(e["session_id"], e["kind"]): e["agent"] for e in page["entries"]}
    assert tagged == {
        ("s1", "decision"): None,
        ("s1", "file_touched"): None,
        ("s1", "tool_succeeded"): None,
        (SUB, "decision"): AGENT,
        (SUB, "file_touched"): AGENT,
        (SUB, "tool_failed"): AGENT,
    }
    items = {i["session_id"]: i["agent"] for i in both.items(scope="global")["items"]}
    assert items == {"s1": None, SUB: AGENT}
    conn = both.db.conn
    entities = dict(conn.execute("SELECT entity, agent FROM graph_entities WHERE session_id = ?",
                                 (SUB,)).fetchall())  # fmt: skip
    assert entities["file:/home/ana/api/src/api/auth.py"] == AGENT
    assert set(entities.values()) == {AGENT}
    agents = {r[0] for r in conn.execute("SELECT agent FROM graph_edges WHERE session_id = ?",
                                         (SUB,))}  # fmt: skip
    assert agents == {AGENT}
    assert {r[0] for r in conn.execute("SELECT agent FROM graph_entities WHERE session_id = 's1'")
            } == {None}  # fmt: skip


def test_agent_scope_reads_the_agents_rows_and_the_project_still_holds_them(
    both: Memory,
) -> None:
    mine = both.timeline.query(scope=f"agent:{AGENT}", limit=100)
    assert mine["scope"] == f"agent:{AGENT}"
    assert [e["kind"] for e in mine["entries"]] == ["decision", "file_touched", "tool_failed"]
    assert {e["session_id"] for e in mine["entries"]} == {SUB}
    project = both.timeline.query(cwd=CWD, limit=100)
    assert project["scope"] == f"project:{CWD}"
    assert {e["session_id"] for e in project["entries"]} == {"s1", SUB}
    items = both.items(scope=f"agent:{AGENT}")
    assert items["scope"] == f"agent:{AGENT}"
    assert [i["content"] for i in items["items"]] == ["tokens live in redis:6379."]
    where = both.scope(scope=f"agent:{AGENT}")
    near = both.graph.neighbors("src/api/auth.py", where, hops=1)
    assert near["scope"] == f"agent:{AGENT}" and near["entity"].endswith("/src/api/auth.py")
    # The main agent's file is not the subagent's to see.
    with pytest.raises(NotFound, match=r"no entity 'src/api/main\.py' in scope agent:a7f3"):
        both.graph.neighbors("src/api/main.py", where)
    assert both.graph.neighbors("src/api/main.py", both.scope(cwd=CWD))["neighbors"]
    with pytest.raises(NotFound, match="derived from agent 'nobody'"):
        both.timeline.query(scope="agent:nobody")


def test_a_rebuild_and_any_delivery_order_give_the_same_tags(both: Memory, tmp_path: Path) -> None:
    before = dump(both)
    both.extractor.rebuild()
    assert dump(both) == before
    with Memory.open(tmp_path / "other.sqlite") as other:
        other.ingest(list(reversed(agent_session())))
        other.ingest(main_session())
        assert dump(other) == before


def test_the_migration_fills_the_tags_of_an_older_database(both: Memory) -> None:
    """Rows derived before the agents migration come out as a rebuild would leave them."""
    [migration] = [m for m in load_migrations() if m.name.endswith("_agents.sql")]
    expected = dump(both)
    conn = both.db.conn
    with both.store.write_transaction():
        for index in ("memory_items_scope", "memory_items_agent", "timeline_entries_agent",
                      "graph_entities_agent", "graph_edges_agent"):  # fmt: skip
            conn.execute(f"DROP INDEX {index}")
        for table, column in (("memory_items", "scope"), ("memory_items", "agent"),
                              ("timeline_entries", "agent"), ("graph_entities", "agent"),
                              ("graph_edges", "agent")):  # fmt: skip
            conn.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
        conn.execute(migration.sql)
    assert dump(both) == expected


# -- every query: the current context by default, and the scope it read -----------------


def test_items_read_the_current_context_and_say_so(memory: Memory, tmp_path: Path) -> None:
    here = str(tmp_path / "web")
    memory.ingest([*main_session(), ev("w1", 1, "Decision: the web uses vite.", cwd=here)])
    mine = memory.items(cwd=here)
    assert mine["scope"] == f"project:{here}"
    assert [i["session_id"] for i in mine["items"]] == ["w1"]
    assert memory.items(cwd="/nowhere")["scope"] == "global"
    assert len(memory.items(cwd="/nowhere")["items"]) == 2
    assert memory.items(project=CWD)["scope"] == f"project:{CWD}"
    assert memory.items(sessions=["s1"])["scope"] == "session:s1"
    assert memory.items(scope="session:w1")["items"][0]["content"] == "the web uses vite."


def test_every_command_defaults_to_the_working_directory_and_names_its_scope(
    cli: Callable[..., CliResult],
    db_path: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    here = tmp_path / "web"
    here.mkdir()
    with Memory.open(db_path) as memory:
        memory.ingest(main_session() + agent_session()
                      + [ev("w1", 1, "Decision: the web uses vite.", cwd=str(here)),
                         ev("w1", 2, 'Read {"file_path":"web.py"}', type="tool/call",
                            tool_name="Read", call_id="w", cwd=str(here))])  # fmt: skip
    monkeypatch.chdir(here)
    project = f"project:{here}"

    def run(*args: str) -> dict[str, Any]:
        result = cli("--db", str(db_path), *args, "--json")
        assert result.returncode == 0, result.stderr
        data: dict[str, Any] = result.json()
        return data

    items = run("items")
    assert items["scope"] == project and [i["session_id"] for i in items["items"]] == ["w1"]
    search = run("search", "decision")
    assert search["scope"] == project and {h["session_id"] for h in search["hits"]} == {"w1"}
    assert run("timeline")["scope"] == project
    assert run("graph", "neighbors", "web.py")["scope"] == project
    assert run("graph", "export")["scope"] == project
    core = run("core")
    assert core["scope"] == project and core["project"] == str(here)
    assert run("core", "--global")["scope"] == "global"
    assert run("expand", "w1:1")["scope"] == "session:w1"
    assert run("inspect", "w1:1")["in_scope"] == project
    item = run("inspect", items["items"][0]["id"])
    assert item["in_scope"] == project and item["agent"] is None
    event = run("inspect", f"{SUB}:1")
    assert event["in_scope"] == f"project:{CWD}" and event["agent"] == AGENT
    assert run("items", "--scope", f"agent:{AGENT}")["items"][0]["agent"] == AGENT
    text = cli("--db", str(db_path), "items").stdout
    assert text.startswith(f"scope: {project}\n")
    assert cli("--db", str(db_path), "search", "vite").stdout.startswith(f"scope: {project} · hits")
    both = cli("--db", str(db_path), "core", "--global", "--project", CWD)
    assert both.returncode == 2 and "Error: give --project or --global" in both.stderr


def test_search_can_ask_for_one_agent(both: Memory) -> None:
    page = both.search("decision", scope=f"agent:{AGENT}")
    assert page["scope"] == f"agent:{AGENT}"
    assert page["hits"] and {h["session_id"] for h in page["hits"]} == {SUB}
    assert {h["session_id"] for h in both.search("decision", scope="global")["hits"]} == {
        "s1",
        SUB,
    }
    with pytest.raises(NotFound, match="names agent 'nobody'"):
        both.search("decision", scope="agent:nobody")
