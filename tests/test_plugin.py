"""The plugin driven like a harness: the reference host loop below replays the fixture
session, calls ``pre_step`` before every model step with what the model would see, and
commits every injection back into its log — as a host must. Also: the plugin never
raises into the host, and the golden injected messages and explanations.

Set ``UPDATE_GOLDEN=1`` to rewrite ``fixtures/golden/`` after an intended change
(the test still compares, so a rewrite is never a silent pass).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import lock_requests, new_db
from freezegun import freeze_time

import memplug
from memplug.base.config import load_config
from memplug.base.models import Injection
from memplug.plugin import Plugin
from memplug.recall.assemble import LOG_WAIT_MS
from memplug.reports.explain import explain, find_assembly, render_explain
from memplug.store.db import BUSY_TIMEOUT_MS

REPO = Path(__file__).resolve().parent.parent
SHOP = REPO / "fixtures" / "sessions" / "shop.jsonl"
GOLDEN = REPO / "fixtures" / "golden"
FROZEN = "2026-03-02T13:30:00Z"

MODEL_TYPES = {"assistant/message", "assistant/thinking", "tool/call"}
CONTEXT_TYPES = {"user/message", "assistant/message", "tool/call", "tool/result"}


def fixture_events() -> list[dict[str, Any]]:
    with SHOP.open(encoding="utf-8") as stream:
        return [json.loads(line) for line in stream if line.strip()]


@dataclass
class Step:
    turn: int
    step: int
    injection: Injection | None
    seq: int | None  # where the host committed the injection
    assembly_id: int | None


@dataclass
class ReferenceHost:
    """A minimal harness: its own seq counter, a context window, compaction, injections.

    The fixture's recorded memplug message is dropped: this host makes its own. Its
    log keeps no entry ids (a plain linear host), so seqs are the host's alone.
    """

    plugin: Plugin
    session_id: str = "shop-1"
    seq: int = 0
    context: list[dict[str, Any]] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    seq_of: dict[int, int] = field(default_factory=dict)  # fixture seq → host seq

    def commit(self, event: dict[str, Any]) -> int:
        self.seq += 1
        event = {k: v for k, v in event.items() if k not in ("entry_id", "parent_id")}
        event["seq"] = self.seq
        assert self.plugin.on_event(event) is True
        text = event.get("text") or "\n".join(b.get("text", "") for b in event.get("content", []))
        if event["type"] == "compaction/summary":
            self.context = [{"role": "system", "text": text}]
        elif event["type"] in CONTEXT_TYPES:
            self.context.append(
                {"role": event.get("role", "user"), "text": text, "source": event.get("source")}
            )
        return self.seq

    def pre_step(self, turn: int, step: int) -> None:
        injection = self.plugin.pre_step(
            {"session_id": self.session_id, "turn": turn, "step": step, "messages": self.context}
        )
        seq = None
        if injection is not None:
            seq = self.commit(
                {
                    "session_id": self.session_id,
                    "type": "user/message",
                    "role": "user",
                    "turn": turn,
                    "step": step,
                    "text": injection.text,
                    "source": dataclasses.asdict(injection.source),
                }
            )
        assembly_id = self.plugin.last_result.assembly_id if self.plugin.last_result else None
        self.steps.append(Step(turn, step, injection, seq, assembly_id))

    def replay(self, events: list[dict[str, Any]]) -> ReferenceHost:
        last: tuple[int, int] | None = None
        for event in events:
            if (event.get("source") or {}).get("kind") == "memplug":
                continue
            if event["type"] in MODEL_TYPES and (event["turn"], event["step"]) != last:
                last = (event["turn"], event["step"])
                self.pre_step(event["turn"], event["step"])
            self.seq_of[event["seq"]] = self.commit(event)
        return self

    def step_at(self, turn: int, step: int = 1) -> Step:
        return next(s for s in self.steps if (s.turn, s.step) == (turn, step))

    def injected_seqs(self) -> list[int]:
        return [s.seq for s in self.steps if s.seq is not None]


def run_host(db: Path, config: dict[str, Any] | None = None) -> ReferenceHost:
    with freeze_time(FROZEN):
        plugin = memplug.open(str(db), config)
        return ReferenceHost(plugin).replay(fixture_events())


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceHost]:
    replayed = run_host(tmp_path_factory.mktemp("host") / "m.sqlite")
    yield replayed
    replayed.plugin.close()


def refs_in(result: Any, section: str) -> list[str]:
    return [e.ref for e in result.included if e.section == section]


# -- the host loop ---------------------------------------------------------------------


def test_every_event_and_every_injection_is_captured(host: ReferenceHost) -> None:
    counts = host.plugin.memory.store.counts()
    injected = host.injected_seqs()
    assert injected, "the replay injected nothing"
    assert counts["events"] == len(fixture_events()) - 1 + len(injected)
    store = host.plugin.memory.store.events
    for seq in injected:
        row = store.get("shop-1", seq)
        assert row is not None and row.generated == 1 and row.source_kind == "memplug"


def test_injections_are_never_evidence_or_memory(host: ReferenceHost) -> None:
    injected = set(host.injected_seqs())
    items = host.plugin.memory.store.items
    for seq in injected:
        assert items.citing("shop-1", seq) == []
    for step in host.steps:
        if step.injection is None:
            continue
        text = step.injection.text
        assert text.count("[memplug]") == 1 and text.startswith("[memplug]")
        cited = {int(ref.split(":")[1]) for ref in _ev_refs(text)}
        assert not cited & injected, f"turn {step.turn} quoted an injection"
    logs = host.plugin.memory.store.logs
    for step in host.steps:
        if step.assembly_id is None:
            continue
        record = logs.get(step.assembly_id)
        assert record is not None
        for omission in record.omitted:
            session, _, seq = omission["ref"].rpartition(":")
            if session == "shop-1" and int(seq) in injected:
                assert omission["reason"] == "generated source"


def test_injected_messages_are_linked_to_their_log_rows(host: ReferenceHost) -> None:
    logs = host.plugin.memory.store.logs
    for step in host.steps:
        if step.injection is not None:
            record = logs.get(step.injection.assembly_id or -1)
            assert record is not None and record.message_seq == step.seq


def test_nothing_visible_is_restated_before_the_compaction(host: ReferenceHost) -> None:
    # Before the compaction the whole conversation is in the model's context.
    before = [s for s in host.steps if s.turn < 25]
    assert before and all(s.injection is None for s in before)
    record = host.plugin.memory.store.logs.get(host.step_at(2, 1).assembly_id or -1)
    assert record is not None and not record.injected
    goal = next(o for o in record.omitted if o["ref"] == "shop-1:8")
    assert goal["reason"] == "visible in context"
    goal_item = [o for o in record.omitted if o["ref"].startswith("mem_")]
    assert goal_item and {o["reason"] for o in goal_item} == {"visible in context"}


def test_after_the_compaction_early_evidence_comes_back(host: ReferenceHost) -> None:
    step = host.step_at(25, 1)
    assert step.injection is not None
    # It lands where the fixture recorded memplug's message: nothing was injected before.
    assert step.seq == 99
    text = step.injection.text
    # The host's summary lost the condition; memplug has it verbatim, with its source.
    assert "p95 < 200 ms at 1k rps" in text
    assert "[ev shop-1:8]" in text
    assert "- Goal: make checkout p95 under 200 ms. [ev shop-1:8]" in text
    # What the prompt asks about (the Stripe key, staging) is there too.
    assert "- Blocked: waiting for the Stripe sandbox key. [ev shop-1:88]" in text
    assert "db-staging-2 on port 5433" in text


def test_what_an_earlier_injection_showed_is_not_repeated(host: ReferenceHost) -> None:
    first = host.step_at(25, 1).injection
    assert first is not None
    for step in host.steps:
        if step.turn > 25 and step.injection is not None:
            body = step.injection.text.split("\n\n", 1)[1]
            for line in body.splitlines():
                if line.startswith("- "):
                    assert line not in first.text


def test_the_chinese_question_finds_the_chinese_answer(host: ReferenceHost) -> None:
    step = host.step_at(28, 1)
    assert step.injection is not None
    assert "值班室分机号 4324" in step.injection.text


def test_untrusted_tool_output_is_never_pasted(host: ReferenceHost) -> None:
    for step in host.steps:
        if step.injection is not None:
            assert "IGNORE ALL PREVIOUS" not in step.injection.text
            assert "hunter2" not in step.injection.text


def test_the_same_session_gives_the_same_bytes(tmp_path: Path, host: ReferenceHost) -> None:
    again = run_host(tmp_path / "again.sqlite")
    try:
        assert [(s.turn, s.step, s.injection and s.injection.text) for s in again.steps] == [
            (s.turn, s.step, s.injection and s.injection.text) for s in host.steps
        ]
    finally:
        again.plugin.close()


def test_memory_derived_with_injections_equals_memory_without(
    tmp_path: Path, host: ReferenceHost
) -> None:
    with memplug.open(str(new_db(tmp_path / "plain.sqlite"))) as plain:
        for event in fixture_events():
            plain.on_event(event)
        expected = _items(plain)
    assert _items(host.plugin) == expected


# -- the plugin never raises into the host ----------------------------------------------


def test_bad_input_is_recorded_not_raised(tmp_path: Path) -> None:
    with memplug.open(str(new_db(tmp_path / "m.sqlite"))) as plugin:
        assert plugin.on_event({"session_id": "s1", "seq": 1}) is False
        assert plugin.on_event("not an event") is False  # type: ignore[arg-type]
        assert plugin.pre_step({"turn": 1}) is None
        assert plugin.pre_step({"session_id": "s1", "bogus": 1}) is None
        assert plugin.pre_tool({"tool_name": "bash"}).allow is True
        errors = plugin.memory.store.events.latest_errors()
    stages = [e["stage"] for e in errors]
    assert stages.count("capture") == 2
    assert stages.count("assemble") == 2
    assert "missing required field 'type'" in [e["message"] for e in errors][-1]


def test_a_closed_database_still_does_not_raise(tmp_path: Path) -> None:
    plugin = memplug.open(str(new_db(tmp_path / "m.sqlite")))
    plugin.on_event({"session_id": "s1", "seq": 1, "type": "user/message", "text": "Note: x"})
    plugin.close()
    assert plugin.pre_step({"session_id": "s1", "query": "x"}) is None
    assert plugin.on_event({"session_id": "s1", "seq": 2, "type": "user/message"}) is False


def test_a_failing_assembly_is_logged_with_its_error(tmp_path: Path) -> None:
    with memplug.open(str(new_db(tmp_path / "m.sqlite"))) as plugin:
        plugin.on_event({"session_id": "s1", "seq": 1, "type": "user/message", "text": "hi"})

        def meter(text: str) -> int:
            raise ValueError("meter down")

        # A broken meter degrades to the estimate; a broken retriever fails the attempt.
        plugin.memory.assembler.source.retriever = None  # type: ignore[union-attr]
        assert plugin.pre_step({"session_id": "s1", "query": "hi", "token_meter": meter}) is None
        record = plugin.memory.store.logs.latest()
        errors = [e["message"] for e in plugin.memory.store.events.latest_errors()]
    assert record is not None and not record.injected
    assert record.errors and "AttributeError" in record.errors[0]
    # Raised by the assembler, caught once at the host boundary and recorded there.
    assert any(f"assembly {record.id} failed: AttributeError" in m for m in errors)


def test_open_takes_a_mapping_or_a_config(tmp_path: Path) -> None:
    event = {"session_id": "s1", "seq": 1, "type": "user/message", "role": "user",
             "text": "Remember: the staging database listens on port 5433."}  # fmt: skip
    ctx = {"session_id": "s1", "query": "which port does staging use?"}
    with memplug.open(str(new_db(tmp_path / "a.sqlite")), {"assembly": {"locale": "zh"}}) as plugin:
        plugin.on_event(event)
        injection = plugin.pre_step(ctx)
    assert injection is not None and injection.text.startswith("[memplug] 本步记忆")
    config = load_config(None, environ={}, overrides={"assembly": {"softBudgetTokens": 700}})
    with memplug.open(str(new_db(tmp_path / "b.sqlite")), config.config) as plugin:
        plugin.on_event(event)
        injection = plugin.pre_step({**ctx, "token_meter": lambda s: len(s.split())})
        assert injection is not None
        assert plugin.last_result is not None
        assert plugin.last_result.budget == 700
        assert plugin.last_result.token_source == "exact"
    assert injection.source.kind == "memplug" and injection.role == "user"


def test_importing_memplug_imports_nothing_heavy() -> None:
    import subprocess
    import sys

    code = "import sys, memplug; print(sorted(m for m in sys.modules if m.startswith('memplug')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['memplug']"


# -- golden files -----------------------------------------------------------------------


@pytest.mark.parametrize(("locale", "turn"), [("en", 25), ("en", 28), ("zh", 25), ("zh", 28)])
def test_golden_injection_and_explain(tmp_path: Path, locale: str, turn: int) -> None:
    host = run_host(tmp_path / "g.sqlite", {"assembly": {"locale": locale}})
    try:
        step = host.step_at(turn, 1)
        assert step.injection is not None
        record = find_assembly(host.plugin.memory.store, assembly_id=step.assembly_id)
        explained = render_explain(explain(record))
    finally:
        host.plugin.close()
    _golden(f"shop-turn{turn}.{locale}.txt", step.injection.text + "\n")
    _golden(f"explain-turn{turn}.{locale}.txt", explained + "\n")


def _golden(name: str, actual: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == actual, f"{name} changed"


def _ev_refs(text: str) -> list[str]:
    import re

    return re.findall(r"\[ev (shop-1:\d+)\]", text)


def _items(plugin: Plugin) -> list[tuple[str, str, str, str]]:
    rows = plugin.memory.store.items.find(session_ids=["shop-1"])
    return sorted((r.id, r.kind, r.content, r.status) for r in rows)


def test_a_locked_log_does_not_stall_the_step(tmp_path: Path) -> None:
    import apsw

    db = tmp_path / "m.sqlite"
    with memplug.open(str(db)) as plugin:
        note = "Remember: the staging database listens on port 5433."
        plugin.on_event({"session_id": "s1", "seq": 1, "type": "user/message", "text": note})
        asked = lock_requests(plugin.memory.store.db.conn)
        blocker = apsw.Connection(str(db))
        blocker.execute("BEGIN IMMEDIATE")
        try:
            injection = plugin.pre_step({"session_id": "s1", "query": "which port for staging?"})
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        # The message is still good; only its log row could not be written in time.
        assert injection is not None and "port 5433" in injection.text
        assert injection.assembly_id is None
        # The log row asked for the lock at its own short limit, and no write of the
        # step waited the busy timeout.
        assert ("BEGIN IMMEDIATE", LOG_WAIT_MS) in asked
        assert all(wait < BUSY_TIMEOUT_MS for _, wait in asked)
        assert plugin.memory.store.events.latest_errors() == []
        # The next good write records what could not be recorded then.
        plugin.on_event({"session_id": "s1", "seq": 2, "type": "assistant/message",
                         "role": "assistant", "text": "5433."})  # fmt: skip
        errors = plugin.memory.store.events.latest_errors()
    assert [e["stage"] for e in errors] == ["assemble"]
    assert "could not log the assembly" in errors[0]["message"]


# -- what a hook that reads its own transcript gets from the plugin ------------------------


def _event(seq: int, text: str) -> Any:
    from memplug.base.events import parse_event

    return parse_event(
        {"session_id": "s1", "seq": seq, "type": "user/message", "role": "user", "text": text}
    )


def test_session_writes_commit_the_events_and_the_cursor_together(tmp_path: Path) -> None:
    with memplug.open(str(new_db(tmp_path / "m.sqlite"))) as plugin:
        with plugin.session_writes("s1", lock_wait_ms=100) as writes:
            assert writes.cursor is None
            assert writes.store([_event(1, "Decision: ship on Friday.")], origin="t").new == 1
            writes.link({"u1": "u0"})
            writes.move_cursor("test", "/t.jsonl", 120, {"offset": 120, "turn": 1})
        with pytest.raises(RuntimeError), plugin.session_writes("s1") as writes:
            writes.store([_event(2, "lost with the cursor")], origin="t")
            writes.move_cursor("test", "/t.jsonl", 240, {"offset": 240, "turn": 2})
            raise RuntimeError("the read broke off")
        saved = plugin.saved_cursor("s1")
        with plugin.session_writes("s1") as writes:
            resolved = writes.resolve(["u1", "u9"])
        seqs = [e["seq"] for e in plugin.context_events("s1", 10_000)]
    assert saved == {"offset": 120, "turn": 1}
    assert resolved == {"u1": "u0"}
    assert seqs == [1]


def test_a_step_in_the_hosts_terms_fits_its_character_cap(tmp_path: Path) -> None:
    from memplug.plugin import HostStep

    CAP = 1_200
    with memplug.open(str(new_db(tmp_path / "m.sqlite"))) as plugin:
        for seq in range(1, 41):
            text = f"Decision: service {seq} listens on port {5000 + seq} behind the gateway."
            plugin.on_event(_event(seq, text))
        whole = plugin.step(HostStep("s1", "test", query="which port does the service use?"))
        capped = plugin.step(
            HostStep("s1", "test", query="which port does the service use?", max_chars=CAP)
        )
        pulled = plugin.step(HostStep("s1", "test", query="service port gateway", mcp=True))
    assert whole.injected and len(whole.text) > CAP
    assert capped.injected and len(capped.text) <= CAP
    assert capped.budget < whole.budget
    assert "memory_search" not in whole.text and "memory_search" in pulled.text


def test_errors_go_to_the_sink_and_wait_while_it_fails(tmp_path: Path) -> None:
    from memplug.memory import Memory
    from memplug.plugin import open_plugin

    filed: list[tuple[str, str, str | None]] = []
    down = [True]

    def sink(
        memory: Memory, stage: str, message: str, session: str | None, seq: int | None
    ) -> None:
        if down[0]:
            raise OSError("the log is down")
        filed.append((stage, message, session))

    with open_plugin(str(new_db(tmp_path / "m.sqlite")), errors=sink) as plugin:
        assert plugin.on_event({"session_id": "s1", "seq": 1}) is False
        assert filed == []
        down[0] = False
        plugin.record("hook", "the transcript vanished", "s1")
        stored = plugin.memory.store.events.latest_errors()
    assert [stage for stage, _, _ in filed] == ["capture", "hook"]
    assert filed[1] == ("hook", "the transcript vanished", "s1")
    assert stored == []  # the sink took them; nothing else wrote the log
