"""Every Claude Code hook a session fires, timed two ways: as `make bench` times the
hook (whole process, the machine as it is, CPU beside wall) and as a user meets it
(wall time while the machine is busy with other work: Claude Code itself, a build).

    python -m bench.hook_events [--runs 15] [--events 10000] [--load 2]

The database and transcript are `bench.hook_latency`'s. "One new line" appends an
assistant message to the transcript before each run, as Claude Code does between two
tool hooks; "nothing new" is the idle path. Loaded: ``--load`` busy processes spin
while the hooks run (default: one per core). Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import compileall
import json
import multiprocessing
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from bench.hook_latency import MEMORY, PROMPT, REPO, SID, _payload, _populate, _timed
from bench.report import machine, percentiles

# (label, hook event, payload fields, whether a transcript line is appended first)
CASES: tuple[tuple[str, str, dict[str, object], bool], ...] = (
    ("SessionStart (resume)", "SessionStart", {"source": "resume"}, False),
    ("UserPromptSubmit", "UserPromptSubmit", {"prompt": PROMPT}, False),
    ("PreToolUse, one new line", "PreToolUse", {"tool_name": "Bash"}, True),
    ("PreToolUse, nothing new", "PreToolUse", {"tool_name": "Bash"}, False),
    ("PostToolUse, one new line", "PostToolUse", {"tool_name": "Bash"}, True),
    ("PostToolUse, nothing new", "PostToolUse", {"tool_name": "Bash"}, False),
    ("Stop", "Stop", {}, True),
)


def _spin() -> None:
    while True:
        pass


def _appender(transcript: Path) -> Callable[[int], None]:
    """Appends one new assistant line (a fresh uuid, chained to the last one)."""
    last = json.loads(transcript.read_text().splitlines()[-1])
    state = {"parent": last.get("uuid")}

    def append(n: int) -> None:
        uuid = f"00000000-0000-4000-9000-{n:012d}"
        record = {
            "parentUuid": state["parent"],
            "isSidechain": False,
            "cwd": "/home/ana/shop",
            "sessionId": SID,
            "type": "assistant",
            "message": {
                "id": f"msg_bench_{n}",
                "type": "message",
                "role": "assistant",
                "content": [{"type": "text", "text": f"Step {n}: running the tests again."}],
                "stop_reason": "end_turn",
            },
            "uuid": uuid,
            "timestamp": "2026-03-02T10:00:00.000Z",
        }
        with transcript.open("a") as stream:
            stream.write(json.dumps(record) + "\n")
        state["parent"] = uuid

    return append


def _run_cases(db: Path, projects: Path, runs: int) -> dict[str, dict[str, float]]:
    env = {**os.environ, "MEMPLUG_DB": str(db)}
    append = _appender(projects / f"{SID}.jsonl")
    counter = iter(range(1, 1_000_000))
    out = {}
    for label, event, fields, grows in CASES:
        payload = _payload(projects, event, **fields)
        wall, cpu = [], []
        for _ in range(runs):
            if grows:
                append(next(counter))
            w, c = _timed([MEMORY, "hook", "claude-code"], payload, 1, env)
            wall += w
            cpu += c
        out[label] = {
            "wall50": percentiles(wall)["p50"],
            "wall95": percentiles(wall)["p95"],
            "cpu50": percentiles(cpu)["p50"],
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--load", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    compileall.compile_dir(str(REPO / "memplug"), quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        db, projects = _populate(Path(tmp), args.events)
        quiet = _run_cases(db, projects, args.runs)
        spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(args.load)]
        for spinner in spinners:
            spinner.start()
        try:
            loaded = _run_cases(db, projects, args.runs)
            load = os.getloadavg()[0]
        finally:
            for spinner in spinners:
                spinner.terminate()
    print(
        f"Command: `python -m bench.hook_events --runs {args.runs} --events {args.events} "
        f"--load {args.load}`. Machine: {machine()}; load average while loaded {load:.1f}.\n"
    )
    print(
        "| hook | as make bench: CPU p50 ms | as make bench: wall p50 ms "
        "| as a user, loaded: wall p50 ms | loaded: wall p95 ms |"
    )
    print("| --- | ---: | ---: | ---: | ---: |")
    for label, *_ in CASES:
        q, lo = quiet[label], loaded[label]
        print(
            f"| {label} | {q['cpu50']:.0f} | {q['wall50']:.0f} | {lo['wall50']:.0f} "
            f"| {lo['wall95']:.0f} |"
        )


if __name__ == "__main__":
    main()
