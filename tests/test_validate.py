"""Validation of committed assistant messages, the blocking rule, and tool preconditions."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memplug.base.config import Config, validate_config
from memplug.base.models import parse_event
from memplug.base.preconditions import check_preconditions
from memplug.cli import main
from memplug.cli.app import cli
from memplug.memory import Memory
from memplug.plugin import Plugin
from memplug.recall.assemble import AssemblyRequest
from memplug.recall.validate import SCOPES, run_checks, scoped_texts
from tests.conftest import CliResult

FORBID = {"type": "forbidden_terms", "name": "no-guess", "terms": ["probably"], "block": True}


def config(**validation: Any) -> Config:
    return validate_config({"validation": validation})


def findings(text: str, *checks: dict[str, Any], **validation: Any) -> list[dict[str, Any]]:
    cfg = config(checks=list(checks), **validation)
    return run_checks(text, cfg.validation.checks, cfg, {}).violations


def say(memory: Memory, seq: int, text: str, role: str = "assistant") -> None:
    event = {"session_id": "s1", "seq": seq, "type": f"{role}/message", "role": role}
    memory.ingest([parse_event({**event, "text": text})])


# -- scopes and checks -------------------------------------------------------------------


def test_every_character_is_in_exactly_one_scope() -> None:
    text = (
        'Use the "probably fine" flag in src/app/main.py (probably) and `probably()`.\n'
        "> probably quoted\n"
        "Note: probably explained\n"
        "```\nprobably code\n```\n"
        "See https://x.org/probably then probably."
    )
    scoped = scoped_texts(text)
    assert all(len(s) == len(text) for s in scoped.values())
    for i, char in enumerate(text):
        if char not in " \n":
            assert sum(scoped[s][i] == char for s in SCOPES) == 1, (i, char)
    assert scoped["body"].split().count("probably.") == 1
    assert "src/app/main.py" in scoped["path"] and "https://x.org/probably" in scoped["path"]
    assert (
        "(probably)" in scoped["explanation"]
        and "Note: probably explained" in scoped["explanation"]
    )
    for piece in ('"probably fine"', "`probably()`", "> probably quoted", "probably code"):
        assert piece in scoped["quote"]


def test_forbidden_terms_are_scope_aware_and_whole_words() -> None:
    text = 'It is "probably" ok (probably). Tokens are fine. Probably not.'
    body = findings(text, FORBID)
    assert [(f["scope"], f["count"], f["at"]) for f in body] == [("body", 1, text.index("Prob"))]
    everywhere = findings(text, {**FORBID, "scope": "all"})
    assert [f["scope"] for f in everywhere] == ["body", "quote", "explanation"]
    assert findings("tokens", {"type": "forbidden_terms", "terms": ["ok", "token"]}) == []
    strict = {"type": "forbidden_terms", "terms": ["Probably"], "caseSensitive": True}
    assert [f["at"] for f in findings("probably. Probably", strict)] == [10]


def test_required_terms_count_against_min_count() -> None:
    check = {"type": "required_terms", "terms": ["[ev ", "源"], "minCount": 2}
    found = findings("[ev s1:1] and [ev s1:2]; 来源", check)
    assert [(f["term"], f["count"]) for f in found] == [("源", 1)]
    assert "needs 2" in found[0]["message"]


def test_numbers_need_their_conditions_within_the_window() -> None:
    check = {
        "type": "numbers_with_conditions",
        "numbers": [{"value": "200 ms", "conditions": ["p95", "1k rps"]}],
        "forbiddenNumbers": ["100%"],
        "window": 20,
    }
    assert findings("p95 latency is 200ms at 1k rps.", check) == []
    far = findings("p95 " + "x" * 40 + " is 200 ms at 1k rps; 1200 ms is not it. 100%", check)
    assert [f.get("missing") for f in far] == [["p95"], None]
    assert far[1]["message"] == "forbidden number '100%' in body"


def test_unknown_types_and_bad_keys_are_reported_and_skipped() -> None:
    cfg = config(checks=[{"type": "vibes"}, {"type": "required_terms"}, FORBID])
    outcome = run_checks("probably", cfg.validation.checks, cfg, {})
    assert (outcome.checked, outcome.skipped) == (1, 2)
    assert [e["check"] for e in outcome.errors] == ["vibes#1", "required_terms#2"]
    assert outcome.errors[0]["error"] == "unknown check type 'vibes'"
    assert "terms" in outcome.errors[1]["error"]
    assert len(outcome.violations) == 1


def test_scripts_never_block_unless_declared_deterministic(tmp_path: Path) -> None:
    script = tmp_path / "checks.py"
    script.write_text(
        "def check(text, context):\n"
        "    return ['too long'] if len(text) > 5 else []\n"
        "def fields(text, context):\n"
        "    return [{'message': 'seen', 'seq': context['seq']}]\n"
        "def broken(text, context):\n"
        "    raise RuntimeError('boom')\n"
    )
    base = {"type": "script", "module": "checks.py", "block": True}
    checks = [
        base,
        {**base, "name": "sure", "deterministic": True},
        {**base, "name": "fields", "function": "fields"},
        {**base, "name": "broken", "function": "broken"},
    ]
    cfg = config(checks=checks)
    outcome = run_checks(
        "a long text", cfg.validation.checks, cfg, {"base_dir": str(tmp_path), "seq": 4}
    )
    assert [(v["check"], v["block"]) for v in outcome.violations] == [
        ("script#1", False),
        ("sure", True),
        ("fields", False),
    ]
    assert outcome.violations[2]["seq"] == 4 and not outcome.deterministic
    assert outcome.errors == [{"check": "broken", "type": "script", "error": "RuntimeError: boom"}]


# -- runs, blocking and the reminder ---------------------------------------------------------


@pytest.fixture
def checked(db_path: Path) -> Memory:
    """A session with a user question, and a forbidden-term check in memory.toml."""
    db_path.parent.mkdir(parents=True)
    (db_path.parent / "memory.toml").write_text(
        '[[validation.checks]]\ntype = "forbidden_terms"\nname = "no-guess"\n'
        'terms = ["probably"]\nblock = true\n'
    )
    memory = Memory.open(db_path)
    say(memory, 1, "How fast is checkout?", role="user")
    return memory


def test_blocking_spends_attempts_per_message_and_a_clean_run_resets(checked: Memory) -> None:
    states = []
    for seq, text in [
        (2, "probably"),
        (3, "probably"),
        (4, "probably"),
        (5, "it is 2 s"),
        (6, "probably"),
    ]:
        say(checked, seq, text)
        run = checked.validator.run("s1")
        again = checked.validator.run("s1")  # checking the same message spends nothing
        assert again.repair_attempt == run.repair_attempt
        states.append((run.blocked, run.repair_attempt, run.exhausted))
    assert states == [
        (True, 1, False),
        (True, 2, False),
        (False, 0, True),
        (False, 0, False),
        (True, 1, False),
    ]


def test_the_reminder_is_bounded_and_leaves_with_the_next_reply(db_path: Path) -> None:
    cfg = {"checks": [{**FORBID, "terms": ["probably", "maybe"]}], "reminderMaxChars": 80}
    with Memory.open(db_path, config={"validation": cfg}) as memory:
        say(memory, 1, "How fast is checkout?", role="user")
        say(memory, 2, "probably fast, maybe")
        memory.validate_new(["s1"], trigger="api")
        result = memory.assemble(AssemblyRequest("s1", query="checkout"))
        lines = [e for e in result.included if e.section == "rules"]
        assert [e.ref for e in lines] == ["repair:1"]
        line = result.text.split("## Rules\n")[1].split("\n")[0]
        head = "- [repair 1/2] memplug's checks failed on the last assistant message [ev s1:2]: "
        assert line.startswith(head) and line.endswith(". Correct this in the next reply.")
        quoted = line[len(head) : -len(". Correct this in the next reply.")]
        assert quoted.startswith("forbidden term 'probably'") and quoted.endswith("…")
        assert len(quoted) == 80
        say(memory, 3, "It takes 2 s at p95.")
        memory.validate_new(["s1"], trigger="api")
        assert "[repair" not in memory.assemble(AssemblyRequest("s1", query="checkout")).text


def test_the_reminder_needs_checks_still_configured(checked: Memory, db_path: Path) -> None:
    say(checked, 2, "probably")
    checked.validate_new(["s1"], trigger="api")
    assert "[repair 1/2]" in checked.assemble(AssemblyRequest("s1", query="x")).text
    checked.close()
    (db_path.parent / "memory.toml").unlink()
    with Memory.open(db_path) as plain:
        assert "[repair" not in plain.assemble(AssemblyRequest("s1", query="x")).text


def test_the_plugin_checks_each_new_assistant_message_once(checked: Memory) -> None:
    plugin = Plugin(checked)
    event = {"session_id": "s1", "seq": 2, "type": "assistant/message", "role": "assistant"}
    assert plugin.on_event({**event, "text": "probably"})
    assert not plugin.on_event({**event, "text": "probably"})  # a replay stores nothing
    plugin.on_event({"session_id": "s1", "seq": 3, "type": "user/message", "text": "ok?"})
    runs = checked.db.conn.execute(
        "SELECT event_seq, trigger, blocked FROM validation_logs"
    ).fetchall()
    assert [tuple(r) for r in runs] == [(2, "on_event", 1)]


def test_cli_validate_status_and_explain_show_the_run(checked: Memory, db_path: Path) -> None:
    say(checked, 2, "probably")
    checked.close()
    runner = CliRunner()
    out = runner.invoke(cli, ["--db", str(db_path), "validate", "--session", "s1", "--json"])
    data = json.loads(out.stdout)
    assert data["blocking"] is True and data["violations"][0]["term"] == "probably"
    assert (data["event_seq"], data["trigger"], data["max_repair_attempts"]) == (2, "cli", 2)
    status = json.loads(runner.invoke(cli, ["--db", str(db_path), "status", "--json"]).stdout)
    assert status["latest_validation"]["id"] == data["id"]
    assert status["counts"]["validation_logs"] == 1
    text = runner.invoke(cli, ["--db", str(db_path), "status"]).stdout
    assert "latest validation 1 of s1:2: 1 violation(s)" in text
    runner.invoke(cli, ["--db", str(db_path), "assemble", "--session", "s1", "--query", "x"])
    explained = json.loads(runner.invoke(cli, ["--db", str(db_path), "explain", "--json"]).stdout)
    assert explained["validation"]["id"] == data["id"]
    rules = next(s for s in explained["sections"] if s["name"] == "rules")
    assert rules["included"][0]["ref"] == "repair:1"
    shown = runner.invoke(cli, ["--db", str(db_path), "explain"]).stdout
    assert "validation run 1 of s1:2: 1 violation(s), blocking (repair 1/2)" in shown


def test_cli_validate_without_an_assistant_message_is_exit_2(
    db_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Memory.open(db_path) as memory:
        say(memory, 1, "hello", role="user")
    with pytest.raises(SystemExit) as exit_info:
        main(["--db", str(db_path), "validate", "--session", "s1"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == "Error: session 's1' has no assistant message to validate\n"


# -- preconditions --------------------------------------------------------------------------


PRE = [
    {"name": "append-only", "tools": ["Write"], "mustNotExist": ["migrations/*.sql"]},
    {"tools": ["Edit", "mcp__*"], "mustExist": ["src/**"], "reason": "edit existing files only"},
]


def decide(
    tool: str, arguments: dict[str, Any], cwd: str = "/repo", exists: Collection[str] = ()
) -> tuple[bool, str | None]:
    pre = config(preconditions=PRE).validation.preconditions
    found = check_preconditions(pre, tool, arguments, cwd, exists=lambda p: p in exists)
    return found.allow, found.reason


def test_preconditions_deny_with_a_reason() -> None:
    taken = {"/repo/migrations/0001_init.sql"}
    assert decide("Write", {"file_path": "migrations/0001_init.sql"}, exists=taken) == (
        False,
        "memplug precondition append-only: migrations/0001_init.sql must not exist and does",
    )
    assert (
        decide("Write", {"file_path": "/repo/migrations/0001_init.sql"}, exists=taken)[0] is False
    )
    assert decide("Write", {"file_path": "migrations/0002_new.sql"}, exists=taken) == (True, None)
    assert decide("Read", {"file_path": "migrations/0001_init.sql"}, exists=taken) == (True, None)
    assert decide("Edit", {"file_path": "src/a/new.py"}) == (False, "edit existing files only")
    assert decide("mcp__fs__edit", {"path": "src/x.py"}) == (False, "edit existing files only")
    assert decide("Edit", {"file_path": "src/a.py"}, exists={"/repo/src/a.py"}) == (True, None)
    assert decide("Edit", {"file_path": "docs/a.md"}) == (True, None)
    assert decide("Bash", {"command": "rm -rf migrations"}) == (True, None)


def test_plugin_pre_tool_denies_and_a_broken_call_allows(db_path: Path, tmp_path: Path) -> None:
    (tmp_path / "migrations").mkdir()
    (tmp_path / "migrations" / "0001_init.sql").write_text("")
    with Plugin(Memory.open(db_path, config={"validation": {"preconditions": PRE}})) as plugin:
        call = {"session_id": "s1", "tool_name": "Write", "cwd": str(tmp_path)}
        denied = plugin.pre_tool({**call, "arguments": {"file_path": "migrations/0001_init.sql"}})
        assert not denied.allow and denied.reason is not None and "append-only" in denied.reason
        assert plugin.pre_tool({**call, "arguments": {"file_path": "migrations/0002.sql"}}).allow
        assert plugin.pre_tool({"tool_name": 3}).allow
        errors = plugin.memory.store.events.latest_errors()
        assert [e["stage"] for e in errors] == ["pre_tool"]


def test_the_claude_code_hook_validates_what_it_captured(
    tmp_path: Path, db_path: Path, cli: Callable[..., CliResult]
) -> None:
    transcript = tmp_path / "t.jsonl"
    records = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "cc1",
         "timestamp": "2026-01-05T10:00:00Z", "cwd": "/w",
         "message": {"role": "user", "content": "Is it fast?"}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": "cc1",
         "timestamp": "2026-01-05T10:00:05Z", "cwd": "/w",
         "message": {"id": "m1", "role": "assistant", "stop_reason": "end_turn",
                     "content": [{"type": "text", "text": "It is probably fast."}]}},
    ]  # fmt: skip
    transcript.write_text("".join(json.dumps(r) + "\n" for r in records))
    db_path.parent.mkdir(parents=True, exist_ok=True)
    (db_path.parent / "memory.toml").write_text(
        '[[validation.checks]]\ntype = "forbidden_terms"\nterms = ["probably"]\nblock = true\n'
    )
    payload = {"session_id": "cc1", "transcript_path": str(transcript)}
    for event in ("PreToolUse", "Stop", "Stop"):
        hook = json.dumps({**payload, "hook_event_name": event})
        assert cli("--db", str(db_path), "hook", "claude-code", input=hook).returncode == 0
        if event == "PreToolUse":  # text before a tool call is not a reply: not checked
            assert cli("--db", str(db_path), "status", "--json").json()["latest_validation"] is None
    status = cli("--db", str(db_path), "status", "--json").json()
    run = status["latest_validation"]
    assert (run["session_id"], run["trigger"], run["blocking"]) == ("cc1", "claude-code", True)
    assert status["counts"]["validation_logs"] == 1
    prompt = {**payload, "hook_event_name": "UserPromptSubmit", "prompt": "Is it fast?"}
    out = cli("--db", str(db_path), "hook", "claude-code", input=json.dumps(prompt)).json()
    context = out["hookSpecificOutput"]["additionalContext"]
    assert "- [repair 1/2] memplug's checks failed on the last assistant message [ev cc1:" in (
        context
    )


def test_purging_a_session_purges_its_validation_runs(checked: Memory, db_path: Path) -> None:
    say(checked, 2, "probably")
    checked.validate_new(["s1"], trigger="api")
    checked.close()
    main(["--db", str(db_path), "purge", "--session", "s1", "--yes", "--json"])
    with Memory.open(db_path) as memory:
        assert memory.store.counts()["validation_logs"] == 0
