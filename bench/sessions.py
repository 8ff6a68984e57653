"""Real Claude Code sessions replayed prompt by prompt: what each injection costs and
what it brings.

    python -m bench.sessions --shared ../shared [--labels fixtures/sessions/labels.json]
        [--dump FILE] [--only NAME]

Every transcript in ``<shared>/data/claude-code/`` with at least five real prompts is
replayed as ``../shared/acceptance/replay.py`` does it: cut just before each real prompt,
``UserPromptSubmit`` runs on it through the hook's own entry point (in process: the
figures are about what is injected, not about process start), and what it injected is
written back into the transcript the way Claude Code 2.1.x records it, an ``attachment``
of type ``hook_additional_context``. After a compaction boundary and its summary,
``SessionStart(source=compact)`` runs likewise. One fresh database per transcript.

Per prompt and in total: injected tokens (characters / 4), quoted lines, lines that
repeat an injection still in the context, lines quoting an event the model already
sees, and hollow injections (no quoted source after the header). Against the labelled
prompts (``fixtures/sessions/labels.json``: per prompt, the records — by uuid — that
would help answer it and are out of the model's context): the share of the injected
lines at those prompts that quote a useful record, and the share of prompts with useful
records that got one (injected at that step, or earlier since the latest compaction).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memplug.hosts import claude_hook
from memplug.memory import Memory

REPO = Path(__file__).resolve().parent.parent
LABELS = REPO / "fixtures" / "sessions" / "labels.json"
MIN_PROMPTS = 5
HEAD = re.compile(r"^#{2,4} \[ev ([^\]\s]+)\]")
LINE = re.compile(r"\[ev ([^\]\s:]*):(\d+)\]")
SOURCE = re.compile(r"\[(ev|mem|rule) [^\]]+\]")


def prompt_text(record: Mapping[str, Any]) -> str | None:
    """The typed prompt of a record, as replay.py reads it (None: not a real prompt)."""
    if record.get("type") != "user" or record.get("isMeta") or record.get("isSidechain"):
        return None
    if record.get("isCompactSummary"):
        return None
    content = record.get("message", {}).get("content")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        if any(isinstance(x, dict) and x.get("type") == "tool_result" for x in content):
            return None
        text = "\n".join(
            x.get("text", "") for x in content if isinstance(x, dict) and x.get("type") == "text"
        )
    else:
        return None
    text = text.strip()
    if not text or text.startswith(("<", "Caveat:", "[Request interrupted")):
        return None
    return text


def transcripts(shared: Path) -> list[Path]:
    out = []
    for path in sorted((shared / "data" / "claude-code").glob("*.jsonl")):
        records = _records(path.read_text(encoding="utf-8").splitlines())
        if sum(1 for r in records if prompt_text(r) is not None) >= MIN_PROMPTS:
            out.append(path)
    return out


def _records(lines: Iterable[str]) -> list[dict[str, Any]]:
    out = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            record = {}
        out.append(record if isinstance(record, dict) else {})
    return out


@dataclass
class Step:
    file: str
    index: int
    kind: str
    prompt: str
    text: str
    # Quoted lines: (session, seq, line) in order.
    quoted: list[tuple[str, int, str]] = field(default_factory=list)
    # The record uuid each quoted line stands for ("" when unknown).
    uuids: list[str] = field(default_factory=list)
    repeats: int = 0
    visible: int = 0
    useful: int = 0
    labelled: bool = False
    wanted: bool = False
    got: bool = False

    @property
    def tokens(self) -> int:
        return len(self.text) // 4

    @property
    def hollow(self) -> bool:
        return bool(self.text) and not SOURCE.search(self.text.split("\n", 5)[-1])


def quoted_lines(text: str) -> list[tuple[str, int, str]]:
    out: list[tuple[str, int, str]] = []
    head = None
    for raw in text.splitlines():
        found = HEAD.match(raw.strip())
        if found:
            head = found.group(1)
            continue
        match = LINE.search(raw)
        if match:
            out.append((match.group(1) or head or "", int(match.group(2)), raw.strip()))
    return out


def _attachment(parent: Any, sid: str, hook: str, text: str) -> str:
    record = {
        "parentUuid": parent,
        "isSidechain": False,
        "type": "attachment",
        "attachment": {
            "type": "hook_additional_context",
            "content": [text],
            "hookName": hook,
            "toolUseID": hook,
            "hookEvent": hook,
        },
        "uuid": f"memplug-replay-{hook}-{parent}",
        "sessionId": sid,
    }
    return json.dumps(record) + "\n"


def _hook(db: Path, payload: Mapping[str, Any]) -> str:
    out = claude_hook.main(json.dumps(payload).encode(), db_path=str(db))
    if not out:
        return ""
    return str(json.loads(out)["hookSpecificOutput"].get("additionalContext", ""))


def replay(path: Path, labels: Mapping[tuple[str, int], set[str]]) -> list[Step]:
    """Every hook step of one transcript, scored (see the module docstring)."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    records = _records(lines)
    work = Path(tempfile.mkdtemp(prefix="bench-sessions."))
    db, cut = work / "m.sqlite", work / "t.jsonl"
    written: list[str] = []
    steps: list[Step] = []
    contexts: list[tuple[set[str], set[str], set[str]]] = []
    boundary, pending = -1, False
    in_context: set[str] = set()
    cited: set[str] = set()  # uuids quoted since the latest compaction, filled after
    for i, (raw, record) in enumerate(zip(lines, records, strict=True)):
        sid = record.get("sessionId") or records[0].get("sessionId") or "s"
        if pending and record.get("isCompactSummary"):
            written.append(raw)
            cut.write_text("".join(written), encoding="utf-8")
            payload = {"session_id": sid, "transcript_path": str(cut), "cwd": record.get("cwd"),
                       "hook_event_name": "SessionStart", "source": "compact"}  # fmt: skip
            text = _hook(db, payload)
            steps.append(Step(path.name, i, "compact", "", text))
            contexts.append((_visible(records, boundary, i + 1), set(in_context), cited))
            if text:
                written.append(_attachment(record.get("uuid"), sid, "SessionStart", text))
                in_context |= {q[2] for q in quoted_lines(text)}
            pending = False
            continue
        if record.get("subtype") == "compact_boundary":
            boundary, pending, in_context, cited = i, True, set(), set()
            written.append(raw)
            continue
        prompt = prompt_text(record)
        if prompt is None:
            written.append(raw)
            continue
        cut.write_text("".join(written), encoding="utf-8")
        payload = {"session_id": sid, "transcript_path": str(cut), "cwd": record.get("cwd"),
                   "hook_event_name": "UserPromptSubmit", "prompt": prompt}  # fmt: skip
        text = _hook(db, payload)
        steps.append(Step(path.name, i, "prompt", prompt, text))
        contexts.append((_visible(records, boundary, i), set(in_context), cited))
        written.append(raw)
        if text:
            written.append(_attachment(record.get("uuid"), sid, "UserPromptSubmit", text))
            in_context |= {q[2] for q in quoted_lines(text)}
    uuid_of = _uuids(db)
    for step, (visible, before, since) in zip(steps, contexts, strict=True):
        _score(step, visible, before, since, uuid_of, labels.get((step.file, step.index)))
    return steps


