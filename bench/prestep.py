"""Pre-step benchmark: ``Plugin.pre_step`` latency and injected tokens on synthetic
events, and LoCoMo evidence recall of the injected message beside two baselines.

    python -m bench.prestep --shared ../shared [--sizes 10000,100000,1000000] [--steps 200]
                            [--locomo] [--build-limit 300]

Latency: ``bench.report.synthetic_events`` (20 sessions in 4 projects, a 30-word
vocabulary) with one user message in five carrying an extraction cue, so that 100k
events give about 5k memory items. Each database is built fresh through
``Memory.import_jsonl`` (capture + extraction). Then a seeded list of task-text-like
queries runs through ``pre_step`` in process — retrieval, assembly and the log write,
exactly what a host pays — with the session's last 20 events as the visible messages.
A size is skipped, and said to be, when the previous size's build time projects past
``--build-limit`` seconds.

Quality (``--locomo``; the budget curve, ``bench.curve``, reports the same recall at
every budget, and ``bench.retrieval`` each category's beside BM25): each LoCoMo
conversation (``../shared/data/locomo``) is imported as one project, a session per LoCoMo session, one ``user/message`` per turn (``speaker:
text``, event time from the session date). Each question of categories 1–4 is
assembled for the conversation's last session at the default budget (3,000 tokens);
a gold turn counts as injected when a long run of it is quoted verbatim (the
acceptance check's rule). Given the same budget, in the same run: plain BM25 over
turns (FTS5 ``porter unicode61``, question words OR-ed, best first, each turn costing
its tokens + 8) and recency only (the latest turns that fit).
"""

from __future__ import annotations

import argparse
import difflib
import io
import json
import os
import random
import re
import sqlite3
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.report import WORDS, machine, percentiles, synthetic_events, write_section
from memplug.base.models import Message
from memplug.base.text import estimate_tokens
from memplug.memory import Memory
from memplug.plugin import Plugin
from memplug.recall.assemble import AssemblyRequest

COMMAND = "python -m bench.prestep --shared ../shared"
# DESIGN.md "Performance": pre_step p95 in ms by event count.
TARGETS = {100_000: 15.0, 1_000_000: 60.0}
CUES = ("Remember: ", "Decision: ", "Note: ", "We must never ", "I prefer ")
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
LINE_OVERHEAD = 8
STOP = set(
    "a an the of to in on at for and or but is are was were be been being do does did what "
    "when where who whom which why how that this these those with from by as it its i you he "
    "she they we me him her them my your his their our has have had not no yes would could "
    "should will can may might about into than then so if".split()
)


# -- latency ---------------------------------------------------------------------------


