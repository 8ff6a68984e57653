"""The next session's first injection after a real session of typed decisions, as a golden.

    python -m bench.structural_golden --shared ../shared [--write]

A shared Claude Code session (``daaain__a7da6a22-…``: three answered ``AskUserQuestion``
and two approved plans) is captured through the hook (``Stop``); then a new session of the
same project starts (``SessionStart``, an empty transcript) and the hook's
``additionalContext`` is compared with ``fixtures/golden/structural-next-session.en.txt``.
The shared transcript is not copied into this repository (its licence travels with
``../shared``), so this check runs where ``../shared`` is: ``.ci/run`` and ``make accept``.
Exit 1 when the message differs (the diff is printed), 2 when the transcript is missing.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
import tempfile
from pathlib import Path

from memplug.hosts import claude_hook

SESSION_FILE = "daaain__a7da6a22-facc-4fcd-8bab-f83c87862004.jsonl"
GOLDEN = Path(__file__).resolve().parent.parent / "fixtures" / "golden"
GOLDEN_FILE = GOLDEN / "structural-next-session.en.txt"
NEXT_SESSION = "next-day-0000-4000-8000-000000000001"


def next_session_message(transcript: Path, db: Path, empty: Path) -> str:
    """What the hook injects at the first step of a new session after ``transcript``."""
    session_id, cwd = _first_session(transcript)
    stop = {"session_id": session_id, "transcript_path": str(transcript), "cwd": cwd,
            "hook_event_name": "Stop", "stop_hook_active": False}  # fmt: skip
    claude_hook.main(json.dumps(stop).encode(), db_path=str(db))
    start = {"session_id": NEXT_SESSION, "transcript_path": str(empty), "cwd": cwd,
             "hook_event_name": "SessionStart", "source": "startup"}  # fmt: skip
    out = claude_hook.main(json.dumps(start).encode(), db_path=str(db))
    return str(json.loads(out)["hookSpecificOutput"]["additionalContext"]) + "\n"


def _first_session(transcript: Path) -> tuple[str, str]:
    with transcript.open(encoding="utf-8") as lines:
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and record.get("sessionId") and record.get("cwd"):
                return str(record["sessionId"]), str(record["cwd"])
    raise SystemExit(f"no session in {transcript}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shared", default="../shared", help="the shared folder")
    parser.add_argument("--write", action="store_true", help="rewrite the golden file")
    args = parser.parse_args()
    transcript = Path(args.shared) / "data" / "claude-code" / SESSION_FILE
    if not transcript.exists():
        print(f"error: {transcript} is missing (set --shared)", file=sys.stderr)
        raise SystemExit(2)
    with tempfile.TemporaryDirectory() as tmp:
        empty = Path(tmp) / "empty.jsonl"
        empty.write_text("", encoding="utf-8")
        text = next_session_message(transcript, Path(tmp) / "m.sqlite", empty)
    if args.write:
        GOLDEN_FILE.write_text(text, encoding="utf-8")
        print(f"wrote {GOLDEN_FILE}")
        return
    want = GOLDEN_FILE.read_text(encoding="utf-8")
    if text != want:
        sys.stdout.writelines(difflib.unified_diff(want.splitlines(True), text.splitlines(True)))
        raise SystemExit(1)
    print(f"ok: the next session's first message is {GOLDEN_FILE.name}")


if __name__ == "__main__":
    main()
