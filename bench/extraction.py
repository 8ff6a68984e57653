"""Extraction benchmark: what the extractor makes of real text that holds few or no
instructions for an agent, and its precision on a hand-labelled sample.

    python -m bench.extraction --shared ../shared [--write] [--items PATH]

Sources, each imported with the default config into its own fresh database:

- LoCoMo (``data/locomo/locomo10.json``): every turn a ``user/message`` with text
  ``Speaker: text``, one memplug session per LoCoMo session (as in ``bench.retrieval``).
  The same turns are also measured without the speaker label, so that the rules
  themselves, not only the speaker-line guard, are seen on chat.
- LongMemEval-S dev (``data/longmemeval/``): every distinct haystack session once,
  user and assistant turns as they are.
- Claude Code (``data/claude-code/*.jsonl`` and their subagent files) through the
  hook's own capture path; every item is listed, for a person to judge.

Figures: items per 1,000 read turns (user and assistant messages) by kind, by
evidence type and superseded, and task-state updates. The labelled sample
(``fixtures/extraction/labels.jsonl``) is scored with :func:`score_sample`, the same
function ``tests/test_extraction_sample.py`` asserts on.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import math
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.report import REPORT, machine, write_section
from memplug.base.refs import EventRef
from memplug.derive.cues import analyse, content_words
from memplug.derive.extract import Extractor
from memplug.memory import Memory

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "extraction"
SAMPLE = FIXTURES / "labels.jsonl"
# Every real user prompt of the shared Claude Code sessions, labelled by hand (README).
PROMPTS = FIXTURES / "claude_code_prompts.jsonl"
HALVES = ("tune", "confirm")
# The extractor names of the structural rules (memplug.derive.cues.structural).
STRUCTURAL_PREFIX = "structure."
KINDS = ("constraint", "decision", "fact", "preference", "proposal", "open_question")
EVIDENCE = ("user_explicit", "assistant_proposal")
# Chat with no instruction for an agent (DESIGN.md, "Extraction").
TARGETS = {"constraint": 1.0, "all": 10.0, "precision": 0.95}
# On the labelled Claude Code prompts (issue 24).
PROMPT_TARGETS = {"recall": 0.50, "precision": 0.80}


# -- the labelled sample ---------------------------------------------------------------


@dataclass
class SampleScore:
    """Precision and recall of ``analyse`` on the labelled sentences."""

    lines: int = 0
    produced: int = 0
    right: int = 0
    expected: int = 0
    found: int = 0
    wrong: list[dict[str, Any]] = field(default_factory=list)
    missed: list[dict[str, Any]] = field(default_factory=list)

    @property
    def precision(self) -> float:
        return self.right / self.produced if self.produced else 1.0

    @property
    def recall(self) -> float:
        return self.found / self.expected if self.expected else 1.0


def load_sample(path: Path = SAMPLE) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def sample_text(row: dict[str, Any]) -> str:
    """The labelled sentence as the extractor met it in its message.

    ``position`` (kept when it is 1,000 or more, see ``cues.sentences.INLINE_REACH``) is
    where the sentence's line started; ``context_before`` / ``context_after`` are lines of the
    message that decide the outcome (a line introducing pasted material, a letter's
    greeting and sign-off). Any other text before the sentence is replaced by one line
    of filler that carries no cue.
    """
    head = str(row.get("context_before", ""))
    gap = int(row.get("position", 0)) - (len(head) + 1 if head else 0)
    parts = [head] if head else []
    if gap > 0:
        parts.append("-" * (gap - 1))
    parts.append(str(row["text"]))
    if row.get("context_after"):
        parts.append(str(row["context_after"]))
    return "\n".join(parts)


def score_sample(rows: Iterable[dict[str, Any]]) -> SampleScore:
    """Run the extractor's cue analysis on every labelled sentence.

    A sentence yields at most one candidate. Produced: the candidate's label (a kind, a
    task field, or restatement/correction/retraction). It is right when it equals the
    sentence's ``expect`` (``"none"``: nothing should come out). Recall counts the
    sentences labelled with something to extract that gave exactly that.
    """
    score = SampleScore()
    for row in rows:
        score.lines += 1
        found = analyse(sample_text(row), row["role"])
        got = found[0].label if found else "none"
        expect = row["expect"]
        if expect != "none":
            score.expected += 1
            score.found += got == expect
            if got != expect:
                score.missed.append({**row, "got": got})
        if got != "none":
            score.produced += 1
            score.right += got == expect
            if got != expect:
                score.wrong.append({**row, "got": got})
    return score


# -- the labelled Claude Code prompts ----------------------------------------------------


@dataclass
class PromptScore:
    """Prompt-level recall and item precision on one half of the labelled prompts.

    ``labelled``: prompts holding at least one durable item; ``found``: those that gave
    an item matching one of their labels. ``produced``: items a person's words made in
    these sessions (assistant proposals aside); ``right``: those matching a label of
    the prompt they came from. An item from an unlabelled event counts as wrong.
    """

    half: str
    prompts: int = 0
    labelled: int = 0
    found: int = 0
    produced: int = 0
    right: int = 0
    wrong: list[dict[str, Any]] = field(default_factory=list)
    missed: list[dict[str, Any]] = field(default_factory=list)

    @property
    def recall(self) -> float:
        return self.found / self.labelled if self.labelled else 1.0

    @property
    def precision(self) -> float:
        return self.right / self.produced if self.produced else 1.0


def load_prompts(path: Path = PROMPTS) -> list[dict[str, Any]]:
    return load_sample(path)


def matches_label(item: dict[str, Any], label: dict[str, Any]) -> bool:
    """Same kind, and the item says what the quote says: it holds at least a third of
    the quote's content words (an option pick's item is the option's text)."""
    words = content_words(label["quote"])
    need = max(1, math.ceil(len(words) / 3))
    return item["kind"] == label["kind"] and len(words & content_words(item["content"])) >= need


