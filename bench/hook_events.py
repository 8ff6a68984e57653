"""Every Claude Code hook a session fires, timed two ways: as `make bench` times the
hook (whole process, the machine as it is, CPU beside wall) and as a user meets it
(wall time while the machine is busy with other work: Claude Code itself, a build).

    python -m bench.hook_events [--runs 15] [--events 10000] [--load 2]

The database and transcript are `bench.hook_latency`'s. "One new line" appends an
assistant message to the transcript before each run, as Claude Code does between two
tool hooks; "nothing new" is the idle path. Loaded: ``--load`` busy processes spin
while the hooks run (default: one per core). Prints a Markdown table.

    python -m bench.hook_events --replay --shared ../shared [--against REV]
        [--sessions 4] [--tools 60] [--pre]

``--replay`` plays real sessions instead: the shared Claude Code transcripts with the
most tool calls (and ``entireio__fc-99c919b212-0``, the session the hook costs were
first measured on) are written out line by line, and each hook fires where Claude Code
fires it — ``UserPromptSubmit`` before a typed prompt, ``PostToolUse`` after each tool
result, ``Stop`` before the next prompt and at the end; ``PreToolUse`` before each tool
call with ``--pre`` (an install with a precondition). ``--against REV`` replays the
same steps with a checkout of REV (a git worktree), each step run by both, in turns,
on databases of their own. Prints the CPU per tool call (its PostToolUse, and its
PreToolUse with ``--pre``), p50/p95, and the hook CPU per session, both ways.
"""

from __future__ import annotations

import argparse
import compileall
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from bench.hook_latency import MEMORY, PROMPT, REPO, SID, Timed, _payload, _populate, _timed
from bench.report import machine, percentiles
from bench.sessions import _records, prompt_text

# The session the tool hooks' cost was first measured on (issue 38).
FIRST_MEASURED = "entireio__fc-99c919b212-0.jsonl"

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


# -- real sessions, replayed --------------------------------------------------------


def long_sessions(shared: Path, count: int) -> list[Path]:
    """The shared transcripts with the most tool results, the first measured one first."""
    files = sorted((shared / "data" / "claude-code").glob("*.jsonl"))
    by_tools = sorted(files, key=lambda f: (-f.read_text().count('"tool_result"'), f.name))
    first = [f for f in files if f.name == FIRST_MEASURED]
    return (first + [f for f in by_tools if f not in first])[:count]


def _blocks(record: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    content = record.get("message", {}).get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == kind]


def hook_steps(
    records: Sequence[dict[str, Any]], tools: int, pre: bool
) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """``(lines written, hook event, payload fields)`` in the order Claude Code fires
    them, up to ``tools`` tool results."""
    seen_tools, in_turn = 0, False
    for index, record in enumerate(records):
        prompt = prompt_text(record)
        if prompt is not None:
            if in_turn:
                yield index, "Stop", {"stop_hook_active": False}
            yield index, "UserPromptSubmit", {"prompt": prompt}
            in_turn = True
        for call in _blocks(record, "tool_use") if pre else ():
            yield index + 1, "PreToolUse", {"tool_name": call.get("name", "")}
        if _blocks(record, "tool_result"):
            seen_tools += 1
            yield index + 1, "PostToolUse", {"tool_name": "tool"}
            if seen_tools >= tools:
                break
    yield index + 1, "Stop", {"stop_hook_active": False}


def _hook_command(tree: Path) -> tuple[list[str], dict[str, str]]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    # -P: not the working folder first on sys.path, so PYTHONPATH picks the tree.
    return [sys.executable, "-P", "-m", "memplug.cli", "hook", "claude-code"], env


