"""`make demo`: replay the bundled coding session through the plugin, then show one step.

    python -m memplug.demo [--dir DIR] [--turn N]

The session (``fixtures/sessions/shop.jsonl``: Ana and an agent speed up a checkout
service; the host compacts the conversation at seq 95–97) is fed to the Python plugin
as a host would: each event through ``on_event``, ``pre_step`` before every model step
with the messages the model would see — after the compaction only the summary and what
followed it — and every injected message committed back to the host's log. The demo
then prints what memplug injected at the first step after the compaction, which
section brought back each fact the host's summary dropped (the card-number rule comes
from the resident project core, whatever the prompt's words), the tokens every
injecting step used, its ``memory explain``, and commands to try on the database
(``.memplug-demo/``, made fresh on every run).

Before the compaction everything memplug could say is already in the model's context,
so it injects nothing; its first message lands where the fixture recorded one (seq 99).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import textwrap
from pathlib import Path

import msgspec
from msgspec import Struct, field

from memplug.base.models import HostEvent, Injection, Message, parse_event
from memplug.plugin import Plugin, open_plugin

SESSION_FILE = Path("fixtures") / "sessions" / "shop.jsonl"
DEFAULT_DIR = Path(".memplug-demo")
DEFAULT_TURN = 25
# Events a model sees again at later steps (thinking is private to its step).
# Said before the compaction and missing from the host's summary (fixtures README).
LOST_IN_SUMMARY = (
    ('the "1k rps" condition of the latency target (seq 8)', "p95 < 200 ms at 1k rps"),
    ("the card-number rule (seq 13)", "never log card numbers"),
    ("the duty-room extension (seq 93)", "值班室分机号 4324"),
)
_CONTEXT_TYPES = frozenset({"user/message", "assistant/message", "tool/call", "tool/result"})
_MODEL_TYPES = frozenset({"assistant/message", "assistant/thinking", "tool/call"})


def fixture_path() -> Path:
    """The fixture in this checkout (the demo runs from a clone, not from a wheel)."""
    here = Path(__file__).resolve().parent.parent / SESSION_FILE
    if here.is_file():
        return here
    raise SystemExit(
        f"memplug demo: {SESSION_FILE} not found beside the package (run it from a clone)"
    )


def read_events(path: Path) -> list[HostEvent]:
    with path.open(encoding="utf-8") as stream:
        return [parse_event(json.loads(line)) for line in stream if line.strip()]


class Step(Struct):
    turn: int | None
    step: int | None
    query: str
    injection: Injection | None
    seq: int | None = None  # where the host committed the injection


class Replay(Struct):
    """A minimal host: its own seq counter, a context window, compaction, injections."""

    plugin: Plugin
    steps: list[Step] = field(default_factory=list)
    events: int = 0
    seq: int = 0
    context: list[Message] = field(default_factory=list)

    def commit(self, event: HostEvent) -> None:
        # The host numbers its own log; entry links are left out (a linear host).
        self.seq += 1
        event = msgspec.structs.replace(event, seq=self.seq, entry_id=None, parent_id=None)
        self.plugin.on_event(event)
        self.events += 1
        if event.type == "compaction/summary":
            # The model's context is now the summary and whatever comes next.
            self.context = [_message(event)]
        elif event.type in _CONTEXT_TYPES:
            self.context.append(_message(event))

    def pre_step(self, session_id: str, turn: int | None, step: int | None) -> None:
        ctx = {"session_id": session_id, "turn": turn, "step": step, "messages": self.context}
        injection = self.plugin.pre_step(ctx)
        query = self.plugin.last_result.query_text if self.plugin.last_result else ""
        seq = None
        if injection is not None:
            # A host commits the injected message to its log like any other.
            self.commit(
                HostEvent(
                    session_id=session_id,
                    seq=0,
                    type="user/message",
                    role="user",
                    turn=turn,
                    step=step,
                    text=injection.text,
                    source=injection.source,
                )
            )
            seq = self.seq
        self.steps.append(Step(turn, step, query, injection, seq))


def _message(event: HostEvent) -> Message:
    return Message(role=event.role or "user", text=event.raw_text(), source=event.source)


def replay(plugin: Plugin, events: list[HostEvent]) -> Replay:
    """Drive ``plugin`` like a host: on_event after each event, pre_step before each step.

    The fixture's own record of a memplug message is skipped: this host makes its own.
    """
    host = Replay(plugin)
    last_step: tuple[int | None, int | None] | None = None
    for event in events:
        if event.source_kind == "memplug":
            continue
        if event.type in _MODEL_TYPES and (event.turn, event.step) != last_step:
            last_step = (event.turn, event.step)
            host.pre_step(event.session_id, event.turn, event.step)
        host.commit(event)
    return host


def _rule(title: str) -> str:
    return f"── {title} " + "─" * max(3, 76 - len(title))


def _indent(text: str) -> str:
    return textwrap.indent(text, "  ")


def _chosen(result: Replay, turn: int) -> Step:
    for step in result.steps:
        if step.turn == turn and step.injection is not None:
            return step
    raise SystemExit(f"memplug demo: nothing was injected in turn {turn}")


def _section_of(text: str, needle: str) -> str | None:
    """The title of the message's section that holds ``needle``."""
    title = None
    for line in text.splitlines():
        if line.startswith("## "):
            title = line[3:]
        elif needle in line:
            return title
    return None


