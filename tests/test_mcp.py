"""`memory mcp`: a real MCP client session over stdio, the tool table, redaction,
bounds, read-only, and `memory install claude-code --mcp`."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from derived_state import ev
from mcp import ClientSession, StdioServerParameters, stdio_client

import memplug.hosts.mcp as server
from memplug.base.errors import MemplugError
from memplug.cli.app import cli
from memplug.memory import Memory

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
CWD = "/home/ana/api"


@pytest.fixture
def api_db(db_path: Path) -> Path:
    call = 'Edit {"file_path":"src/api/main.py"}'
    with Memory.open(db_path) as memory:
        memory.ingest(
            [
                ev("s1", 1, "Decision: the API listens on localhost:8080", cwd=CWD),
                ev("s1", 2, call, type="tool/call", tool_name="Edit", call_id="c1", cwd=CWD),
                ev("s1", 3, "ok", type="tool/result", tool_name="Edit", call_id="c1",
                   outcome="succeeded", cwd=CWD),
                ev("s1", 4, f"the deploy key is {AWS_KEY}, port 8080 again", cwd=CWD),
                ev("s1", 5, "We must never expose port 8080 publicly", cwd=CWD),
                ev("s1", 6, "x" * 30_000 + " port 8080 tail", cwd=CWD),
            ]
        )  # fmt: skip
        memory.db.checkpoint()
    return db_path


def _session(db: Path, script: Any, home: Path) -> Any:
    """Run ``script(session)`` against `memory --db DB mcp` started as a subprocess."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memplug.cli", "--db", str(db), "mcp"],
        env={"MEMPLUG_HOME": str(home)},
        cwd=str(db.parent),
    )

    async def main() -> Any:
        async with stdio_client(params) as streams, ClientSession(streams[0], streams[1]) as s:
            await s.initialize()
            return await script(s)

    return anyio.run(main)