def score_prompts(
    items: Iterable[dict[str, Any]], prompts: Iterable[dict[str, Any]], by: str = "half"
) -> dict[str, PromptScore]:
    """Score ``items`` (``kind``, ``content``, ``file``, ``uuids``: the prompts it came
    from) against the labelled ``prompts``, per half (``by="half"``) or per author
    (``by="author"``: every author's sessions on their own, for rules written on others).
    Items a structural rule made come from tool records, not prompts: they are scored in
    :func:`structural_figures`, not here."""
    rows = list(prompts)
    by_uuid = {row["uuid"]: row for row in rows}
    group_of = {row["file"]: row[by] for row in rows}
    scores = {half: PromptScore(half) for half in HALVES} if by == "half" else {}

    def score(name: str) -> PromptScore:
        return scores.setdefault(name, PromptScore(name))

    hits: set[str] = set()
    for item in items:
        if item["rule"].startswith(STRUCTURAL_PREFIX):
            continue
        found = score(group_of.get(item["file"], "unlabelled"))
        found.produced += 1
        sources = [by_uuid[u] for u in item["uuids"] if u in by_uuid]
        labels = [label for row in sources for label in row["items"]]
        if any(matches_label(item, label) for label in labels):
            found.right += 1
            hits.update(row["uuid"] for row in sources)
        else:
            found.wrong.append(item)
    for row in rows:
        found = score(row[by])
        found.prompts += 1
        if row["items"]:
            found.labelled += 1
            if row["uuid"] in hits:
                found.found += 1
            else:
                found.missed.append(row)
    return scores


def combined(scores: dict[str, PromptScore]) -> PromptScore:
    """Both halves together (the whole labelled set)."""
    total = PromptScore("both")
    for sc in scores.values():
        for name in ("prompts", "labelled", "found", "produced", "right"):
            setattr(total, name, getattr(total, name) + getattr(sc, name))
        total.wrong += sc.wrong
        total.missed += sc.missed
    return total


