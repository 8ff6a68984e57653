"""Every exit by which text leaves memplug for a model or another machine withholds the
same secrets, and keeps the sentence around them: one suite, run against each exit.

The events go in as a person's would (``memory import``); each exit is read as its
consumer reads it: the injected message (API and ``memory assemble --query``), work
records, the MCP tools, and what a sync push sends (``redact_secrets(text, named=True)``
over the exported events)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import run_cli_here

import memplug.hosts.mcp as server
from memplug.base.redaction import redact_secrets
from memplug.capture.transfer import export_lines
from memplug.memory import Memory
from memplug.recall.assemble import AssemblyRequest

CWD = "/home/ana/shop"
GITHUB = "ghp_" + "a1B2" * 9


def _event(seq: int, text: str, **extra: object) -> dict[str, object]:
    return {"session_id": "s1", "seq": seq, "type": "user/message", "role": "user",
            "time": f"2026-03-02T09:00:{seq:02d}Z", "text": text, "cwd": CWD, **extra}  # fmt: skip


def _bash(seq: int, command: str) -> list[dict[str, object]]:
    call = "Bash " + json.dumps({"command": command})
    return [
        _event(seq, call, type="tool/call", role="tool", tool_name="Bash", call_id=f"c{seq}"),
        _event(seq + 1, "ok", type="tool/result", role="tool", tool_name="Bash",
               call_id=f"c{seq}", outcome="succeeded"),
    ]  # fmt: skip


EVENTS = [
    _event(1, "Remember: the staging db password is hunter2, use it for the migration"),
    _event(2, "the password is hunter2"),
    _event(3, "password: hunter3"),
    *_bash(4, "PGPASSWORD=hunter2 psql -h db.internal -U admin app"),
    _event(6, f"Decision: the deploy job uses the token {GITHUB} for CI"),
    _event(7, "Decision: the office wifi password is coffeeshop2024 for guests"),
    *_bash(8, "mysql -u root -pS3cretPw shop < dump.sql"),
    _event(10, "We must call the health check with curl -u admin:Curl9pw on staging"),
]
SECRETS = ["hunter2", "hunter3", GITHUB, "coffeeshop2024", "S3cretPw", "Curl9pw"]
QUERIES = [
    "what is the staging db password?",
    "what was the password?",
    "which command did we run against db.internal with psql?",
    "which token does the deploy job use for CI?",
    "what is the office wifi password?",
    "did the mysql restore of dump.sql run?",
    "how do we call the health check on staging?",
]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("exits")
    source = root / "events.jsonl"
    source.write_text("".join(json.dumps(e) + "\n" for e in EVENTS), encoding="utf-8")
    path = root / "db" / "m.sqlite"
    done = run_cli_here("--db", str(path), "import", str(source))
    assert done.returncode == 0, done.stderr
    return path


def injected_api(db: Path) -> str:
    with Memory.open(db, create=False) as memory:
        return "\n".join(
            memory.assemble(AssemblyRequest(session_id="s1", query=q)).text for q in QUERIES
        )


def injected_cli(db: Path) -> str:
    out = []
    for query in QUERIES:
        done = run_cli_here("--db", str(db), "assemble", "--session", "s1", "--query", query)
        assert done.returncode == 0, done.stderr
        out.append(done.stdout)
    return "\n".join(out)


def work_records(db: Path) -> str:
    """The work lines of the injected messages: what a record says a command was."""
    return "\n".join(line for line in injected_api(db).splitlines() if " ran `" in line)


def _mcp(db: Path, name: str, arguments: dict[str, object]) -> str:
    return json.dumps(server.call(server.ServerSettings(str(db), None, CWD), name, arguments))


def mcp_search(db: Path) -> str:
    return "\n".join(_mcp(db, "memory_search", {"query": q, "limit": 40}) for q in QUERIES)


def mcp_expand(db: Path) -> str:
    return "\n".join(_mcp(db, "memory_expand", {"target": f"s1:{e['seq']}"}) for e in EVENTS)


def mcp_timeline(db: Path) -> str:
    return _mcp(db, "memory_timeline", {"scope": "global", "limit": 50})


def mcp_core(db: Path) -> str:
    return _mcp(db, "memory_core", {})


def sync_push(db: Path) -> str:
    """What leaves the machine: each exported event's text as the sync push sends it."""
    with Memory.open(db, create=False) as memory:
        rows = [json.loads(line) for line in export_lines(memory.store)]
    return "\n".join(redact_secrets(str(row.get("text") or ""), named=True) for row in rows)


EXITS: dict[str, Callable[[Path], str]] = {
    "injected message (API)": injected_api,
    "injected message (memory assemble --query)": injected_cli,
    "work records": work_records,
    "MCP memory_search snippets": mcp_search,
    "MCP memory_expand": mcp_expand,
    "MCP memory_timeline": mcp_timeline,
    "MCP memory_core": mcp_core,
    "sync push": sync_push,
}


@pytest.mark.parametrize("exit_name", list(EXITS))
def test_no_secret_leaves_by_this_exit_and_the_text_around_it_does(
    db: Path, exit_name: str
) -> None:
    text = EXITS[exit_name](db)
    leaked = [secret for secret in SECRETS if secret in text]
    assert leaked == [], f"{exit_name} let out {leaked}"
    # The exit carried the statements themselves, with their values withheld.
    assert "[redacted:" in text, text[:2000]