def result_json(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    data = json.loads(result.content[0].text)
    assert data == result.structured_content
    return data


def test_a_real_client_session_lists_and_calls_every_tool(api_db: Path, tmp_path: Path) -> None:
    async def script(s: ClientSession) -> dict[str, Any]:
        out: dict[str, Any] = {"tools": (await s.list_tools()).tools}
        out["search"] = await s.call_tool("memory_search", {"query": "port 8080", "limit": 2})
        first = result_json(out["search"])
        out["search2"] = await s.call_tool("memory_search", {"next": first["next"]})
        out["expand"] = await s.call_tool("memory_expand", {"target": first["hits"][0]["follow"]})
        out["timeline"] = await s.call_tool("memory_timeline", {"scope": "global", "limit": 2})
        page = result_json(out["timeline"])
        out["timeline2"] = await s.call_tool("memory_timeline", {"next": page["next"]})
        out["neighbors"] = await s.call_tool("memory_neighbors", {"entity": "8080"})
        out["core"] = await s.call_tool("memory_core", {})
        out["remember"] = await s.call_tool(
            "memory_remember", {"text": "We deploy with fly.io", "kind": "decision"}
        )
        out["core_after"] = await s.call_tool("memory_core", {})
        out["bad"] = await s.call_tool("memory_neighbors", {"entity": 8080, "hops": 9})
        out["extra"] = await s.call_tool("memory_timeline", {"scope": "global", "purge": True})
        out["token"] = await s.call_tool("memory_timeline", {"next": "mp1.nonsense"})
        out["unknown"] = await s.call_tool("memory_forget", {})
        out["alive"] = await s.call_tool("memory_timeline", {"scope": "global"})
        return out

    out = _session(api_db, script, tmp_path / "home")
    tools = {tool.name: tool for tool in out["tools"]}
    assert list(tools) == [tool.name for tool in server.TOOLS]
    assert list(tools) == [
        "memory_search",
        "memory_expand",
        "memory_timeline",
        "memory_neighbors",
        "memory_core",
        "memory_remember",
    ]
    for name, tool in tools.items():
        assert tool.input_schema["type"] == "object" and tool.input_schema["properties"]
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is (name != "memory_remember")
    assert tools["memory_neighbors"].input_schema["required"] == ["entity"]

    search, search2 = result_json(out["search"]), result_json(out["search2"])
    assert search["coverage"]["complete"] is False  # the capped event is not fully indexed
    assert len(search["hits"]) == 2 and search["total"] > 2
    seen = {(h.get("seq"), h.get("id")) for h in search["hits"]}
    assert seen.isdisjoint({(h.get("seq"), h.get("id")) for h in search2["hits"]})
    # Each names the scope it read: the server's working directory is no project here.
    assert search["scope"] == "global" and search2["scope"] == "global"
    expanded = result_json(out["expand"])
    assert expanded["events"] and expanded["scope"] == "session:s1"
    core = result_json(out["core"])
    assert core["scope"] == "global" and [line["kind"] for line in core["lines"]] == [
        "constraint",
        "decision",
    ]
    remembered = result_json(out["remember"])
    assert remembered["item"]["kind"] == "decision"
    assert remembered["item"]["content"] == "We deploy with fly.io"
    after = result_json(out["core_after"])
    assert remembered["item"]["id"] in [line["ref"] for line in after["lines"]]
    page1, page2 = result_json(out["timeline"]), result_json(out["timeline2"])
    assert page1["scope"] == "global" and page1["next"] and page2["entries"]
    assert page1["entries"][0]["id"] != page2["entries"][0]["id"]
    neighbors = result_json(out["neighbors"])
    assert neighbors["entity"] == "port:8080" and neighbors["neighbors"]
    assert neighbors["scope"] == "global"

    for name in ("bad", "extra", "token", "unknown"):
        assert out[name].is_error, name
        assert out[name].content[0].text.startswith("Error: ")
    assert "hops" in out["bad"].content[0].text and "entity" in out["bad"].content[0].text
    assert "purge" in out["extra"].content[0].text
    assert "unknown tool 'memory_forget'" in out["unknown"].content[0].text
    assert result_json(out["alive"])["entries"]  # errors did not take the server down


def test_secrets_are_redacted_in_every_result_and_in_the_cli_s_pull_commands(
    api_db: Path, tmp_path: Path
) -> None:
    async def script(s: ClientSession) -> list[Any]:
        search = await s.call_tool("memory_search", {"query": "deploy key"})
        hit = next(h for h in result_json(search)["hits"] if h.get("seq") == 4)
        expand = await s.call_tool("memory_expand", {"target": hit["follow"]})
        return [search, expand]

    for result in _session(api_db, script, tmp_path / "home"):
        text = result.content[0].text
        assert AWS_KEY not in text and AWS_KEY not in json.dumps(result.structured_content)
        assert "[redacted:aws_access_key_id]" in text
    # An agent reads `memory expand` through its shell too: the same marker there.
    pulled = CliRunner().invoke(cli, ["--db", str(api_db), "expand", "s1:4", "--json"])
    assert AWS_KEY not in pulled.output and "[redacted:aws_access_key_id]" in pulled.output
    # The bytes as captured only to a person at a terminal (CliRunner's stdout is none).
    raw = CliRunner().invoke(cli, ["--db", str(api_db), "expand", "s1:4", "--raw"])
    assert raw.exit_code == 2 and "only to a terminal" in raw.output


def test_the_protocol_answers_initialize_and_tools_list_on_raw_stdio(
    api_db: Path, tmp_path: Path
) -> None:
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, "-m", "memplug.cli", "--db", str(api_db), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "MEMPLUG_HOME": str(tmp_path)},
    )
    # The answers are read before stdin closes: at end of input the server may stop
    # before it answers what is still in flight.
    watchdog = threading.Timer(60, process.kill)
    watchdog.start()
    answers: dict[int, Any] = {}
    try:
        assert process.stdin is not None and process.stdout is not None
        for line in lines:
            process.stdin.write(json.dumps(line) + "\n")
            process.stdin.flush()
            while "id" in line and line["id"] not in answers:
                message = json.loads(process.stdout.readline())
                if "id" in message:
                    answers[message["id"]] = message
        process.stdin.close()
        assert process.wait(timeout=30) == 0
    finally:
        watchdog.cancel()
        process.kill()
    assert answers[1]["result"]["serverInfo"]["name"] == "memplug"
    assert "tools" in answers[1]["result"]["capabilities"]
    names = [tool["name"] for tool in answers[2]["result"]["tools"]]
    assert names == [
        "memory_search",
        "memory_expand",
        "memory_timeline",
        "memory_neighbors",
        "memory_core",
        "memory_remember",
    ]


