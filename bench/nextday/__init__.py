"""Next-day questions: does memplug bring back what an agent needs a day later?

    python -m bench.nextday --shared ../shared [--set codex]

A question set (``bench/nextday/<set>.json``: question, gold answer, the source event,
the shared transcript it is about) is checked first: every gold answer must be in its
source event's captured text. Then, per question, a fresh database captures the
question's transcript through its host's hook, and two figures are taken:

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
import sys
import tempfile
from pathlib import Path
from typing import Any

from memplug.hosts import codex, codex_hook
from memplug.memory import Memory

HERE = Path(__file__).resolve().parent


def norm(text: str) -> str:
    text = re.sub(r"[`*_\"'’“”]", "", text.casefold())
    return " ".join(text.split())


def load(name: str) -> list[dict[str, Any]]:
    return list(json.loads((HERE / f"{name}.json").read_text(encoding="utf-8"))["questions"])


def _capture(db: Path, transcript: Path) -> tuple[str, str]:
    """The rollout captured as the hook does; its session id and working folder."""
    read = codex.read_all(transcript)
    session, cwd = read.events[0]["session_id"], read.cursor.cwd or "/"
    payload = {"session_id": session, "transcript_path": str(transcript), "cwd": cwd,
               "hook_event_name": "Stop"}  # fmt: skip
    codex_hook.main(json.dumps(payload).encode(), db_path=str(db))
    return session, cwd


def check_sources(db: Path, questions: list[dict[str, Any]]) -> list[str]:
    """Questions whose gold text is not in their source event (a wrong label)."""
    wrong = []
    with Memory.open(db, create=False) as memory:
        for q in questions:
            session, seq = q["source"].rsplit(":", 1)
            if norm(q["gold"]) not in norm(memory.event_text(session, int(seq))):
                wrong.append(q["question"])
    return wrong


def pushed(db: Path, cwd: str, question: str, n: int, folder: Path) -> str:
    empty = folder / f"next-{n}.jsonl"
    meta = {"timestamp": "2030-01-01T09:00:00.000Z", "type": "session_meta",
            "payload": {"id": f"next-day-{n}", "cwd": cwd}}  # fmt: skip
    empty.write_text(json.dumps(meta) + "\n", encoding="utf-8")
    base = {"session_id": f"next-day-{n}", "transcript_path": str(empty), "cwd": cwd}
    texts = []
    for event in ({"hook_event_name": "SessionStart", "source": "startup"},
                  {"hook_event_name": "UserPromptSubmit", "prompt": question}):  # fmt: skip
        out = codex_hook.main(json.dumps({**base, **event}).encode(), db_path=str(db))
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
    questions = load(name)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for n, q in enumerate(questions):
            db = folder / f"q{n}.sqlite"
            _, cwd = _capture(db, shared / "data" / "codex" / q["file"])
            wrong = check_sources(db, [q])
            if wrong:
                raise SystemExit(f"error: the gold answer is not in its source: {wrong[0]!r}")
            gold = norm(q["gold"])
            rows.append({"question": q["question"], "pushed": gold in norm(pushed(db, cwd, q["question"], n, folder)),
                         "search": gold in norm(searched(db, q["question"]))})  # fmt: skip
    return {"set": name, "rows": rows}


def render(result: dict[str, Any]) -> str:
    rows = result["rows"]
    lines = ["| question | pushed message holds it | one search, top 5 |", "| --- | --- | --- |"]
    lines += [f"| {r['question']} | {'yes' if r['pushed'] else 'no'} | {'yes' if r['search'] else 'no'} |"
              for r in rows]  # fmt: skip
    pushed_n, search_n = sum(r["pushed"] for r in rows), sum(r["search"] for r in rows)
    lines += [
        "",
        f"{result['set']}: pushed {pushed_n}/{len(rows)}, one search {search_n}/{len(rows)}",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shared", default="../shared")
    parser.add_argument("--set", default="codex", help="the question set (bench/nextday/SET.json)")
    args = parser.parse_args()
    if not (Path(args.shared) / "data").is_dir():
        print(f"error: no data in {args.shared}", file=sys.stderr)
        raise SystemExit(2)
    print(render(run(Path(args.shared), args.set)))
