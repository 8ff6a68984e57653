"""What pulling costs against grepping the transcripts, read by a scripted reader.

    python -m bench.pull_cost --shared ../shared [--set claude-code|codex]

For each next-day question (``bench/nextday/<set>.json``) two scripted readers look for
the gold answer, and every character a command prints counts as read:

- **memplug**: one ``memory search "QUESTION"`` (global scope, the default page of five
  hits, the CLI's text), then ``memory expand`` of each ref that page prints, in rank
  order (a ``mem_`` id, ``SESSION:SEQ``, or ``SESSION:SEQ@OFFSET`` where a long event
  opens at the match), then on through each chunk's ``more:`` line, until the output
  holds the answer (at most 10 expands). It reads only what the text page shows.
- **grep**: ``grep -o -i -E ".{0,150}WORD.{0,150}" FILE | head -20`` over the raw
  transcript file the host wrote — each match with 150 characters either side, the
  first 20, as an agent keeps a grep's output readable — WORD the question's rarest
  word in that file (by lines holding it; words of 4 or more letters), then the next
  rarest, until the output holds the answer (at most 3 greps).

It is not an agent: it cannot rephrase or judge, and it stops at the first output that
holds the literal answer. What it measures is the size of what each path makes a
reader go through for the same answers — the issue's "at most 1/3 of the characters an
agent reads grepping". An agent in the loop is ``bench/nextday/agent_protocol.md``.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from statistics import median
from typing import Any

from bench import nextday

WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{3,}")
MAX_EXPANDS = 5
MORE = re.compile(r"^more: memory expand (\S+)$", re.M)
# A hit's line on the search page: its score (``*`` when pinned), then its ref.
PRINTED_REF = re.compile(r"^\d+\.\d{3}\*?  (\S+)", re.M)
MAX_GREPS = 3
GREP_CONTEXT = 150
GREP_HEAD = 20


def _memory(db: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "memplug.cli", "--db", str(db), *args],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return done.stdout


def pull(db: Path, question: str, gold: str) -> dict[str, Any]:
    """One search, then expands in rank order until the answer is read."""
    out = _memory(db, "search", question, "--scope", "global")
    read, calls = len(out), 1
    if gold in nextday.norm(out):
        return {"found": True, "calls": calls, "chars": read}
    # The refs the text page prints, as a reader would copy them: every hit's, in rank
    # order, then on through each one's "more:" line.
    targets = PRINTED_REF.findall(out)[:MAX_EXPANDS]
    while targets and calls <= 2 * MAX_EXPANDS:
        shown = _memory(db, "expand", targets.pop(0))
        read, calls = read + len(shown), calls + 1
        if gold in nextday.norm(shown):
            return {"found": True, "calls": calls, "chars": read}
        targets += MORE.findall(shown)
    return {"found": False, "calls": calls, "chars": read}


def grep(transcript: Path, question: str, gold: str) -> dict[str, Any]:
    """grep -i -F for the question's rarest words, rarest first."""
    lines = transcript.read_text(encoding="utf-8", errors="replace").splitlines()
    lowered = [line.lower() for line in lines]
    words = sorted({w.lower() for w in WORD.findall(question)})
    held = {w: sum(w in line for line in lowered) for w in words}
    rarest = sorted((w for w in words if held[w]), key=lambda w: (held[w], w))
    text = "\n".join(lines)
    read = calls = 0
    for word in rarest[:MAX_GREPS]:
        window = re.compile(
            rf"[^\n]{{0,{GREP_CONTEXT}}}{re.escape(word)}[^\n]{{0,{GREP_CONTEXT}}}", re.I
        )
        shown = "\n".join(
            m.group(0) for _, m in zip(range(GREP_HEAD), window.finditer(text), strict=False)
        )
        read, calls = read + len(shown) + 1, calls + 1
        if gold in nextday.norm(shown):
            return {"found": True, "calls": calls, "chars": read}
    return {"found": False, "calls": calls, "chars": read}


def run(shared: Path, name: str) -> list[dict[str, Any]]:
    questions, host = nextday.load(name), nextday.SETS[name]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        dbs: dict[str, Path] = {}
        for q in questions:
            transcript = shared / "data" / host / q["file"]
            if q["file"] not in dbs:
                dbs[q["file"]] = Path(tmp) / f"{len(dbs)}.sqlite"
                nextday._capture(dbs[q["file"]], transcript, host)
            gold = nextday.norm(q["gold"])
            rows.append({"question": q["question"], "author": q.get("author", ""),
                         "memplug": pull(dbs[q["file"]], q["question"], gold),
                         "grep": grep(transcript, q["question"], gold)})  # fmt: skip
    return rows


def _side(rows: list[dict[str, Any]], side: str) -> str:
    found = [r[side] for r in rows if r[side]["found"]]
    calls = median(f["calls"] for f in found) if found else 0
    chars = sum(r[side]["chars"] for r in rows)
    return f"{len(found)} / {len(rows)} | {calls:g} | {chars:,} | {chars // max(len(rows), 1):,}"


def render(rows: list[dict[str, Any]], name: str) -> str:
    both = [r for r in rows if r["memplug"]["found"] and r["grep"]["found"]]
    ratio = sum(r["memplug"]["chars"] for r in both) / max(1, sum(r["grep"]["chars"] for r in both))
    return "\n".join([
        f"| reader ({name}) | answers found | median calls (found) | characters read | per question |",
        "| --- | ---: | ---: | ---: | ---: |",
        f"| memplug: one search, then expand | {_side(rows, 'memplug')} |",
        f"| grep over the raw transcripts | {_side(rows, 'grep')} |",
        "",
        f"On the {len(both)} questions both readers answer, memplug reads {ratio:.2f} of the "
        "characters grep reads.",
    ])  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shared", default="../shared")
    parser.add_argument("--set", default="claude-code", choices=sorted(nextday.SETS))
    args = parser.parse_args()
    if not (Path(args.shared) / "data").is_dir():
        print(f"error: no data in {args.shared}", file=sys.stderr)
        raise SystemExit(2)
    print(render(run(Path(args.shared), args.set), args.set))


if __name__ == "__main__":
    main()