def cued_events(count: int) -> Iterator[dict[str, Any]]:
    """Synthetic events; every fifth user message opens with an extraction cue."""
    users = 0
    for event in synthetic_events(count):
        if event["type"] == "user/message":
            users += 1
            if users % 5 == 0:
                event["text"] = CUES[users // 5 % len(CUES)] + str(event["text"])
        yield event


def queries(count: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        words = rng.sample(WORDS, rng.randint(2, 5))
        text = f"what did we decide about the {' '.join(words)}?"
        if rng.random() < 0.3:
            text += f" it was on port {rng.randint(1000, 65000)}"
        out.append(text)
    return out


def build(root: Path, count: int) -> tuple[Path, float, dict[str, int]]:
    path = root / f"prestep-{count}" / "memory.sqlite"
    # Streamed through a file: a million events held as dicts would need gigabytes.
    source = root / f"prestep-{count}.jsonl"
    with source.open("w", encoding="utf-8") as out:
        for event in cued_events(count):
            out.write(json.dumps(event) + "\n")
    start = time.perf_counter()
    with Memory.open(path) as memory, source.open("rb") as stream:
        summary = memory.import_jsonl([(source.name, stream)])
        assert summary.new == count, summary.as_dict()
        counts = memory.store.counts()
    return path, time.perf_counter() - start, counts


def measure(path: Path, steps: int) -> dict[str, Any]:
    plugin = Plugin(Memory.open(path))
    try:
        sessions = plugin.memory.store.events.session_ids()
        contexts = {}
        for session in sessions:
            rows = plugin.memory.store.events.session_events(
                session, after_seq=_last_seq(plugin, session) - 20
            )
            contexts[session] = [Message(role=r.role or "user", text=r.text) for r in rows]
        latencies, cpu, retrieval, tokens, injected = [], [], [], [], 0
        for i, query in enumerate(queries(steps)):
            session = sessions[i % len(sessions)]
            ctx = {"session_id": session, "query": query, "messages": contexts[session]}
            t0, c0 = time.perf_counter(), time.process_time()
            injection = plugin.pre_step(ctx)
            latencies.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
            result = plugin.last_result
            assert result is not None and not result.errors, result and result.errors
            tokens.append(result.used_tokens)
            injected += injection is not None
            t0 = time.perf_counter()
            plugin.memory.retriever.retrieve(
                session, query, limit=plugin.memory.config.assembly.candidate_limit
            )
            retrieval.append((time.perf_counter() - t0) * 1000)
        return {
            "latency": percentiles(latencies),
            "cpu": percentiles(cpu),
            "retrieval": percentiles(retrieval),
            "tokens_p50": int(statistics.median(tokens)),
            "tokens_max": max(tokens),
            "injected": injected,
            "steps": steps,
        }
    finally:
        plugin.close()


def _last_seq(plugin: Plugin, session: str) -> int:
    info = plugin.memory.store.events.session(session)
    return int(info["last_event_seq"]) if info else 0


# -- LoCoMo ----------------------------------------------------------------------------


def quoted(turn: str, text: str) -> bool:
    """A turn counts as injected when a long run of it is quoted verbatim."""
    turn, text = " ".join(turn.split()), " ".join(text.split())
    if turn[:60] in text:
        return True
    match = difflib.SequenceMatcher(None, turn, text, autojunk=False).find_longest_match(
        0, len(turn), 0, len(text)
    )
    return match.size >= min(60, int(0.6 * len(turn)))


def session_time(raw: str) -> str | None:
    try:
        moment = datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y")
    except ValueError:
        return None
    return moment.replace(tzinfo=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Conversation:
    """One LoCoMo conversation imported as one project, and its usable questions."""

    memory: Memory
    session: str  # the last session: where a question is asked
    text_of: dict[str, str]
    turns: list[tuple[str, str]]
    questions: list[tuple[int, str, set[str]]]  # (category, question, gold dia ids)
    skipped: int


def locomo_conversations(shared: Path) -> Iterator[Conversation]:
    """Each conversation in a fresh database (closed after the caller moves on)."""
    convs = json.loads((shared / "data" / "locomo" / "locomo10.json").read_text())
    for index, conv in enumerate(convs):
        c = conv["conversation"]
        keys = sorted((k for k in c if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k[8:]))
        lines, text_of, turns = [], {}, []
        for key in keys:
            when = session_time(c.get(f"{key}_date_time", ""))
            for i, turn in enumerate(c[key]):
                body = f"{turn['speaker']}: {turn['text']}"
                event = {"session_id": key, "seq": i + 1, "type": "user/message",
                         "role": "user", "text": body, "cwd": f"/eval/locomo/{index}"}  # fmt: skip
                if when:
                    event["time"] = when
                lines.append(json.dumps(event, ensure_ascii=False))
                text_of[turn["dia_id"]] = body
                turns.append((turn["dia_id"], body))
        questions, skipped = [], 0
        for qa in conv["qa"]:
            category = qa.get("category")
            if category not in CATEGORY_NAMES:
                continue
            gold = set(qa.get("evidence") or ())
            if not gold or not gold <= text_of.keys():
                skipped += 1
                continue
            questions.append((category, qa["question"], gold))
        with tempfile.TemporaryDirectory() as tmp:
            memory = Memory.open(Path(tmp) / "m.sqlite")
            memory.import_jsonl([("-", io.BytesIO(("\n".join(lines) + "\n").encode()))])
            try:
                yield Conversation(memory, keys[-1], text_of, turns, questions, skipped)
            finally:
                memory.close()


def locomo(shared: Path) -> tuple[str, dict[str, Any]]:
    totals: dict[str, list[float]] = defaultdict(list)
    per_cat: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    skipped = 0
    used: list[int] = []
    for conv in locomo_conversations(shared):
        memory, text_of = conv.memory, conv.text_of
        skipped += conv.skipped
        budget = memory.config.assembly.budget_tokens
        bm = sqlite3.connect(":memory:")
        bm.execute("CREATE VIRTUAL TABLE t USING fts5(d UNINDEXED, body, tokenize='porter unicode61')")  # fmt: skip
        bm.executemany("INSERT INTO t VALUES (?, ?)", conv.turns)
        recent = _recency(conv.turns, budget)
        for category, question, gold in conv.questions:
            result = memory.assemble(AssemblyRequest(conv.session, query=question, trigger="bench"))
            used.append(result.used_tokens)
            ours = sum(quoted(text_of[d], result.text) for d in gold) / len(gold)
            base = len(_bm25(bm, question, budget) & gold) / len(gold)
            rec = len(recent & gold) / len(gold)
            for name, value in (("memplug", ours), ("bm25", base), ("recency", rec)):
                totals[name].append(value)
                per_cat[category][name].append(value)
        bm.close()
    rows = []
    for category in sorted(per_cat):
        figures = per_cat[category]
        rows.append(
            f"| {category} {CATEGORY_NAMES[category]} | {len(figures['memplug'])} | "
            + " | ".join(
                f"{statistics.mean(figures[n]):.3f}" for n in ("memplug", "bm25", "recency")
            )
            + " |"
        )
    overall = {name: statistics.mean(values) for name, values in totals.items()}
    rows.append(
        f"| **1–4** | {len(totals['memplug'])} | "
        + " | ".join(f"**{overall[n]:.3f}**" for n in ("memplug", "bm25", "recency"))
        + " |"
    )
    table = "\n".join(
        [
            "| category | questions | memplug (injected message) | BM25, same budget | recency, same budget |",
            "| --- | ---: | ---: | ---: | ---: |",
            *rows,
        ]
    )
    figures = {
        "overall": overall,
        "n": len(totals["memplug"]),
        "skipped": skipped,
        "median_used": int(statistics.median(used)),
    }
    return table, figures


def _bm25(bm: sqlite3.Connection, question: str, budget: int) -> set[str]:
    words = [w for w in re.findall(r"[a-z0-9]+", question.lower()) if w not in STOP]
    if not words:
        return set()
    rows = bm.execute(
        "SELECT d, body FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 200",
        (" OR ".join(f'"{w}"' for w in words),),
    ).fetchall()
    spent, got = 0, set()
    for dia, body in rows:
        cost = estimate_tokens(body) + LINE_OVERHEAD
        if spent + cost > budget:
            break
        spent += cost
        got.add(dia)
    return got


def _recency(turns: list[tuple[str, str]], budget: int) -> set[str]:
    spent, got = 0, set()
    for dia, body in reversed(turns):
        cost = estimate_tokens(body) + LINE_OVERHEAD
        if spent + cost > budget:
            break
        spent += cost
        got.add(dia)
    return got


# -- report ----------------------------------------------------------------------------


# Said where the LoCoMo recall is when this run leaves it out.
ELSEWHERE = (
    "The injected message's evidence recall is in the budget curve below (every budget) and",
    'in Retrieval\'s "in budget" columns (each LoCoMo category, beside BM25 and recency);',
    "`--locomo` adds it here too.",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shared", default="../shared")
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--build-limit", type=float, default=300.0)
    parser.add_argument(
        "--locomo", action="store_true", help="also LoCoMo's injected-evidence recall"
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    lat_rows, notes = [], []
    previous: tuple[int, float] | None = None
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            if previous is not None:
                projected = previous[1] * size / previous[0]
                if projected > args.build_limit:
                    notes.append(
                        f"{size:,} events: not built — the {previous[0]:,}-event build took "
                        f"{previous[1]:.0f} s, projecting {projected:.0f} s "
                        f"(over the {args.build_limit:.0f} s limit)."
                    )
                    print(notes[-1], flush=True)
                    continue
            path, seconds, counts = build(Path(tmp), size)
            previous = (size, seconds)
            print(f"built {size:,} events ({counts['memory_items']:,} items) in {seconds:.0f} s",
                  flush=True)  # fmt: skip
            figures = measure(path, args.steps)
            lat, cpu, ret = figures["latency"], figures["cpu"], figures["retrieval"]
            target = TARGETS.get(size)
            lat_rows.append(
                f"| {size:,} | {counts['memory_items']:,} | {lat['p50']} | {lat['p95']} | "
                f"{lat['p99']} | {cpu['p50']} | {cpu['p95']} | {ret['p50']} | "
                f"{lat['p50'] - ret['p50']:.1f} | "
                f"{figures['tokens_p50']} / {figures['tokens_max']} | "
                f"{figures['injected']}/{figures['steps']} | "
                + (
                    f"p95 ≤ {target}: {'met' if lat['p95'] <= target else 'missed'}"
                    if target
                    else ""
                )
                + " |"
            )
            print(lat_rows[-1], flush=True)
            os.sync()
    body = [
        f"Command: `{COMMAND}` (part of `make bench`).",
        f"Machine: {machine()}; load average at the end {os.getloadavg()[0]:.1f}.",
        "",
        "`pre_step` in process — retrieval, assembly and the assembly-log write — on",
        "synthetic events (20 sessions in 4 projects; one user message in five carries an",
        "extraction cue), with the session's last 20 events as the visible messages;",
        f"{args.steps} seeded task-text queries per size. Retrieval alone is measured on",
        "the same queries. Injected tokens are `used_tokens` of the step's message",
        '(0 when nothing is injected); the budget is 3,000. "rest" is pre_step minus',
        "retrieval at the median: assembly, the visible-text checks and the log write.",
        "The machine is shared with other jobs; the load average above says how much:",
        "on a loaded machine the wall figures mostly measure the queue for a core, and the",
        "CPU time (user + system, `time.process_time`) is what a step costs.",
        "",
        "| events | items | pre_step p50 ms | p95 ms | p99 ms | CPU p50 ms | CPU p95 ms | "
        "retrieval p50 ms | rest p50 ms | injected tokens p50 / max | steps injected | "
        "target (ms) |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
        *lat_rows,
    ]
    if notes:
        body += ["", *notes]
    if args.locomo:
        table, figures = locomo(Path(args.shared))
        body += [
            "",
            "Evidence recall of the injected message on LoCoMo (all 10 conversations,",
            "categories 1–4; each conversation one project, event times from the session",
            "dates), at the default budget of 3,000 tokens: the share of each question's",
            "evidence turns quoted verbatim in what `memory assemble` would inject.",
            "Baselines get the same budget, each turn costing its tokens + 8.",
            f"{figures['skipped']} questions with missing or malformed evidence are skipped;",
            f"median `used_tokens` {figures['median_used']:,}.",
            "",
            table,
        ]
        print(table, flush=True)
    else:
        body += ["", *ELSEWHERE]
    write_section("Assembly", "\n".join(body))


if __name__ == "__main__":
    main()
