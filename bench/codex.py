"""Codex rollouts: every shared rollout read, its counts against the hand counts, and the
hook's latency as a whole process.

    python -m bench.codex --shared ../shared [--check] [--runs 15]

Hand counts are those of ``../shared/data/codex/README.md`` (user prompts: ``event_msg``
``user_message`` records; tool calls: ``function_call``, ``custom_tool_call`` and
``local_shell_call`` items). ``--check`` exits 1 when a count differs or a record type
is unknown to the reader, and skips the latency runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from memplug.hosts import codex

# file prefix → (user prompts, tool calls), from the shared README's table.
HAND_COUNTS = {
    "Python-AI-Solutions": (14, 17),
    "SproutSeeds": (13, 148),
    "MoonLadderStudios": (6, 97),
    "dsissoko": (104, 111),
    "codemie-ai": (3, 38),
}


def counts(path: Path) -> dict[str, object]:
    read = codex.read_all(path)
    prompts = sum(1 for e in read.events if (e.get("source") or {}).get("kind") == "user")
    calls = sum(1 for e in read.events if e["type"] == "tool/call")
    return {"prompts": prompts, "calls": calls, "events": len(read.events),
            "dropped": read.cursor.dropped, "unknown": read.cursor.unknown,
            "malformed": read.malformed}  # fmt: skip


def hook_latency(path: Path, runs: int) -> list[float]:
    """Wall ms of `memory hook codex` on UserPromptSubmit, the rollout already captured."""
    session = codex.session_id_of(path)
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "MEMPLUG_HOME": tmp}
        base = {"session_id": session, "transcript_path": str(path), "cwd": "/bench"}
        command = [sys.executable, "-m", "memplug.cli", "hook", "codex"]
        subprocess.run(command, input=json.dumps({**base, "hook_event_name": "Stop"}),
                       text=True, env=env, capture_output=True, check=True)  # fmt: skip
        prompt = json.dumps({**base, "hook_event_name": "UserPromptSubmit", "prompt": "what next?"})
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            subprocess.run(command, input=prompt, text=True, env=env, capture_output=True,
                           check=True)  # fmt: skip
            times.append((time.perf_counter() - start) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shared", default="../shared")
    parser.add_argument("--check", action="store_true", help="counts only; exit 1 on a mismatch")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    files = sorted((Path(args.shared) / "data" / "codex").glob("*.jsonl"))
    if not files:
        print(f"error: no rollouts in {args.shared}/data/codex", file=sys.stderr)
        raise SystemExit(2)
    wrong = []
    print("| rollout | prompts (hand) | tool calls (hand) | events | dropped | unknown |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    for path in files:
        got = counts(path)
        owner = path.name.split("__", 1)[0]
        want = HAND_COUNTS.get(owner)
        if want != (got["prompts"], got["calls"]) or got["unknown"] or got["malformed"]:
            wrong.append(path.name)
        hand = want or ("?", "?")
        print(f"| {owner} | {got['prompts']} ({hand[0]}) | {got['calls']} ({hand[1]}) |"
              f" {got['events']} | {got['dropped']} | {got['unknown'] or 'none'} |")  # fmt: skip
    if wrong:
        print(f"FALLS SHORT: counts differ for {', '.join(wrong)}")
        raise SystemExit(1)
    print(f"ok: {len(files)} rollouts read, every count as counted by hand")
    if args.check:
        return
    largest = max(files, key=lambda p: p.stat().st_size)
    times = sorted(hook_latency(largest, args.runs))
    p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
    print(f"UserPromptSubmit on {largest.name.split('__')[0]} ({largest.stat().st_size:,} bytes),"
          f" {args.runs} runs: p50 {statistics.median(times):.0f} ms, p95 {p95:.0f} ms wall")  # fmt: skip


if __name__ == "__main__":
    main()
