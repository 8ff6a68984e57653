"""Budget curve: evidence recall of the injected message against its token budget,
with the resident core and the precision rules (issue 13) beside the message as it was
before them, in one run.

    python -m bench.curve --shared ../shared [--budgets 500,1000,1500,3000] [--no-write]

For each budget, every question is assembled twice on the same database: "before"
(``assembly.precise = false``, ``assembly.coreBudgetTokens = 0``: every ranked
candidate that fits, no core) and "now" (the defaults). A gold turn counts as
injected when a long run of it is quoted verbatim (:func:`bench.prestep.quoted`).

- LoCoMo (categories 1–4), each conversation one project, as in ``bench.prestep``.
- LongMemEval-S dev (``../shared/data/longmemeval/``, 48 questions): each question's
  haystack one project, a session per haystack session (event time from its date),
  user and assistant turns as ``user/message`` / ``assistant/message``; gold = the
  turns marked ``has_answer``; the question is asked in the last haystack session.
- The demo (``fixtures/sessions/shop.jsonl`` replayed through the plugin): used tokens
  of every step that injected, before and now.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import shutil
import statistics
import tempfile
from collections import defaultdict
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from msgspec.structs import replace

from bench.prestep import locomo_conversations, quoted
from bench.report import machine, write_section
from memplug.memory import Memory
from memplug.recall.assemble import AssemblyRequest

COMMAND = "python -m bench.curve --shared ../shared"
BUDGETS = (500, 1000, 1500, 3000)
MODES: dict[str, dict[str, Any]] = {
    "before": {"precise": False, "core_budget_tokens": 0},
    "precise, no core": {"core_budget_tokens": 0},
    # The defaults with every event head-cut and every line saying its role and minute.
    "head-cut, full frames": {"focused_quotes": False, "shared_frames": False},
    "now": {},
}


def configured(memory: Memory, budget: int, mode: str) -> Memory:
    """The same open database under another budget and mode."""
    config = memory.config
    assembly = replace(
        config.assembly, min_budget_tokens=budget, soft_budget_tokens=budget, **MODES[mode]
    )
    loaded = replace(memory.loaded, config=replace(config, assembly=assembly))
    return Memory(memory.db, loaded)


class Curve:
    """Recall and used tokens per (mode, budget), over every question asked."""

    def __init__(self, budgets: Sequence[int]) -> None:
        self.budgets = list(budgets)
        self.recall: dict[tuple[str, int], list[float]] = defaultdict(list)
        # Strict: the whole turn quoted (whitespace aside), so a trimmed quote cannot count.
        self.strict: dict[tuple[str, int], list[float]] = defaultdict(list)
        self.used: dict[tuple[str, int], list[int]] = defaultdict(list)

    def ask(self, memory: Memory, session: str, question: str, gold: Sequence[str]) -> None:
        for mode in MODES:
            for budget in self.budgets:
                result = configured(memory, budget, mode).assemble(
                    AssemblyRequest(session, query=question, trigger="bench")
                )
                hits = sum(quoted(text, result.text) for text in gold)
                self.recall[(mode, budget)].append(hits / len(gold))
                flat = " ".join(result.text.split())
                whole = sum(" ".join(text.split()) in flat for text in gold)
                self.strict[(mode, budget)].append(whole / len(gold))
                self.used[(mode, budget)].append(result.used_tokens)

    def rows(self, name: str) -> list[str]:
        out = []
        for budget in self.budgets:
            cells = []
            for mode in MODES:
                recall = statistics.mean(self.recall[(mode, budget)])
                strict = statistics.mean(self.strict[(mode, budget)])
                used = int(statistics.median(self.used[(mode, budget)]))
                cells.append(f"{recall:.3f} / {strict:.3f} | {used:,}")
            n = len(self.recall[("now", budget)])
            out.append(f"| {name} | {n} | {budget:,} | " + " | ".join(cells) + " |")
        return out


def locomo(shared: Path, curve: Curve) -> None:
    for conv in locomo_conversations(shared):
        for _, question, gold in conv.questions:
            texts = [conv.text_of[d] for d in sorted(gold)]
            curve.ask(conv.memory, conv.session, question, texts)


def lme_questions(shared: Path) -> Iterator[dict[str, Any]]:
    path = shared / "data" / "longmemeval" / "longmemeval_s_dev.json.gz"
    with gzip.open(path, "rt", encoding="utf-8") as stream:
        yield from json.load(stream)


def _lme_time(raw: str) -> str | None:
    try:
        moment = datetime.strptime(raw.split(" (")[0] + " " + raw.split(") ")[-1], "%Y/%m/%d %H:%M")
    except (ValueError, IndexError):
        return None
    return moment.strftime("%Y-%m-%dT%H:%M:00Z")


def lme(shared: Path, curve: Curve) -> None:
    for q in lme_questions(shared):
        lines, gold = [], []
        sessions = list(
            zip(q["haystack_session_ids"], q["haystack_dates"], q["haystack_sessions"], strict=True)
        )
        for session_id, date, turns in sessions:
            when = _lme_time(date)
            for i, turn in enumerate(turns):
                role = "user" if turn["role"] == "user" else "assistant"
                event = {"session_id": session_id, "seq": i + 1, "type": f"{role}/message",
                         "role": role, "text": turn["content"], "cwd": f"/eval/lme/{q['question_id']}"}  # fmt: skip
                if when:
                    event["time"] = when
                lines.append(json.dumps(event, ensure_ascii=False))
                if turn.get("has_answer"):
                    gold.append(turn["content"])
        if not gold:
            continue
        with tempfile.TemporaryDirectory() as tmp, Memory.open(Path(tmp) / "m.sqlite") as memory:
            memory.import_jsonl([("-", io.BytesIO(("\n".join(lines) + "\n").encode()))])
            curve.ask(memory, sessions[-1][0], q["question"], gold)


def demo_steps() -> dict[str, list[int]]:
    """Used tokens of each demo step that injected, before and now."""
    from memplug.demo import fixture_path, read_events, replay
    from memplug.plugin import open_plugin

    out: dict[str, list[int]] = {}
    for mode, update in MODES.items():
        overrides = {"assembly": {_camel(k): v for k, v in update.items()}}
        path = str(Path(tempfile.mkdtemp()) / "m.sqlite")
        with open_plugin(path, overrides) as plugin:
            host = replay(plugin, read_events(fixture_path()))
            logs = plugin.memory.store.logs
            out[mode] = [
                record.used_tokens
                for step in host.steps
                if step.injection is not None and step.injection.assembly_id is not None
                for record in [logs.get(step.injection.assembly_id)]
                if record is not None
            ]
        shutil.rmtree(Path(path).parent, ignore_errors=True)
    return out


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def render(curve_rows: list[str], demo: dict[str, list[int]]) -> str:
    demo_lines = [
        f"{mode} {used} (median {statistics.median(used):g})" for mode, used in demo.items()
    ]
    return "\n".join(
        [
            f"Command: `{COMMAND}` (part of `make bench`).",
            f"Machine: {machine()}.",
            "",
            "Evidence recall of the injected message (each question's evidence turns quoted in",
            "it: a run of 60 characters, as the assembly acceptance check counts; strict: the",
            'whole turn) and the median `used_tokens`, at each budget. "now" is the default',
            'configuration; "before" turns off the core and the precision rules',
            '(`assembly.precise`, `assembly.coreBudgetTokens`), "precise, no core" the core',
            'alone, "head-cut, full frames" focused quotes and shared frames',
            "(`assembly.focusedQuotes`, `assembly.sharedFrames`). One run on the same databases;",
            f"load average {os.getloadavg()[0]:.1f} at the end (tokens and recall do not depend on it).",
            "",
            "| data | questions | budget | "
            + " | ".join(f"{mode}: recall / strict | {mode}: median tokens" for mode in MODES)
            + " |",
            "| --- | ---: | ---: |" + " ---: | ---: |" * len(MODES),
            *curve_rows,
            "",
            "The demo (`make demo`), tokens of each step that injected:",
            *demo_lines,
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", default="../shared")
    parser.add_argument("--budgets", default=",".join(map(str, BUDGETS)))
    parser.add_argument("--no-write", action="store_true", help="print, do not touch the docs")
    parser.add_argument("--only", default="locomo,lme", help="data sets: locomo, lme")
    args = parser.parse_args()
    budgets = [int(b) for b in args.budgets.split(",") if b]
    shared = Path(args.shared)
    rows: list[str] = []
    for name, run in (("locomo", locomo), ("lme", lme)):
        if name not in args.only.split(","):
            continue
        curve = Curve(budgets)
        run(shared, curve)
        rows += curve.rows({"locomo": "LoCoMo 1–4", "lme": "LME-S dev"}[name])
        print("\n".join(rows[-len(budgets) :]), flush=True)
    body = render(rows, demo_steps())
    print(body)
    if not args.no_write:
        write_section("Assembly budget curve", body)


if __name__ == "__main__":
    main()
