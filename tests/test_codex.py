"""Codex CLI as a host: the rollout reader, `memory hook codex` with real hook payloads,
one memory across Codex and Claude Code, install/uninstall against a scratch CODEX_HOME,
and `memory import` of a folder of rollouts."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, CliResult

from memplug.hosts import codex

ROLLOUT = next((FIXTURES / "codex").glob("rollout-*.jsonl"))
SID = "019c0000-0000-7000-8000-00000000c0de"
CC_SID = "5e1f0c2a-7b3d-4e8f-9a10-c0ffee000001"
CC_TRANSCRIPT = FIXTURES / "claude_code" / f"{CC_SID}.jsonl"
SHOP = "/home/ana/shop"


# -- the reader ---------------------------------------------------------------------------------


def test_each_record_becomes_its_event_once_and_injected_context_is_not_a_prompt() -> None:
    read = codex.read_all(ROLLOUT)
    kinds = [(e["type"], (e.get("source") or {}).get("kind")) for e in read.events]
    prompts = [e["text"] for e in read.events if (e.get("source") or {}).get("kind") == "user"]
    assert prompts == ["Decision: we deploy the shop with fly.io, not heroku.", "ok, continue"]
    assert ("user/message", "agent-instructions") in kinds
    assert ("user/message", "runtime-context") in kinds
    assert [e["type"] for e in read.events].count("assistant/message") == 1  # not twice
    thinking = [e["text"] for e in read.events if e["type"] == "assistant/thinking"]
    assert thinking == ["**Checking the deploy config**"]
    calls = {e["tool_name"]: e for e in read.events if e["type"] == "tool/call"}
    assert set(calls) == {"shell_command", "apply_patch", "update_plan"}
    results = {e["tool_name"]: e["outcome"] for e in read.events if e["type"] == "tool/result"}
    assert results == {"shell_command": "failed", "apply_patch": "succeeded",
                       "update_plan": "succeeded"}  # fmt: skip
    assert [e["type"] for e in read.events if e["type"].startswith("compaction/")] == [
        "compaction/start", "compaction/summary"]  # fmt: skip
    assert read.cursor.unknown == {"response_item:future_item": 1}
    assert [e["seq"] for e in read.events] == list(range(1, len(read.events) + 1))
    assert {e["session_id"] for e in read.events} == {SID}
    assert {e["host"] for e in read.events} == {"codex"} and {e["cwd"] for e in read.events} == {
        SHOP
    }


def test_a_rollout_read_in_pieces_gives_the_same_events(tmp_path: Path) -> None:
    whole = codex.read_all(ROLLOUT).events
    data = ROLLOUT.read_bytes()
    for cut in (1, 100, len(data) // 3, len(data) // 2, len(data) - 5):
        growing = tmp_path / f"r{cut}.jsonl"
        growing.write_bytes(data[:cut])
        first = codex.read_rollout(growing, codex.RolloutCursor())
        growing.write_bytes(data)
        second = codex.read_rollout(growing, first.cursor)
        assert first.events + second.events == whole, cut


# -- the hook -------------------------------------------------------------------------------------


def hook(cli: Callable[..., CliResult], db: Path, host: str, **payload: Any) -> dict[str, Any]:
    result = cli("--db", str(db), "hook", host, input=json.dumps(payload))
    assert result.returncode == 0 and result.stderr == "", result.stderr
    return json.loads(result.stdout) if result.stdout.strip() else {}


def context(answer: dict[str, Any]) -> str:
    return str(answer.get("hookSpecificOutput", {}).get("additionalContext", ""))


def test_the_hook_captures_the_rollout_once_and_injects_on_a_prompt(
    cli: Callable[..., CliResult], db_path: Path
) -> None:
    stop = {"session_id": SID, "transcript_path": str(ROLLOUT), "cwd": SHOP,
            "hook_event_name": "Stop", "stop_hook_active": False}  # fmt: skip
    assert hook(cli, db_path, "codex", **stop) == {}
    assert hook(cli, db_path, "codex", **stop) == {}  # nothing new the second time
    status = cli("--db", str(db_path), "status", "--json").json()
    assert status["counts"]["events"] == len(codex.read_all(ROLLOUT).events)
    items = cli("--db", str(db_path), "items", "--scope", "global", "--json").json()["items"]
    assert [i["content"] for i in items if i["kind"] == "decision"] == [
        "we deploy the shop with fly.io, not heroku."]  # fmt: skip
    task = cli("--db", str(db_path), "core", "--project", SHOP, "--json").json()
    assert "Configure the fly app" in [line["text"] for line in task["lines"]]
    answer = hook(cli, db_path, "codex", session_id=SID, transcript_path=str(ROLLOUT), cwd=SHOP,
                  hook_event_name="UserPromptSubmit", prompt="where do we deploy?")  # fmt: skip
    assert answer["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert "fly.io" in context(answer)


def test_a_broken_payload_never_fails_the_host(
    cli: Callable[..., CliResult], db_path: Path
) -> None:
    for stdin in ("not json", "[]", json.dumps({"hook_event_name": "Nope"})):
        result = cli("--db", str(db_path), "hook", "codex", input=stdin)
        assert (result.returncode, result.stdout) == (0, "")


# -- one memory across both agents -------------------------------------------------------


def test_a_decision_made_with_claude_code_reaches_codex_s_next_session(
    cli: Callable[..., CliResult], db_path: Path, tmp_path: Path
) -> None:
    hook(cli, db_path, "claude-code", session_id=CC_SID, transcript_path=str(CC_TRANSCRIPT),
         cwd=SHOP, hook_event_name="Stop", stop_hook_active=False)  # fmt: skip
    fresh = tmp_path / "rollout-new.jsonl"
    meta = {"timestamp": "2026-03-05T09:00:00.000Z", "type": "session_meta",
            "payload": {"id": "codex-next", "cwd": SHOP, "cli_version": "0.79.0"}}  # fmt: skip
    fresh.write_text(json.dumps(meta) + "\n")
    answer = hook(cli, db_path, "codex", session_id="codex-next", transcript_path=str(fresh),
                  cwd=SHOP, hook_event_name="SessionStart", source="startup")  # fmt: skip
    assert "We must never log card numbers." in context(answer)


def test_a_decision_made_with_codex_reaches_claude_code_s_next_session(
    cli: Callable[..., CliResult], db_path: Path, tmp_path: Path
) -> None:
    hook(cli, db_path, "codex", session_id=SID, transcript_path=str(ROLLOUT), cwd=SHOP,
         hook_event_name="Stop")  # fmt: skip
    empty = tmp_path / "next.jsonl"
    empty.write_text("")
    answer = hook(cli, db_path, "claude-code", session_id="cc-next", transcript_path=str(empty),
                  cwd=SHOP, hook_event_name="SessionStart", source="startup")  # fmt: skip
    assert "we deploy the shop with fly.io, not heroku." in context(answer)


# -- install, uninstall, import ------------------------------------------------------------------


@pytest.fixture
def codex_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text(
        'model = "gpt-5.2-codex"\n\n[mcp_servers.other]\ncommand = "x"\n'
    )
    (home / "hooks.json").write_text(json.dumps({"hooks": {"Stop": [
        {"hooks": [{"type": "command", "command": "notify-send done"}]}]}}))  # fmt: skip
    monkeypatch.setenv("CODEX_HOME", str(home))
    return home


def test_install_and_uninstall_codex_keep_everything_else(
    cli: Callable[..., CliResult], codex_home: Path
) -> None:
    before = {name: (codex_home / name).read_text() for name in ("config.toml", "hooks.json")}
    done = cli("install", "codex", "--mcp", "--json")
    assert done.returncode == 0, done.stderr
    hooks = json.loads((codex_home / "hooks.json").read_text())["hooks"]
    assert set(hooks) == {"SessionStart", "UserPromptSubmit", "PostToolUse", "PreCompact",
                          "PostCompact", "Stop"}  # fmt: skip
    assert hooks["Stop"][0]["hooks"][0]["command"] == "notify-send done"
    assert hooks["Stop"][1]["hooks"][0]["command"].endswith("hook codex")
    config = (codex_home / "config.toml").read_text()
    assert config.startswith(before["config.toml"]) and "[mcp_servers.memplug]" in config
    assert cli("install", "codex", "--mcp", "--json").json()["changed"] is False
    gone = cli("uninstall", "codex", "--json").json()
    assert gone["changes"]["mcp"] == "removed"
    assert (codex_home / "config.toml").read_text() == before["config.toml"]
    assert json.loads((codex_home / "hooks.json").read_text()) == json.loads(before["hooks.json"])


def test_a_project_install_writes_portable_hooks_and_an_agents_md_section(
    codex_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.installed import memory

    project = tmp_path / "repo"
    project.mkdir()
    (project / "AGENTS.md").write_text("# Rules\n\nUse pnpm.\n")
    done = memory("install", "codex", "--project", "--agents-md", cwd=project)
    assert done.returncode == 0, done.stderr
    hooks = json.loads((project / ".codex" / "hooks.json").read_text())["hooks"]
    assert hooks["UserPromptSubmit"][0]["hooks"][0]["command"] == "memory hook codex"
    agents = (project / "AGENTS.md").read_text()
    assert agents.startswith("# Rules\n\nUse pnpm.\n") and '`memory search "' in agents
    assert memory("uninstall", "codex", "--project", cwd=project).returncode == 0
    assert (project / "AGENTS.md").read_text() == "# Rules\n\nUse pnpm.\n"
    assert not (project / ".codex" / "hooks.json").exists()


def test_claude_code_takes_no_agents_md(cli: Callable[..., CliResult], tmp_path: Path) -> None:
    done = cli("install", "claude-code", "--agents-md", "--dry-run", env={"HOME": str(tmp_path)})
    assert done.returncode == 2 and "claude-code takes no --agents-md" in done.stderr


def test_import_reads_a_folder_of_rollouts_as_the_hook_does(
    cli: Callable[..., CliResult], db_path: Path, tmp_path: Path
) -> None:
    sessions = tmp_path / "sessions" / "2026" / "03" / "04"
    sessions.mkdir(parents=True)
    shutil.copy(ROLLOUT, sessions / ROLLOUT.name)
    (sessions.parent / "notes.jsonl").write_text('{"not": "a rollout"}\n')
    done = cli("--db", str(db_path), "import", str(tmp_path / "sessions"), "--json")
    assert done.returncode == 0, done.stderr
    data = done.json()
    assert data["new"] == len(codex.read_all(ROLLOUT).events)
    assert data["codex_rollouts"] == [str(sessions / ROLLOUT.name)]
    # The hook then goes on from the same cursor: nothing is captured twice.
    hook(cli, db_path, "codex", session_id=SID, transcript_path=str(sessions / ROLLOUT.name),
         cwd=SHOP, hook_event_name="Stop")  # fmt: skip
    assert cli("--db", str(db_path), "status", "--json").json()["counts"]["events"] == data["new"]
    empty = tmp_path / "empty"
    empty.mkdir()
    refused = cli("--db", str(db_path), "import", str(empty))
    assert refused.returncode == 2 and "no Codex rollout in it" in refused.stderr


def test_search_and_the_message_say_which_agent_a_line_came_from(
    cli: Callable[..., CliResult], db_path: Path
) -> None:
    hook(cli, db_path, "claude-code", session_id=CC_SID, transcript_path=str(CC_TRANSCRIPT),
         cwd=SHOP, hook_event_name="Stop", stop_hook_active=False)  # fmt: skip
    prompt = "which port does the checkout API listen on, and card numbers?"
    answer = hook(cli, db_path, "codex", session_id=SID, transcript_path=str(ROLLOUT), cwd=SHOP,
                  hook_event_name="UserPromptSubmit", prompt=prompt)  # fmt: skip
    headings = [line for line in context(answer).splitlines() if line.startswith("### [ev")]
    assert headings and all(
        h.startswith(f"### [ev {CC_SID}") and "] (claude-code)" in h for h in headings
    )
    found = cli("--db", str(db_path), "search", "fly.io", "--scope", "global", "--json").json()
    assert found["hits"] and {h["host"] for h in found["hits"]} == {"codex"}
    card = cli("--db", str(db_path), "search", "card numbers", "--scope", "global", "--json")
    card = card.json()
    assert "claude-code" in {h.get("host") for h in card["hits"]}
