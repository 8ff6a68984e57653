"""Work records (memplug.derive.work) and the work section of the message.

Records are derived from tool calls and results — the tool, one structural field of
its input, the outcome — never from the text of the output; they are rebuilt
identically, found by their path components and command words, and shown in the work
section: the ones the query names, or, after a compaction with nothing named, the last
few before it ("where we were"). The golden is the Claude Code fixture session after
its compaction (``UPDATE_GOLDEN=1`` rewrites it).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import new_db
from derived_state import dump, ev
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.compat import transcripts
from memplug.base.models import HostEvent, Message
from memplug.base.text import tool_arguments
from memplug.derive.work import TARGET_CHARS, WorkDeriver, describe, exit_code, words
from memplug.hosts import claude_code as cc
from memplug.hosts import claude_hook
from memplug.memory import Memory
from memplug.plugin import Plugin
from memplug.recall.assemble import AssemblyRequest
from memplug.recall.query import parse_query
from memplug.reports.explain import explain, render_explain
from memplug.store.db import Database
from memplug.store.records import WorkRow
from memplug.store.work import WorkStore

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures" / "claude_code"
GOLDEN = REPO / "fixtures" / "golden" / "claude-code-after-compaction.en.txt"
MAIN = "5e1f0c2a-7b3d-4e8f-9a10-c0ffee000001"
CWD = "/home/ana/shop"


H = "/home/ana/shop/"
CALLS = [
    ("Read", {"file_path": H + "config/app.toml"}, ("read", "config/app.toml")),
    ("Read", {"file_path": "/etc/hosts"}, ("read", "/etc/hosts")),
    ("Edit", {"file_path": H + "a.py", "old_string": "x"}, ("edited", "a.py")),
    ("Write", {"file_path": H + "b.py", "content": "…"}, ("wrote", "b.py")),
    ("NotebookEdit", {"notebook_path": H + "n.ipynb"}, ("edited", "n.ipynb")),
    ("Bash", {"command": "mix test a_test.exs\nmix credo"}, ("ran", "mix test a_test.exs …")),
    ("Grep", {"pattern": "def fire|def handle"}, ("searched", "def fire|def handle")),
    ("Glob", {"pattern": "**/*.ex"}, ("searched", "**/*.ex")),
    ("Task", {"description": "Find cards", "prompt": "…"}, ("delegated", "Find cards")),
    ("TodoWrite", {"todos": []}, ("called", "")),
    # Hosts that store a call's input as plain text.
    ("bash", "ls && head -20 pyproject.toml", ("ran", "ls && head -20 pyproject.toml")),
    ("edit_file", "app/checkout/handler.py: replace `x`", ("edited", "app/checkout/handler.py")),
    ("read_file", "please read the handler", ("called", "")),
]


@pytest.mark.parametrize(("tool", "given", "expected"), CALLS)
def test_a_call_is_described_by_its_one_structural_field(
    tool: str, given: dict[str, object] | str, expected: tuple[str, str]
) -> None:
    text = given if isinstance(given, str) else f"{tool} {json.dumps(given)}"
    assert describe(tool, text, CWD) == expected


@pytest.mark.parametrize(
    ("text", "code"),
    [("Exit code 2\n** (CompileError)", 2), ("exit 1: port 8080 in use", 1), ("all good", None)],
)
def test_the_exit_code_is_read_from_the_start_of_the_result(text: str, code: int | None) -> None:
    assert exit_code(text) == code


def test_path_components_and_command_words_are_findable() -> None:
    target = "deps/ash_computer/lib/ash_computer/live_view.ex"
    found = target + " " + words("Read", "read", target, "failed")
    for needle in ("computer", "ashcomputer", "live", "liveview", "failed", "file"):
        assert needle in found, needle
    assert "output" not in words("Bash", "ran", "mix test", "succeeded")


@given(st.text(max_size=2_000))
@settings(max_examples=200, deadline=None)
def test_a_target_is_one_short_line_whatever_the_command(command: str) -> None:
    action, target = describe("Bash", "Bash " + json.dumps({"command": command}), CWD)
    assert "\n" not in target and len(target) <= TARGET_CHARS
    assert action in ("ran", "called")
    assert words("Bash", action, target, None) == words("Bash", action, target, None).lower()


# -- on the Claude Code fixture session -----------------------------------------------


def capture_fixtures(memory: Memory) -> None:
    report = claude_hook.HookReport(event="test")
    claude_hook.capture_all(
        Plugin(memory), transcripts(FIXTURES), report, claude_hook.Deadline(60_000)
    )
    assert not report.errors, report.errors


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    with Memory.open(new_db(tmp_path_factory.mktemp("cc") / "m.sqlite")) as memory:
        capture_fixtures(memory)
        yield memory


def rows(memory: Memory) -> dict[int, tuple[str, str, str | None, int | None]]:
    return {
        r.seq: (r.action, r.target, r.outcome, r.exit_code)
        for r in memory.store.work.session_rows(MAIN)
    }


def test_each_tool_call_of_the_session_is_a_work_record(session: Memory) -> None:
    assert rows(session) == {
        4: ("ran", "grep -rn port config/", "succeeded", None),
        5: ("read", "config/local.toml", "failed", None),
        19: ("ran", "pytest -q tests/test_checkout.py", "failed", 1),
        23: ("delegated", "Find card handling", "succeeded", None),
    }
    # Linked to the result event, and nothing of the output's text is kept.
    record = session.store.work.get(MAIN, 19)
    assert record is not None and record.result_seq == 20
    assert "41 passed" not in record.words + record.target and "3.20s" not in record.words


def test_rebuild_derives_the_same_records(tmp_path: Path) -> None:
    with Memory.open(new_db(tmp_path / "m.sqlite")) as memory:
        capture_fixtures(memory)
        before = dump(memory)
        assert before["work_records"] and before["work_fts"]
        memory.extractor.rebuild()
        assert dump(memory) == before


@pytest.mark.parametrize("batch", [1, 3, 7])
def test_records_do_not_depend_on_how_events_arrive(tmp_path: Path, batch: int) -> None:
    events = cc.read_all(FIXTURES / f"{MAIN}.jsonl").host_events()
    with Memory.open(new_db(tmp_path / "all.sqlite")) as memory:
        memory.ingest(events)
        whole = {k: dump(memory)[k] for k in ("work_records", "work_fts")}
    with Memory.open(new_db(tmp_path / "parts.sqlite")) as memory:
        for start in range(0, len(events), batch):
            memory.ingest(events[start : start + batch])
        # The index is written once per pass; a result settling a call indexed in an
        # earlier pass re-indexes it: both ways leave it whole and in step with its rows.
        assert {k: dump(memory)[k] for k in ("work_records", "work_fts")} == whole
        assert memory.store.admin.check_indexes()["work_fts"] == "ok"


def _shared_ids() -> list[HostEvent]:
    def call(seq: int, command: str, call_id: str) -> HostEvent:
        return ev("dup", seq, "Bash " + json.dumps({"command": command}), type="tool/call",
                  tool_name="Bash", call_id=call_id)  # fmt: skip

    def result(seq: int, text: str, call_id: str) -> HostEvent:
        return ev("dup", seq, text, type="tool/result", tool_name="Bash", call_id=call_id,
                  outcome="failed" if text.startswith("Exit") else None)  # fmt: skip

    return [
        result(1, "Exit code 9", "a"),  # answers no call yet
        call(2, "make one", "a"),
        result(3, "done", "a"),
        call(4, "make two", "a"),  # the same id again: results settle the first call
        result(5, "Exit code 2", "a"),
        call(6, "make three", "b"),
        result(7, "Exit code 1", "b"),
        result(8, "ok", "zz"),
    ]


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="ab1é_- ./Σ", max_size=24))
def test_joined_names_are_the_runs_a_backtracking_search_finds(target: str) -> None:
    reference = re.findall(r"[^\W_]+(?:[_-][^\W_]+)+", target)
    joined = " ".join(w.replace("_", "").replace("-", "") for w in reference)
    assert (
        words("Bash", "ran", target, None)
        == " ".join(p for p in (joined, "Bash", "ran run command") if p).lower()
    )


def _parsed_object(body: str) -> object:
    try:
        value = json.loads(body)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


@settings(max_examples=400, deadline=None)
@given(
    st.text(alphabet=" \t\n\r\u3000\x1c\ufeff", max_size=3),
    st.sampled_from(['{"command": "ls"}', "{}", "[1]", "1", '"x"', "{", "ls -la", "Bash {}"]),
    st.text(alphabet=" \n}x", max_size=2),
)
def test_a_call_input_is_read_exactly_when_it_parses_as_an_object(
    blanks: str, payload: str, tail: str
) -> None:
    # Leading blanks of every kind (JSON's, other Unicode ones, a BOM) before objects,
    # other JSON values and plain commands.
    body = blanks + payload + tail
    assert tool_arguments("Bash" + body, "Bash") == _parsed_object(body)


@pytest.mark.parametrize("batch", [1, 2, 8])
def test_a_result_settles_the_first_call_of_its_id(tmp_path: Path, batch: int) -> None:
    # A whole session is derived with its calls kept in memory; later batches ask the
    # table for each result: both make the same choice.
    events = _shared_ids()
    with Memory.open(new_db(tmp_path / "m.sqlite")) as memory:
        for start in range(0, len(events), batch):
            memory.ingest(events[start : start + batch])
        want = {
            2: ("make one", 5, "failed", 2),
            4: ("make two", None, None, None),
            6: ("make three", 7, "failed", 1),
        }
        assert work_of(memory) == want
        memory.extractor.rebuild()
        assert work_of(memory) == want


def work_of(memory: Memory) -> dict[int, tuple[str, int | None, str | None, int | None]]:
    return {
        r.seq: (r.target, r.result_seq, r.outcome, r.exit_code)
        for r in memory.store.work.session_rows("dup")
    }


def test_a_kept_call_whose_write_was_taken_back_is_looked_up(tmp_path: Path) -> None:
    with Memory.open(new_db(tmp_path / "m.sqlite")) as memory:
        memory.ingest(_shared_ids())
        stored = {e.seq: e for e in memory.store.events.session_events("dup", after_seq=-1)}
        deriver = WorkDeriver(memory.store)
        deriver.clear("dup")
        with pytest.raises(RuntimeError), memory.store.transaction():
            deriver.follow(stored[2], ())
            raise RuntimeError("a failed pass")
        deriver.follow(stored[4], ())
        deriver.follow(stored[5], ())
        assert work_of(memory) == {4: ("make two", 5, "failed", 2)}


def test_the_query_names_the_failed_command(session: Memory) -> None:
    result = session.assemble(AssemblyRequest(session_id=MAIN, query="which test failed?"))
    work = [e for e in result.included if e.section == "work"]
    assert [(e.group, e.line) for e in work] == [
        (f"### [ev {MAIN}]", "- [ev :19] ran `pytest -q tests/test_checkout.py` → failed, exit 1")
    ]
    assert "## Work done" in result.text and "Where we were" not in result.text


def test_each_query_term_reads_only_its_newest_matches(tmp_path: Path) -> None:
    # A word every record holds would have the search read them all: each term is read
    # newest first, at most `per_term` rows of it, so an old record is still found by
    # a rarer term it holds, and the pool stays bounded whatever the records in scope.
    with Database.open(new_db(tmp_path / "m.sqlite")) as db:
        store = WorkStore(db)
        for seq in range(1, 31):
            target = "src/rare_module.py" if seq == 2 else f"src/f{seq}.py"
            words = f"read {target} common"
            nothing = (None,) * 6
            row = WorkRow("s1", seq, None, "Read", "read", target, *nothing, words)
            store.insert(row)
        found = store.match(parse_query("common rare_module"), ["s1"], 5)
        assert [r.seq for r in found] == [2, 26, 27, 28, 29, 30]
        assert [r.seq for r in store.match(parse_query("common"), None, 5)] == [26, 27, 28, 29, 30]
        assert store.match(parse_query("common"), ["s2"], 5) == []


def after_compaction(memory: Memory, prompt: str) -> list[Message]:
    events = memory.store.events.session_events(MAIN)
    compacted = max(e.seq for e in events if e.type.startswith("compaction/"))
    return [
        Message(role=e.role or "user", text=e.text)
        for e in events
        if e.seq > compacted and e.type in ("user/message", "assistant/message")
    ] + [Message(role="user", text=prompt)]


def test_after_the_compaction_the_message_says_where_we_were(session: Memory) -> None:
    prompt = "ok, carry on"
    result = session.assemble(
        AssemblyRequest(session_id=MAIN, query=prompt, messages=after_compaction(session, prompt))
    )
    work = [e for e in result.included if e.section == "work"]
    # What failed and what was handed on; the grep that only worked (:4) is not news.
    assert [e.ref for e in work] == [f"{MAIN}:{n}" for n in (5, 19, 23)]
    assert {e.kind for e in work} == {"recent"}
    omitted = {o.ref: (o.reason, o.detail) for o in result.omitted if o.section == "work"}
    assert omitted[f"{MAIN}:4"] == (
        "says only that it worked",
        "where we were is what changed or failed",
    )
    assert "## Where we were (the last steps before the compaction)" in result.text
    text = render_explain(explain(session.store.logs.get(result.assembly_id or -1)))
    assert "Where we were" in text and f"{MAIN}:19" in text
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.write_text(result.text + "\n", encoding="utf-8")
    assert result.text + "\n" == GOLDEN.read_text(encoding="utf-8")


@pytest.mark.parametrize("prompt", ["ok, carry on", "yes, do it", "continue"])
def test_a_generic_request_gets_where_we_were_and_no_evidence(session: Memory, prompt: str) -> None:
    result = session.assemble(
        AssemblyRequest(session_id=MAIN, query=prompt, messages=after_compaction(session, prompt))
    )
    assert {e.section for e in result.included} <= {"core", "task", "work"}
    assert {e.kind for e in result.included if e.section == "work"} == {"recent"}
    assert "No committed evidence" not in result.text  # nothing was asked for


def test_where_we_were_is_left_out_when_memory_answers_the_request(session: Memory) -> None:
    prompt = "which port does the checkout API listen on?"
    result = session.assemble(
        AssemblyRequest(session_id=MAIN, query=prompt, messages=after_compaction(session, prompt))
    )
    assert "port 8080" in result.text and "Where we were" not in result.text
    assert not [e for e in result.included if e.section == "work"]
    omitted = {o.ref: o.reason for o in result.omitted if o.section == "work"}
    assert omitted == {f"{MAIN}:{n}": "the request is answered" for n in (4, 5, 19, 23)}


def test_work_still_in_the_hosts_context_is_not_restated(tmp_path: Path) -> None:
    # The session as it stood before its compaction: every call is in the model's context.
    events = [e for e in cc.read_all(FIXTURES / f"{MAIN}.jsonl").host_events() if e.seq < 26]
    seen = [Message(role=e.role or "user", text=e.raw_text()) for e in events]
    with Memory.open(new_db(tmp_path / "m.sqlite")) as memory:
        memory.ingest(events)
        query = AssemblyRequest(session_id=MAIN, query="which test failed?")
        assert [e.ref for e in memory.assemble(query).included if e.section == "work"] == [
            f"{MAIN}:19"
        ]
        result = memory.assemble(
            AssemblyRequest(session_id=MAIN, query="which test failed?", messages=seen)
        )
    assert not [e for e in result.included if e.section == "work"]
    omitted = {o.ref: o.reason for o in result.omitted if o.section == "work"}
    assert omitted == {f"{MAIN}:19": "visible in context"}


def test_the_work_section_keeps_to_its_budget(tmp_path: Path) -> None:
    asked = "which pytest, grep config, card handling did we run?"
    query = AssemblyRequest(session_id=MAIN, query=asked)
    for budget, shown in ((0, 0), (20, 0), (400, 4)):
        config = {"assembly": {"workBudgetTokens": budget}}
        with Memory.open(new_db(tmp_path / f"m{budget}.sqlite"), config=config) as memory:
            capture_fixtures(memory)
            result = memory.assemble(query)
        work = [e for e in result.included if e.section == "work"]
        assert len(work) == shown, budget
        assert sum(e.tokens for e in work) <= budget
        if budget == 20:
            reasons = {o.reason for o in result.omitted if o.section == "work"}
            # What fits is left out for the budget; what only worked, for itself.
            assert "over budget" in reasons
            assert reasons <= {"over budget", "says only that it worked"}


def test_the_agents_words_are_labelled_as_its_own(session: Memory) -> None:
    result = session.assemble(AssemblyRequest(session_id=MAIN, query="card payload line 88"))
    line = next(e.line for e in result.included if e.ref == f"{MAIN}:25")
    assert "] assistant said, " in line and "user" not in line.split(":")[0]


def test_a_scoped_term_search_tests_the_scope_on_the_rowid_index(tmp_path: Path) -> None:
    # Migration 0010: the session of each match is read from `work_records_rid_scope`,
    # not from the wide row; interleaved sessions, so the walk passes out-of-scope
    # matches between the ones it keeps, and the answer is the plain join's.
    with Database.open(new_db(tmp_path / "m.sqlite")) as db:
        store = WorkStore(db)
        for seq in range(1, 41):
            for session in ("s1", "s2", "s3"):
                target = f"src/{session}_{seq}.py"
                row = WorkRow(session, seq, None, "Read", "read", target, *(None,) * 6, "common")
                store.insert(row)
        found = store.match(parse_query("common"), ["s3", "s1"], 7)
        plain = db.conn.execute(
            "SELECT w.session_id, w.seq FROM work_fts f JOIN work_records w ON w.rid = f.rowid "
            "WHERE work_fts MATCH 'common' AND w.session_id IN ('s1', 's3') "
            "ORDER BY f.rowid DESC LIMIT 7"
        ).fetchall()
        assert [(r.session_id, r.seq) for r in found] == sorted(plain)
        assert {r.session_id for r in found} == {"s1", "s3"} and len(found) == 7
        plan = " ".join(
            str(row[-1])
            for row in db.conn.execute(
                "EXPLAIN QUERY PLAN SELECT w.rid FROM work_fts f JOIN work_records w "
                "INDEXED BY work_records_rid_scope ON w.rid = f.rowid "
                "WHERE work_fts MATCH 'common' AND +(w.session_id IN ('s1')) "
                "ORDER BY f.rowid DESC LIMIT 7"
            )
        )
        assert "COVERING INDEX work_records_rid_scope (rid=?)" in plan


@pytest.mark.parametrize("kind", ["compaction/start", "compaction/summary", "compaction/prune"])
def test_the_latest_compaction_is_found_by_each_compaction_type(tmp_path: Path, kind: str) -> None:
    with Memory.open(new_db(tmp_path / "m.sqlite")) as memory:
        events = [
            ev("s", 1, "hello"),
            ev("s", 2, "summary of the work", type=kind),
            ev("s", 3, "the compaction/ prefix, only as words"),
        ]
        memory.ingest(events)
        assert memory.store.work.latest_compaction("s") == 2
        assert memory.store.work.latest_compaction("other") is None


NO_STEP = ("says only that it worked", "the request asks for no step")
A_TOOL_CALL = ("on the way", "a tool call")


@pytest.mark.parametrize(
    ("prompt", "left_out"),
    [
        ("which command searched the port config?", None),
        ("where did we grep for the port config?", None),
        ("why did the grep of the port config take so long?", NO_STEP),
        # Requests that ask nothing about earlier work get no work record at all.
        ("let's make the grep of the port config faster", A_TOOL_CALL),
        ("can we grep the port config faster?", A_TOOL_CALL),
    ],
)
def test_a_record_that_only_worked_is_quoted_for_a_question_a_step_answers(
    session: Memory, prompt: str, left_out: tuple[str, str] | None
) -> None:
    # "ran `grep …` → ok" is the answer to "which command …?"; for anything else it
    # says only that the agent looked somewhere.
    result = session.assemble(AssemblyRequest(session_id=MAIN, query=prompt))
    ref = f"{MAIN}:4"
    assert (ref in {e.ref for e in result.included if e.section == "work"}) is (left_out is None)
    omitted = {o.ref: (o.reason, o.detail) for o in result.omitted if o.section == "work"}
    assert omitted.get(ref) == left_out


@pytest.fixture(autouse=True)
def _one_tier(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests judge which lines are worth quoting at all: every line that passes is
    quoted (one tier), so that the two tiers' own criterion (test_index.py) is not what
    they measure."""
    monkeypatch.setenv("MEMPLUG_ASSEMBLY__QUOTE_SPECIFIC", "0")
    monkeypatch.setenv("MEMPLUG_ASSEMBLY__QUOTES", "100")