# -- in process: bounds, read-only, missing database ---------------------------------------


def settings_for(db: Path) -> server.ServerSettings:
    return server.ServerSettings(str(db), None, CWD)


def test_results_are_bounded(api_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(Exception, match="less than or equal to 20000"):
        server.call(settings_for(api_db), "memory_expand", {"target": "s1:6", "max_chars": 10**6})
    text = server.call(settings_for(api_db), "memory_expand", {"target": "s1:6"})
    assert len(text["events"][0]["text"]) == 8_000 and text["next"]
    monkeypatch.setattr(server, "MAX_RESULT_CHARS", 500)
    with pytest.raises(MemplugError, match="limit 500"):
        server.call(settings_for(api_db), "memory_timeline", {"scope": "global"})


def test_tools_are_read_only(api_db: Path) -> None:
    def digest() -> str:
        return hashlib.sha256(api_db.read_bytes()).hexdigest()

    before = digest()
    wal = api_db.with_name(api_db.name + "-wal")
    wal_before = wal.stat().st_size if wal.exists() else 0
    settings = settings_for(api_db)
    server.call(settings, "memory_search", {"query": "port"})
    server.call(settings, "memory_timeline", {})
    server.call(settings, "memory_neighbors", {"entity": "8080", "hops": 3})
    server.call(settings, "memory_expand", {"target": "s1:1", "after": 3})
    server.call(settings, "memory_core", {})
    assert digest() == before
    assert [t.name for t in server.TOOLS if t.writes] == ["memory_remember"]
    assert (wal.stat().st_size if wal.exists() else 0) == wal_before
    assert server.call(settings, "memory_timeline", {})["scope"] == f"project:{CWD}"


def test_search_defaults_to_the_working_directory_s_project(api_db: Path, tmp_path: Path) -> None:
    with Memory.open(api_db) as memory:
        memory.ingest([ev("w1", 1, "the web app uses port 8080 too", cwd="/home/ana/web")])
    here = server.call(settings_for(api_db), "memory_search", {"query": "8080", "limit": 40})
    assert here["scope"] == f"project:{CWD}"
    assert {h["session_id"] for h in here["hits"]} == {"s1"}
    elsewhere = server.ServerSettings(str(api_db), None, "/nowhere")
    both = server.call(elsewhere, "memory_search", {"query": "8080", "limit": 40})
    assert both["scope"] == "global" and {h["session_id"] for h in both["hits"]} == {"s1", "w1"}
    explicit = server.call(elsewhere, "memory_search", {"query": "8080", "scope": "session:w1"})
    assert explicit["scope"] == "session:w1"
    paged = server.call(settings_for(api_db), "memory_search", {"query": "8080", "limit": 1})
    assert server.call(elsewhere, "memory_search", {"next": paged["next"]})["scope"] == (
        f"project:{CWD}"
    )


def test_a_missing_database_is_a_tool_error_that_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "nothing" / "memory.sqlite"
    with pytest.raises(MemplugError, match="no memplug database"):
        server.call(settings_for(missing), "memory_timeline", {})
    assert not missing.parent.exists()


def test_every_tool_is_documented_with_its_arguments() -> None:
    doc = (Path(__file__).resolve().parent.parent / "docs" / "mcp.md").read_text(encoding="utf-8")
    for tool in server.TOOLS:
        assert f"`{tool.name}`" in doc
        for name in tool.schema()["properties"]:
            assert f"`{name}`" in doc, f"docs/mcp.md lacks {tool.name}.{name}"


def test_without_the_extra_the_command_says_how_to_get_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib.util

    from memplug.cli import main

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "mcp" else real(name, *a)
    )
    with pytest.raises(SystemExit) as exit_info:
        main(["mcp"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == (
        "Error: the MCP server needs the mcp extra: pip install 'memplug-local[mcp]'\n"
    )


# -- memory install claude-code --mcp ------------------------------------------------------


def test_install_registers_the_server_beside_the_hooks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    config = tmp_path / ".claude.json"
    config.write_text(json.dumps({"mcpServers": {"other": {"command": "x"}}, "theme": "dark"}))
    db = tmp_path / "data" / "m.sqlite"
    runner = CliRunner()
    out = runner.invoke(cli, ["--db", str(db), "install", "claude-code", "--mcp", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["mcp"]["changes"] == {"mcpServers.memplug": "added"}
    written = json.loads(config.read_text())
    entry = written["mcpServers"]["memplug"]
    assert entry["type"] == "stdio" and entry["args"] == ["--db", str(db.resolve()), "mcp"]
    assert written["mcpServers"]["other"] == {"command": "x"} and written["theme"] == "dark"
    assert (tmp_path / ".claude" / "settings.json").exists()  # the hooks, beside it
    again = runner.invoke(cli, ["--db", str(db), "install", "claude-code", "--mcp", "--json"])
    assert json.loads(again.output)["mcp"]["changes"] == {"mcpServers.memplug": "unchanged"}
    gone = runner.invoke(cli, ["uninstall", "claude-code", "--mcp", "--json"])
    assert json.loads(gone.output)["mcp"]["changes"] == {"mcpServers.memplug": "removed"}
    assert json.loads(config.read_text())["mcpServers"] == {"other": {"command": "x"}}


@pytest.mark.parametrize(
    ("prefix", "hint"),
    [
        ("/home/ana/.local/share/pipx/venvs/memplug-local", "pipx install --force"),
        ("/home/ana/.venv", "pip install"),
    ],
)
def test_install_without_the_extra_warns_with_the_installers_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prefix: str, hint: str
) -> None:
    import importlib.util
    import sys

    monkeypatch.setenv("HOME", str(tmp_path))
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "mcp" else real(name, *a)
    )
    monkeypatch.setattr(sys, "prefix", prefix)
    out = CliRunner().invoke(cli, ["install", "claude-code", "--mcp"])
    assert out.exit_code == 0, out.output
    assert (
        "warning: the MCP server needs the mcp extra, which this install lacks: "
        f"{hint} 'memplug-local[mcp]'"
    ) in out.stderr
    assert "memplug" in json.loads((tmp_path / ".claude.json").read_text())["mcpServers"]


def test_project_scope_writes_mcp_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    # .mcp.json is shared: it never names this machine's paths (test_install.py).
    monkeypatch.delenv("MEMPLUG_HOME")
    out = CliRunner().invoke(cli, ["install", "claude-code", "--project", "--mcp", "--dry-run"])
    assert out.exit_code == 0 and "mcpServers.memplug: added" in out.output
    assert not (tmp_path / ".mcp.json").exists()
    CliRunner().invoke(cli, ["install", "claude-code", "--project", "--mcp"])
    assert json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]["memplug"]["args"] == [
        "mcp"
    ]


def test_memory_core_is_the_current_projects_core(api_db: Path) -> None:
    core = server.call(settings_for(api_db), "memory_core", {})
    assert core["project"] == CWD
    kinds = [line["kind"] for line in core["lines"]]
    assert kinds == ["constraint", "decision"]
    assert "never expose port 8080" in core["lines"][0]["text"]
    elsewhere = server.ServerSettings(str(api_db), None, "/nowhere")
    assert server.call(elsewhere, "memory_core", {})["project"] is None
    with pytest.raises(MemplugError, match="no project"):
        server.call(elsewhere, "memory_core", {"project": "/nowhere"})


def test_a_long_event_s_hit_opens_at_the_match_by_its_printed_ref(api_db: Path) -> None:
    log = "compiling module\n" * 500 + "error: wombat_linker failed\n" + "cleanup\n" * 300
    with Memory.open(api_db) as memory:
        memory.ingest([ev("s2", 1, log, type="tool/result", tool_name="Bash", cwd=CWD)])
    settings = settings_for(api_db)
    page = server.call(settings, "memory_search", {"query": "wombat_linker"})
    assert len(page["hits"]) <= 5  # the page size an agent gets unless it asks
    hit = page["hits"][0]
    assert (hit["session_id"], hit["seq"]) == ("s2", 1) and hit["opens_at"] > 0
    opened = server.call(settings, "memory_expand", {"target": f"s2:1@{hit['opens_at']}"})
    shown = opened["events"][0]
    assert "error: wombat_linker failed" in shown["text"] and len(shown["text"]) <= 1_500
    assert opened["next"] is not None