def _visible(records: Sequence[Mapping[str, Any]], boundary: int, end: int) -> set[str]:
    return {
        str(r["uuid"])
        for r in records[boundary + 1 : end]
        if r.get("uuid") and not r.get("isSidechain")
    }


def _uuids(db: Path) -> dict[tuple[str, int], str]:
    with Memory.open(str(db)) as memory:
        return {
            (e.session_id, e.seq): (e.entry_id or "").split("#", 1)[0]
            for e in memory.store.events.iter_events()
        }


def _score(
    step: Step,
    visible: set[str],
    before: set[str],
    since: set[str],
    uuid_of: Mapping[tuple[str, int], str],
    useful: set[str] | None,
) -> None:
    step.quoted = quoted_lines(step.text)
    for session, seq, line in step.quoted:
        uuid = uuid_of.get((session, seq))
        step.uuids.append(uuid or "")
        if uuid in visible:
            step.visible += 1
        elif line in before:
            step.repeats += 1
        if useful is not None and uuid in useful:
            step.useful += 1
        if uuid:
            since.add(uuid)
    if useful is not None:
        step.labelled = True
        step.wanted = bool(useful)
        step.got = bool(useful & since)


def load_labels(path: Path) -> dict[tuple[str, int], set[str]]:
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {(p["file"], int(p["index"])): set(p["useful"]) for p in data["prompts"]}