def replay_session(
    path: Path, trees: Sequence[Path], root: Path, tools: int, pre: bool
) -> list[dict[str, list[float]]]:
    """Per tree: hook event → CPU ms of each run, over one session replayed."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    records = _records(lines)
    sid = next((r["sessionId"] for r in records if r.get("sessionId")), path.stem)
    transcript = root / "projects" / path.stem / f"{sid}.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text("")
    written = 0
    cpu: list[dict[str, list[float]]] = [{} for _ in trees]
    for step, (end, event, fields) in enumerate(hook_steps(records, tools, pre)):
        with transcript.open("a", encoding="utf-8") as stream:
            stream.writelines(lines[written:end])
        written = max(written, end)
        payload = json.dumps(
            {
                "session_id": sid,
                "transcript_path": str(transcript),
                "cwd": str(root / "work"),
                "hook_event_name": event,
                **fields,
            }
        )
        order = range(len(trees)) if step % 2 == 0 else reversed(range(len(trees)))
        for which in order:  # in turns, so both see the same load
            command, env = _hook_command(trees[which])
            env["MEMPLUG_DB"] = str(root / f"db{which}.sqlite")
            timed = Timed()
            timed.run(command, payload, env)
            cpu[which].setdefault(event, []).extend(timed.cpu)
    return cpu


def _worktree(rev: str, where: Path) -> Path:
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "--detach", "-f", str(where), rev],
        check=True,
        capture_output=True,
    )
    compileall.compile_dir(str(where / "memplug"), quiet=1)
    return where


def _replay_table(names: Sequence[str], runs: Sequence[Sequence[dict[str, list[float]]]]) -> str:
    """Per tree: the tool calls' CPU p50/p95 and each session's hook CPU, in seconds."""
    head = "| hook CPU | " + " | ".join(names) + " |"
    rows = [head, "| --- |" + " ---: |" * len(names)]
    per = {"PreToolUse": "tool call", "PostToolUse": "tool call", "UserPromptSubmit": "prompt"}
    for event, unit in (*per.items(), ("Stop", "turn")):
        samples = [[ms for one in tree for ms in one.get(event, ())] for tree in runs]
        if not samples[0]:
            continue
        cells = [
            f"p50 {percentiles(x)['p50']:.0f} / p95 {percentiles(x)['p95']:.0f} ms" for x in samples
        ]
        rows.append(f"| per {unit}: {event} | " + " | ".join(cells) + " |")
    for index, _ in enumerate(runs[0]):
        totals = [sum(sum(v) for v in tree[index].values()) / 1000 for tree in runs]
        tool_calls = len(runs[0][index].get("PostToolUse", ()))
        label = f"session {index + 1} ({tool_calls} tool calls)"
        rows.append(f"| {label}: all hooks | " + " | ".join(f"{t:.1f} s" for t in totals) + " |")
    return "\n".join(rows)


def replay_main(args: argparse.Namespace) -> None:
    sessions = long_sessions(Path(args.shared), args.sessions)
    with tempfile.TemporaryDirectory() as tmp:
        trees, names = [REPO], ["this checkout"]
        if args.against:
            trees.append(_worktree(args.against, Path(tmp) / "against"))
            names.append(args.against)
        compileall.compile_dir(str(REPO / "memplug"), quiet=1)
        try:
            per_session = []
            for number, path in enumerate(sessions):
                root = Path(tmp) / f"s{number}"
                per_session.append(replay_session(path, trees, root, args.tools, args.pre))
                print(f"replayed {path.name}", file=sys.stderr)
        finally:
            if args.against:
                subprocess.run(
                    ["git", "-C", str(REPO), "worktree", "remove", "--force", str(trees[1])],
                    capture_output=True,
                )
    runs = [[one[which] for one in per_session] for which in range(len(trees))]
    flags = f" --against {args.against}" if args.against else ""
    flags += " --pre" if args.pre else ""
    print(
        f"Command: `python -m bench.hook_events --replay --sessions {args.sessions} "
        f"--tools {args.tools}{flags}`. Machine: {machine()}. Sessions: "
        + ", ".join(p.stem for p in sessions)
        + ".\n"
    )
    print(_replay_table(names, runs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--load", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--replay", action="store_true", help="replay real sessions")
    parser.add_argument("--shared", default=str(REPO.parent / "shared"))
    parser.add_argument("--against", help="a git revision replayed beside this checkout")
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument("--tools", type=int, default=60)
    parser.add_argument("--pre", action="store_true", help="fire PreToolUse too")
    args = parser.parse_args()
    if args.replay:
        replay_main(args)
        return
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