def claude_code_items(shared: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every item a person's words made in the shared Claude Code sessions, captured
    through the hook's own path with the default config, with the prompts it came from;
    and the structural figures of the same capture (:func:`structural_figures`)."""
    file_of = _session_files(shared / "data" / "claude-code")
    with tempfile.TemporaryDirectory() as tmp, Memory.open(Path(tmp) / "x.sqlite") as memory:
        _capture_claude_code(memory, shared)
        out = []
        for item in memory.store.items.find():
            if item.evidence_type != "user_explicit":
                continue
            events = [memory.store.events.get(*EventRef.parse(ref)) for ref in item.source_refs]
            root = item.session_id.split("/")[0]
            out.append(
                {
                    "kind": item.kind,
                    "status": item.status,
                    "rule": item.extractor,
                    "content": item.content,
                    "file": file_of.get(root, root + ".jsonl"),
                    "uuids": [e.entry_id for e in events if e and e.type == "user/message"],
                    "ref": item.source_refs[-1],
                }
            )
        return out, structural_figures(memory)


def _session_files(folder: Path) -> dict[str, str]:
    """Each transcript's session id (its records' ``sessionId``) → its file name: the
    shared files carry a prefix naming their repository."""
    out: dict[str, str] = {}
    for path in sorted(folder.glob("*.jsonl")):
        with path.open(encoding="utf-8") as lines:
            for line in lines:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict) and record.get("sessionId"):
                    out.setdefault(str(record["sessionId"]), path.name)
                    break
    return out


# -- the structural rules on the same capture --------------------------------------------


def structural_figures(memory: Memory) -> dict[str, Any]:
    """For each typed record in the captured sessions, whether the structural rule made
    its item: answered ``AskUserQuestion`` (one item per answer, holding it), approved
    ``ExitPlanMode``, memory-file edits that went through; and that rejected or failed
    ones made nothing. Read from the events, as ``../shared/acceptance/structural`` does."""
    cited: dict[str, list[Any]] = {}
    for item in memory.store.items.find():
        for ref in item.source_refs:
            cited.setdefault(ref, []).append(item)
    kinds = ("answers", "plans", "memory_files", "rejected")
    tally: dict[str, list[int]] = {k: [0, 0] for k in kinds}
    for session in memory.store.events.session_ids():
        events = memory.store.events.session_events(session, types=("tool/call", "tool/result"))
        calls = {e.call_id: e for e in events if e.type == "tool/call" and e.call_id}
        for result in (e for e in events if e.type == "tool/result"):
            call = calls.get(result.call_id)
            made = cited.get(result.ref, []) + (cited.get(call.ref, []) if call else [])
            made = [i for i in made if i.extractor.startswith(STRUCTURAL_PREFIX)]
            kind, expected = _structural_kind(memory, result, call)
            if kind is None:
                continue
            tally[kind][1] += expected
            if kind == "rejected":
                tally[kind][0] += 0 if made else 1
            else:
                tally[kind][0] += min(expected, len({i.id for i in made}))
    return {k: {"found": v[0], "of": v[1]} for k, v in tally.items()}


def _structural_kind(memory: Memory, result: Any, call: Any) -> tuple[str | None, int]:
    """Which structural record a tool result is, and how many items it should make."""
    from memplug.derive.cues.structural import ANSWERED, APPROVED, edited_memory_file

    text = memory.store.events.full_text(result)
    tool = result.tool_name
    if tool in ("AskUserQuestion", "ExitPlanMode") and result.outcome != "succeeded":
        return "rejected", 1
    if tool == "AskUserQuestion" and text.startswith(ANSWERED):
        return "answers", text.count('"="')
    if tool == "ExitPlanMode" and text.startswith(APPROVED):
        return "plans", 1
    call_text = memory.store.events.full_text(call) if call is not None else ""
    if edited_memory_file(str(tool), call_text) and result.outcome == "succeeded":
        return "memory_files", 1
    return None, 0


# Where --write lists every item (too long for the report itself).
ITEMS_PAGE = REPORT.parent / "extraction-items.md"


# How far the confirm half is held out (said with the figures, not hidden).
PROMPTS_HOW = (
    "How the rules were chosen: on the tune half's prompts and misses only, with three"
    " exceptions that touch the confirm half. Issue 24 quotes confirm prompts as its"
    ' examples ("let\'s use apple container instead of docker proper", "we explicitly'
    ' don\'t want hardcoded visual tests", "You can test it with `act`", a bare "A",'
    " labelled none here since the assistant had offered no option A), so those were"
    " targets from the start; the test transcript"
    " (`fixtures/extraction/claude_code`) is modelled on a confirm session, and writing it"
    " showed that people type to an agent in lower case (sentences may now start in lower"
    " case there); and two confirm items shaped the option pick (it must open the reply,"
    " so a later `A) …` answering the agent's question A is no pick; a reply that says"
    " more than the pick keeps the person's words). Confirm was measured after each"
    " change, and nothing was added for a confirm miss."
)


# -- sources ------------------------------------------------------------------------------


def _locomo_events(shared: Path, speaker: bool) -> Iterator[dict[str, Any]]:
    raw = json.loads((shared / "data" / "locomo" / "locomo10.json").read_text("utf-8"))
    for conv in raw:
        c = conv["conversation"]
        for key in sorted(k for k in c if k.startswith("session_") and k[8:].isdigit()):
            for index, turn in enumerate(c[key]):
                text = f"{turn['speaker']}: {turn['text']}" if speaker else turn["text"]
                yield {
                    "session_id": f"{conv['sample_id']}-{key}",
                    "seq": index + 1,
                    "type": "user/message",
                    "role": "user",
                    "text": text,
                    "cwd": f"/eval/locomo/{conv['sample_id']}",
                }


def _lme_time(value: str) -> str | None:
    try:
        when = datetime.strptime(value.split(" (")[0] + value[-6:], "%Y/%m/%d %H:%M")
    except ValueError:
        return None
    return when.replace(tzinfo=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _lme_events(shared: Path) -> Iterator[dict[str, Any]]:
    path = shared / "data" / "longmemeval" / "longmemeval_s_dev.json.gz"
    seen: set[str] = set()
    for question in json.loads(gzip.decompress(path.read_bytes())):
        sessions = zip(
            question["haystack_session_ids"],
            question["haystack_dates"],
            question["haystack_sessions"],
            strict=True,
        )
        for session_id, date, turns in sessions:
            if session_id in seen:
                continue
            seen.add(session_id)
            for index, turn in enumerate(turns):
                event = {
                    "session_id": f"lme-{session_id}",
                    "seq": index + 1,
                    "type": f"{turn['role']}/message",
                    "role": turn["role"],
                    "text": turn["content"],
                }
                when = _lme_time(date)
                if when:
                    event["time"] = when
                yield event


def _import(memory: Memory, events: Iterable[dict[str, Any]]) -> None:
    lines = (json.dumps(e, ensure_ascii=False) for e in events)
    data = ("\n".join(lines) + "\n").encode("utf-8")
    memory.import_jsonl([("-", io.BytesIO(data))])


def _capture_claude_code(memory: Memory, shared: Path) -> None:
    from bench.compat import transcripts
    from memplug.hosts import claude_hook
    from memplug.plugin import Plugin

    files = transcripts(shared / "data" / "claude-code")
    report = claude_hook.HookReport(event="bench")
    claude_hook.capture_all(Plugin(memory), files, report, claude_hook.Deadline(600_000))
    # A malformed line is skipped and noted; the rest of its transcript is read.
    errors = [e for e in report.errors if "malformed line" not in e]
    if errors:
        raise SystemExit(f"claude-code capture failed: {errors[:3]}")


# -- measuring ------------------------------------------------------------------------------


def measure(name: str, load: Any) -> dict[str, Any]:
    """Import a source with extraction off, derive everything once, count what came out."""
    with tempfile.TemporaryDirectory() as tmp:
        off = {"extraction": {"enabled": False}}
        with Memory.open(Path(tmp) / "x.sqlite", config=off) as memory:
            load(memory)
        with Memory.open(Path(tmp) / "x.sqlite") as memory:
            report = Extractor(memory.store, memory.config).rebuild()
            turns = sum(
                1
                for session in memory.store.items.derived_sessions()
                for event in memory.store.events.session_events(
                    session, types=("user/message", "assistant/message")
                )
                if memory.extractor.role_of(event) is not None
            )
            items = memory.store.items.find()
            listed = [
                {
                    "kind": i.kind,
                    "status": i.status,
                    "evidence": i.evidence_type,
                    "rule": i.extractor,
                    "content": i.content,
                    "ref": i.source_refs[0],
                }
                for i in items
            ]
    kinds = Counter(i["kind"] for i in listed)
    per_k = 1000 / max(1, turns)
    return {
        "source": name,
        "turns": turns,
        "items": len(listed),
        "per_1k": round(len(listed) * per_k, 2),
        "kinds": {k: kinds.get(k, 0) for k in KINDS},
        "kinds_per_1k": {k: round(kinds.get(k, 0) * per_k, 2) for k in KINDS},
        "evidence": dict(Counter(i["evidence"] for i in listed)),
        "superseded": sum(i["status"] == "superseded" for i in listed),
        "task_updates": report.task_updates,
        "listed": listed,
    }


def sources(shared: Path) -> list[tuple[str, Any]]:
    return [
        ("LoCoMo (`Speaker: text`)", lambda m: _import(m, _locomo_events(shared, True))),
        ("LoCoMo (text alone)", lambda m: _import(m, _locomo_events(shared, False))),
        ("LongMemEval-S dev", lambda m: _import(m, _lme_events(shared))),
        ("Claude Code transcripts", lambda m: _capture_claude_code(m, shared)),
    ]


# -- report ---------------------------------------------------------------------------------


def render_prompts(scores: dict[str, PromptScore]) -> list[str]:
    lines = [
        "### Durable items from real Claude Code prompts",
        "",
        "`fixtures/extraction/claude_code_prompts.jsonl`: every user prompt of the shared"
        " Claude Code sessions, labelled by hand (decision, constraint, preference, fact or"
        " none, with the quote; `fixtures/extraction/README.md`). The sessions are split by"
        " file into a tune half (rules chosen on it) and a confirm half (only measured)."
        " Each transcript is captured through the hook's own path with the default config."
        " Recall: labelled prompts that gave an item of a labelled kind saying what the"
        " quote says; precision: such items ÷ every item a person's words made in those"
        " sessions (assistant proposals aside).",
        "",
        "| half | prompts | labelled | found | recall | items | right | precision |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for sc in [*(scores[half] for half in HALVES), combined(scores)]:
        lines.append(
            f"| {sc.half} | {sc.prompts} | {sc.labelled} | {sc.found} | {sc.recall:.2f}"
            f" | {sc.produced} | {sc.right} | {sc.precision:.2f} |"
        )
    lines += [
        "",
        f"Targets: recall ≥ {PROMPT_TARGETS['recall']:.2f}, precision ≥"
        f" {PROMPT_TARGETS['precision']:.2f}.",
        "",
        PROMPTS_HOW,
        "",
        "Wrong items:",
        "",
    ]
    wrong = [w for half in HALVES for w in scores[half].wrong]
    lines += [
        f"- {w['kind']} `{w['rule']}` ({w['file']}): {_cell(w['content'])}" for w in wrong
    ] or ["- none"]
    return lines


def render_authors(scores: dict[str, PromptScore], rows: list[dict[str, Any]]) -> list[str]:
    """The prompt figures author by author, with how much of each author the rules were
    chosen on (their prompts in the tune half)."""
    tuned = Counter(r["author"] for r in rows if r["half"] == "tune")
    lines = [
        "### The same, author by author",
        "",
        "Each author's sessions scored on their own (`author` in the labels: the person"
        " behind the sessions, read from their paths). `tuned on` is how many of the"
        " author's prompts sit in the tune half the rules were chosen on; an author with"
        " none is held out from every rule.",
        "",
        "| author | prompts | tuned on | labelled | found | recall | items | right | precision |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name in sorted(scores, key=lambda a: (-scores[a].prompts, a)):
        sc = scores[name]
        lines.append(
            f"| {name} | {sc.prompts} | {tuned.get(name, 0)} | {sc.labelled} | {sc.found}"
            f" | {sc.recall:.2f} | {sc.produced} | {sc.right} | {sc.precision:.2f} |"
        )
    held = [a for a in scores if not tuned.get(a)]
    out = combined({a: scores[a] for a in held})
    lines += [
        "",
        f"Authors no rule was chosen on ({', '.join(sorted(held))}) together: recall"
        f" {out.recall:.2f} ({out.found} of {out.labelled} prompts), precision"
        f" {out.precision:.2f} ({out.right} of {out.produced} items).",
    ]
    return lines


def render_structural(figures: dict[str, Any]) -> list[str]:
    names = {
        "answers": "answers of an `AskUserQuestion` (one item each, holding the answer)",
        "plans": "approved `ExitPlanMode` plans",
        "memory_files": "edits of a memory file that went through",
        "rejected": "rejected or interrupted questions and plans that made nothing",
    }
    lines = [
        "### Structural rules (`memplug/derive/cues/structural.py`)",
        "",
        "The same capture: every typed record of the shared sessions, read from the"
        " captured events, and whether a structural rule made its item (sourced from the"
        " call or the result). The items were checked by hand once: each answer item holds"
        " the question's gist and the chosen option with its description (or the person's"
        " typed answer), each plan item names the plan's title and first line, each"
        " memory-file item is a line the edit added.",
        "",
        "| record | found | of |",
        "| --- | --- | --- |",
    ]
    lines += [f"| {names[k]} | {v['found']} | {v['of']} |" for k, v in figures.items()]
    return lines


def _cell(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split()).replace("|", "\\|")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def render(
    results: list[dict[str, Any]],
    sample: SampleScore,
    command: str,
    prompts: dict[str, PromptScore] | None = None,
    extra: list[str] | None = None,
) -> str:
    head = "| source | turns | items | per 1k | " + " | ".join(KINDS) + " | superseded | task |"
    lines = [
        f"`{command}` on {machine()}. Default config; items of every status.",
        "",
        "### Items per 1,000 turns (user and assistant messages read)",
        "",
        head,
        "| --- " * (head.count("|") - 1) + "|",
    ]
    for r in results:
        kinds = " | ".join(
            f"{r['kinds'][k]} ({r['kinds_per_1k'][k]})" if r["kinds"][k] else "0" for k in KINDS
        )
        lines.append(
            f"| {r['source']} | {r['turns']:,} | {r['items']} | {r['per_1k']} | {kinds} "
            f"| {r['superseded']} | {r['task_updates']} |"
        )
    lines += [
        "",
        "Kinds as count (per 1,000 turns); `task`: task-state updates (goal, progress,"
        " blockers, open items). Targets on LoCoMo: constraints ≤ "
        f"{TARGETS['constraint']:g} and all items ≤ {TARGETS['all']:g} per 1,000 turns.",
        "",
        "By evidence type: "
        + "; ".join(
            f"{r['source']}: "
            + (", ".join(f"{k} {v}" for k, v in sorted(r["evidence"].items())) or "none")
            for r in results
        )
        + ".",
        "",
        "### Precision on the labelled sample",
        "",
        f"`fixtures/extraction/labels.jsonl`: {sample.lines} sentences from these sources,"
        " each labelled with what should come out of it (a kind or nothing), recomputed by"
        " `tests/test_extraction_sample.py` on every run.",
        "",
        "| produced | right | precision | expected | found | recall |",
        "| --- | --- | --- | --- | --- | --- |",
        f"| {sample.produced} | {sample.right} | {sample.precision:.3f} | {sample.expected}"
        f" | {sample.found} | {sample.recall:.3f} |",
        "",
        f"Target: precision ≥ {TARGETS['precision']}.",
    ]
    if prompts is not None:
        lines += ["", *render_prompts(prompts)]
    if extra:
        lines += ["", *extra]
    lines += [
        "",
        f"Every item the Claude Code transcripts gave is listed in [{ITEMS_PAGE.name}]"
        f"({ITEMS_PAGE.name}), for a person to judge.",
    ]
    return "\n".join(lines)


def render_items(results: list[dict[str, Any]], command: str) -> str:
    """The page listing every item of the Claude Code transcripts, each to be one a
    person would agree with."""
    claude = next((r for r in results if r["source"].startswith("Claude")), None)
    lines = [
        "# Every item from the Claude Code transcripts",
        "",
        f"Written by `{command} --write` with the Extraction section of benchmarks.md;"
        " listed for a person to judge: the target is that each is one a person would"
        " agree with.",
        "",
    ]
    if claude is None or not claude["listed"]:
        return "\n".join([*lines, "None.", ""])
    lines += ["| kind | status | rule | content | source |", "| --- | --- | --- | --- | --- |"]
    for i in claude["listed"]:
        content = i["content"].replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {i['kind']} | {i['status']} | `{i['rule']}` | {content} | `{i['ref']}` |")
    return "\n".join([*lines, ""])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shared", default="../shared", help="the shared folder (data sets)")
    parser.add_argument("--write", action="store_true", help="rewrite docs/benchmarks.md")
    parser.add_argument("--items", help="also write every extracted item here (JSONL)")
    parser.add_argument(
        "--prompts-only",
        action="store_true",
        help="score the labelled Claude Code prompts only (quick; never --write)",
    )
    args = parser.parse_args()
    shared = Path(args.shared)
    items, structural = claude_code_items(shared)
    rows = load_prompts()
    prompts = score_prompts(items, rows)
    authors = score_prompts(items, rows, by="author")
    extra = [*render_authors(authors, rows), "", *render_structural(structural)]
    if args.prompts_only:
        print("\n".join([*render_prompts(prompts), "", *extra]))
        for half in HALVES:
            for row in prompts[half].missed:
                print(f"missed ({half}):", [i["quote"] for i in row["items"]])
        return
    results = [measure(name, load) for name, load in sources(shared)]
    sample = score_sample(load_sample())
    command = "python -m bench.extraction --shared ../shared"
    body = render(results, sample, command, prompts, extra)
    print(body)
    if args.items:
        with open(args.items, "w", encoding="utf-8") as out:
            for r in results:
                for item in r["listed"]:
                    out.write(json.dumps({"source": r["source"], **item}, ensure_ascii=False))
                    out.write("\n")
    if args.write:
        write_section("Extraction", body)
        ITEMS_PAGE.write_text(render_items(results, command), encoding="utf-8")


if __name__ == "__main__":
    main()