def summary(steps: Sequence[Step]) -> dict[str, Any]:
    lines = sum(len(s.quoted) for s in steps)
    injected = [s.tokens for s in steps if s.text]
    labelled = [s for s in steps if s.labelled]
    labelled_lines = sum(len(s.quoted) for s in labelled)
    wanted = [s for s in labelled if s.wanted]
    return {
        "hooks": len(steps),
        "injected": len(injected),
        "tokens": sum(injected),
        "median_tokens": statistics.median(injected) if injected else 0,
        "lines": lines,
        "repeat": sum(s.repeats for s in steps) / max(lines, 1),
        "visible": sum(s.visible for s in steps) / max(lines, 1),
        "hollow": sum(1 for s in steps if s.hollow),
        "labelled": len(labelled),
        "labelled_lines": labelled_lines,
        "useful_share": sum(s.useful for s in labelled) / max(labelled_lines, 1),
        "wanted": len(wanted),
        "got": sum(1 for s in wanted if s.got),
    }


def report(steps: Sequence[Step], per_prompt: bool) -> str:
    out = []
    if per_prompt:
        out.append("file | line | hook | tokens | lines | repeats | hollow | useful | prompt")
        for s in steps:
            head = " ".join(s.prompt.split())[:50]
            out.append(
                f"{s.file} | {s.index} | {s.kind} | {s.tokens} | {len(s.quoted)} | {s.repeats}"
                f" | {int(s.hollow)} | {s.useful if s.labelled else '-'} | {head}"
            )
    out.append("file | hooks | injected | tokens | lines | repeat | hollow | useful lines")
    for name in sorted({s.file for s in steps}):
        f = summary([s for s in steps if s.file == name])
        useful = sum(s.useful for s in steps if s.file == name and s.labelled)
        out.append(
            f"{name} | {f['hooks']} | {f['injected']} | {f['tokens']} | {f['lines']} | "
            f"{f['repeat']:.2f} | {f['hollow']} | {useful}/{f['labelled_lines']}"
        )
    t = summary(steps)
    out.append(
        f"TOTAL: {t['hooks']} hooks, {t['injected']} injected, {t['tokens']} tokens "
        f"(median {t['median_tokens']:.0f} when injected); quoted lines {t['lines']}: "
        f"repeat {t['repeat']:.3f}, visible {t['visible']:.3f}; hollow {t['hollow']}; "
        f"labelled prompts {t['labelled']} ({t['labelled_lines']} lines): useful share "
        f"{t['useful_share']:.3f}; useful evidence injected for {t['got']}/{t['wanted']}"
    )
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared")
    parser.add_argument("--labels", type=Path, default=LABELS)
    parser.add_argument("--dump", type=Path, help="one JSON line per hook step")
    parser.add_argument("--only", help="replay only transcripts whose name holds this")
    parser.add_argument("--per-prompt", action="store_true")
    args = parser.parse_args(argv)
    labels = load_labels(args.labels)
    steps: list[Step] = []
    for path in transcripts(args.shared):
        if args.only and args.only not in path.name:
            continue
        steps += replay(path, labels)
    if args.dump:
        with args.dump.open("w", encoding="utf-8") as stream:
            for s in steps:
                row = {"file": s.file, "index": s.index, "kind": s.kind, "prompt": s.prompt[:2000],
                       "injected": s.text, "useful": s.useful, "uuids": s.uuids}  # fmt: skip
                stream.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(report(steps, args.per_prompt))
    return 0


if __name__ == "__main__":
    sys.exit(main())
