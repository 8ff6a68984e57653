"""Next-day questions: does memplug bring back what an agent needs a day later?

    python -m bench.nextday --shared ../shared [--set claude-code|codex] [--json]

A question set (``bench/nextday/<set>.json``: question, gold answer, the source event,
the shared transcript it is about, its author) is checked first: every gold answer must
be in its source event's captured text. Then, per question, a fresh database captures
the question's transcript as its host's hook does (a Claude Code transcript through
``memory import``, which names the session after the file; a Codex rollout through
``memory hook codex``), and two figures are taken:

(a) **pushed**: a new session of the same project starts (``SessionStart``) and asks the
    question (``UserPromptSubmit``); is the gold text in the injected message?
(b) **one search**: ``memory search`` with the question as typed (global scope, top 5),
    each hit expanded to its full text; is the gold text in one of them?

Text is compared normalised (case, spacing, quotes and markdown marks folded). The agent
in the loop is a separate protocol (``agent_protocol.md`` beside this file).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from memplug.base.text import estimate_tokens
from memplug.hosts import claude_code, claude_hook, codex, codex_hook
from memplug.memory import Memory
from memplug.plugin import Plugin

HERE = Path(__file__).resolve().parent
# Each set's transcripts, by the host that wrote them.
SETS = {"codex": "codex", "claude-code": "claude-code"}


def norm(text: str) -> str:
    text = re.sub(r"[`*_\"'’“”]", "", text.casefold())
    return " ".join(text.split())


def load(name: str) -> list[dict[str, Any]]:
    return list(json.loads((HERE / f"{name}.json").read_text(encoding="utf-8"))["questions"])


def _capture(db: Path, transcript: Path, host: str) -> str:
    """The transcript captured as its host's hook does; the working folder it ran in."""
    if host == "codex":
        read = codex.read_all(transcript)
        session, cwd = read.events[0]["session_id"], read.cursor.cwd or "/"
        payload = {"session_id": session, "transcript_path": str(transcript), "cwd": cwd,
                   "hook_event_name": "Stop"}  # fmt: skip
        codex_hook.main(json.dumps(payload).encode(), db_path=str(db))
        return cwd
    session = claude_code.session_id_for(str(transcript))
    with Memory.open(db, create=True) as memory:
        files = [claude_hook.Transcript(transcript, session, True)]
        report = claude_hook.HookReport(event="import")
        claude_hook.capture_all(Plugin(memory), files, report, claude_hook.Deadline(float("inf")))
        _, project = memory.store.search.session_project(session)
    return project or "/"


def check_sources(db: Path, questions: list[dict[str, Any]]) -> list[str]:
    """Questions whose gold text is not in their source event (a wrong label)."""
    wrong = []
    with Memory.open(db, create=False) as memory:
        for q in questions:
            session, seq = q["source"].rsplit(":", 1)
            if norm(q["gold"]) not in norm(memory.event_text(session, int(seq))):
                wrong.append(q["question"])
    return wrong


def pushed(db: Path, cwd: str, question: str, n: int, folder: Path, host: str) -> str:
    """What the host's hook injects in a new session of the project (its transcript
    empty but for where it runs) on SessionStart, then on the question's prompt."""
    empty = folder / f"next-{n}.jsonl"
    if host == "codex":
        meta = {"timestamp": "2030-01-01T09:00:00.000Z", "type": "session_meta",
                "payload": {"id": f"next-day-{n}", "cwd": cwd}}  # fmt: skip
        empty.write_text(json.dumps(meta) + "\n", encoding="utf-8")
    else:
        empty.write_text("", encoding="utf-8")
    hook = codex_hook if host == "codex" else claude_hook
    base = {"session_id": f"next-day-{n}", "transcript_path": str(empty), "cwd": cwd}
    texts = []
    for event in ({"hook_event_name": "SessionStart", "source": "startup"},
                  {"hook_event_name": "UserPromptSubmit", "prompt": question}):  # fmt: skip
        out = hook.main(json.dumps({**base, **event}).encode(), db_path=str(db))
        if out:
            texts.append(json.loads(out)["hookSpecificOutput"]["additionalContext"])
    return "\n".join(texts)


def searched(db: Path, question: str) -> str:
    with Memory.open(db, create=False, readonly=True) as memory:
        page = memory.search(question, scope="global", limit=5)
        parts = []
        for hit in page["hits"]:
            expanded = memory.expand(hit["follow"])
            parts += [e.get("text") or "" for e in expanded.get("events") or ()]
            parts.append((expanded.get("item") or {}).get("content") or "")
    return "\n".join(parts)


def run(shared: Path, name: str) -> dict[str, Any]:
    questions, host = load(name), SETS[name]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        captured: dict[str, tuple[Path, str]] = {}
        for n, q in enumerate(questions):
            if q["file"] not in captured:
                first = folder / f"{len(captured)}.sqlite"
                cwd = _capture(first, shared / "data" / host / q["file"], host)
                wrong = check_sources(first, [x for x in questions if x["file"] == q["file"]])
                if wrong:
                    raise SystemExit(f"error: the gold answer is not in its source: {wrong[0]!r}")
                captured[q["file"]] = (first, cwd)
            first, cwd = captured[q["file"]]
            # Each question in a copy: one question's new session is not the next one's past.
            db = folder / f"q{n}.sqlite"
            shutil.copyfile(first, db)
            gold = norm(q["gold"])
            message = pushed(db, cwd, q["question"], n, folder, host)
            rows.append({"question": q["question"], "author": q.get("author", ""),
                         "pushed": gold in norm(message), "search": gold in norm(searched(db, q["question"])),
                         "tokens": estimate_tokens(message)})  # fmt: skip
    return {"set": name, "rows": rows}


def render(result: dict[str, Any]) -> str:
    rows = result["rows"]
    lines = ["| question | author | pushed message holds it | one search, top 5 | pushed tokens |",
             "| --- | --- | --- | --- | ---: |"]  # fmt: skip
    lines += [f"| {r['question']} | {r['author']} | {'yes' if r['pushed'] else 'no'} | "
              f"{'yes' if r['search'] else 'no'} | {r['tokens']} |" for r in rows]  # fmt: skip
    lines += ["", f"{result['set']}: {_figures(rows)}"]
    for author in sorted({r["author"] for r in rows if r["author"]}):
        lines.append(f"  {author}: {_figures([r for r in rows if r['author'] == author])}")
    return "\n".join(lines)


def _figures(rows: list[dict[str, Any]]) -> str:
    pushed_n, search_n = sum(r["pushed"] for r in rows), sum(r["search"] for r in rows)
    tokens = sorted(r["tokens"] for r in rows)
    median = tokens[len(tokens) // 2] if tokens else 0
    return (f"pushed {pushed_n}/{len(rows)}, one search {search_n}/{len(rows)}, "
            f"median pushed tokens {median}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shared", default="../shared")
    parser.add_argument("--set", default="claude-code", choices=sorted(SETS),
                        help="the question set (bench/nextday/SET.json)")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="the rows as JSON")
    args = parser.parse_args()
    if not (Path(args.shared) / "data").is_dir():
        print(f"error: no data in {args.shared}", file=sys.stderr)
        raise SystemExit(2)
    result = run(Path(args.shared), args.set)
    print(json.dumps(result, indent=1) if args.json else render(result))