def test_the_four_probes_of_the_issue_are_withheld_through_the_cli(db: Path) -> None:
    text = injected_cli(db)
    assert "the staging db password is [redacted:password], use it for the migration" in text
    assert "the password is [redacted:password]" in text
    # "password: hunter3" holds nothing but the secret: too short to quote once it is cut.
    assert "hunter3" not in text
    assert "ran `PGPASSWORD=[redacted:password] psql -h db.internal -U admin app` → ok" in text


def test_explain_names_what_a_quoted_line_had_withheld(db: Path) -> None:
    query = "what is the staging db password?"
    done = run_cli_here("--db", str(db), "assemble", "--session", "s1", "--query", query)
    assert done.returncode == 0, done.stderr
    explained = run_cli_here("--db", str(db), "explain", "--session", "s1")
    assert explained.returncode == 0, explained.stderr
    assert "withheld:password" in explained.stdout
    assert not any(secret in explained.stdout for secret in SECRETS)


def test_each_mcp_tool_keeps_the_sentence_and_names_what_it_withheld(db: Path) -> None:
    assert "the password is [redacted:password]" in mcp_search(db)
    assert "staging db password is [redacted:password], use it" in mcp_expand(db)
    assert "uses the token [redacted:github_token] for CI" in mcp_timeline(db)
    assert "wifi password is [redacted:password] for guests" in mcp_core(db)


def test_a_work_record_never_stores_the_value(db: Path) -> None:
    """Withheld when the record is derived, so its index words and every reader (the
    message, `memory search --type`, a rebuild) never hold it either."""
    with Memory.open(db, create=False) as memory:
        targets = [row.target for row in memory.store.work.session_rows("s1")]
    assert targets == [
        "PGPASSWORD=[redacted:password] psql -h db.internal -U admin app",
        "mysql -u root -p[redacted:password] shop < dump.sql",
    ]


# -- a search cannot confirm a guessed value ----------------------------------------------

GUESSED = [
    _event(1, "the password is hunter2"),
    _event(2, "we talked to hunter about the hunter2 plan"),
    _event(3, "the staging host is db.internal"),
]


@pytest.fixture(scope="module")
def guessed_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("guess")
    source = root / "events.jsonl"
    source.write_text("".join(json.dumps(e) + "\n" for e in GUESSED), encoding="utf-8")
    path = root / "m.sqlite"
    done = run_cli_here("--db", str(path), "import", str(source))
    assert done.returncode == 0, done.stderr
    return path


def _hits(db: Path, query: str, **extra: object) -> tuple[int, list[tuple[int, str, bool]]]:
    page = json.loads(_mcp(db, "memory_search", {"query": query, **extra}))
    return page["total"], [(h["seq"], h["why"], h["pinned"]) for h in page["hits"]]


@pytest.mark.parametrize(
    ("query", "extra"),
    [("hunter2", {}), ("password hunter2", {}), ('"password is hunter2"', {}),
     ("hunter9", {}), (r"hunt.r\d", {"mode": "regex"})],
)  # fmt: skip
def test_a_hit_that_only_a_withheld_value_matched_is_left_out(
    guessed_db: Path, query: str, extra: dict[str, object]
) -> None:
    """A right guess (hunter2) and a wrong one (hunter9, whose prefix the index finds in
    hunter2) get the same answer: no hit on the event that withholds the value, none
    found near it, and a total that counts neither."""
    total, hits = _hits(guessed_db, query, **extra)
    assert 1 not in [seq for seq, _, _ in hits], hits
    assert not any(why.startswith("near:s1:1") for _, why, _ in hits), hits
    assert total == len(hits)


def test_a_right_and_a_wrong_guess_read_alike(guessed_db: Path) -> None:
    right = [(seq, why) for seq, why, _ in _hits(guessed_db, "hunter2")[1]]
    wrong = [(seq, why) for seq, why, _ in _hits(guessed_db, "hunter9")[1]]
    assert [seq for seq, _ in right] == [seq for seq, _ in wrong] == [2, 3]
    # The plain mention of hunter2 still matches it exactly: it withholds nothing.
    assert right[0] == (2, "exact:hunter2")


def test_the_event_is_still_found_by_what_it_says_around_the_value(guessed_db: Path) -> None:
    total, hits = _hits(guessed_db, "password")
    assert (1, "word:password", False) in hits
    assert total == len(hits) == 3


def test_the_cli_pull_commands_withhold_what_an_agent_would_read(tmp_path: Path) -> None:
    from tests.installed import memory

    db = tmp_path / "m.sqlite"
    lines = [{"session_id": "s", "seq": 1, "type": "user/message", "role": "user",
              "text": "connect with mysql -u root -pS3cretPw9 staging_app"},
             {"session_id": "s", "seq": 2, "type": "user/message", "role": "user",
              "text": "the staging db password is hunter2"}]  # fmt: skip
    text = "".join(json.dumps(line) + "\n" for line in lines)
    assert memory("--db", str(db), "import", "-", input=text).returncode == 0
    found = memory("--db", str(db), "search", "mysql root staging_app")
    assert "S3cretPw9" not in found.stdout and "-p[redacted:password] staging_app" in found.stdout
    said = memory("--db", str(db), "search", "staging db password", "--json")
    assert "hunter2" not in said.stdout and "[redacted:password]" in said.stdout
    assert memory("--db", str(db), "search", "hunter2", "--json").json()["hits"] == []
    shown = memory("--db", str(db), "expand", "s:2")
    assert "hunter2" not in shown.stdout and "[redacted:password]" in shown.stdout
    raw = memory("--db", str(db), "expand", "s:2", "--raw")
    assert raw.returncode == 2 and raw.stderr.strip().endswith("only to a terminal")