def _recovered(text: str) -> list[str]:
    out = []
    for what, needle in LOST_IN_SUMMARY:
        section = _section_of(text, needle)
        where = f" — from {section}" if section else ""
        out.append(f"    {'yes' if section else 'no '}  {what}{where}")
    return out


def run(db_dir: Path, turn: int) -> str:
    from memplug.reports.explain import explain, find_assembly, render_explain

    source = fixture_path()
    events = read_events(source)
    if db_dir.exists():
        shutil.rmtree(db_dir)
    db_path = db_dir / "memory.sqlite"
    with open_plugin(str(db_path)) as plugin:
        result = replay(plugin, events)
        step = _chosen(result, turn)
        assert step.injection is not None and step.injection.assembly_id is not None
        record = find_assembly(plugin.memory.store, assembly_id=step.injection.assembly_id)
        explained = render_explain(explain(record), max_omitted=4, max_included=12)
        counts = plugin.memory.counts()
        used = [
            record.used_tokens
            for s in result.steps
            if s.injection is not None and s.injection.assembly_id is not None
            for record in [plugin.memory.assembly_log(s.injection.assembly_id)]
            if record is not None
        ]
        budget = plugin.config.assembly.budget_tokens
    injected = sum(1 for s in result.steps if s.injection is not None)
    shown = str(db_path) if db_path.is_absolute() else f"./{db_path}"
    cli = f"memory --db {shown}"
    lines = [
        f"memplug demo: replaying {SESSION_FILE} (session shop-1) through the Python plugin",
        "",
        f"  {result.events} events captured, {counts['memory_items']} memory items derived,",
        f"  {len(result.steps)} pre-steps assembled; {injected} injected a message, all after",
        "  the compaction at seq 95-97 (before it, everything relevant was still in the",
        "  model's context).",
        "",
        _rule(f"turn {step.turn}, step {step.step}: after the compaction the user says"),
        _indent(step.query),
        "",
        _rule(f"memplug injects this message before the model answers (seq {step.seq})"),
        _indent(step.injection.text),
        "",
        "  What the host's summary (seq 96) dropped, and whether this message has it:",
        *_recovered(step.injection.text),
        "",
        f"  Tokens used: {used[0] if used else 0} of a {budget:,}-token budget here; "
        f"every injecting step: {', '.join(map(str, used))}",
        f"  (median {statistics.median(used) if used else 0:g}).",
        "",
        _rule(f"{cli} explain --assembly {step.injection.assembly_id}"),
        _indent(explained.split("\n--- injected text")[0]),
        "",
        _rule("try it"),
        f"  The database is {shown} (memory is .venv/bin/memory).",
        "",
        f"  {cli} explain --session shop-1 --turn 28",
        f'  {cli} assemble --session shop-1 --query "which port does the API use?"',
        f"  {cli} status",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m memplug.demo", description=__doc__)
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="where the database goes")
    parser.add_argument("--turn", type=int, default=DEFAULT_TURN, help="the turn to show")
    args = parser.parse_args(argv)
    sys.stdout.write(run(args.dir, args.turn) + "\n")


if __name__ == "__main__":
    main()
