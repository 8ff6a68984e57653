"""Claude Code hook latency: whole-process wall and CPU time, interpreter start included.

    python -m bench.hook_latency [--runs 40] [--sizes 10000,100000] [--shape both]
                                 [--baseline DIR] [--no-write]

For each size, two database shapes (``--shape`` picks one):

- ``other``: the synthetic events belong to four other projects; the session being
  prompted is the fixture transcript (captured by a hook, compaction included) in its
  own project, so the prompt's project scope holds that session alone.
- ``same``: the synthetic events belong to the transcript's own project, and the prompt
  shares their words, so the project scope — every term walk, every candidate — covers
  all of them. The transcript is the real 1,512-line session of
  ``../shared/acceptance/claude-code`` (from ``--shared``), with that check's decision
  added before its compaction, and its prompt; the events are its ``gen_events.py``
  shape (ten sessions) in the transcript's working directory.

``memory hook claude-code`` then runs as Claude Code runs it — a new process, the
payload on stdin. ``UserPromptSubmit`` runs on the same database every time: the files
are put back as they were before each run (outside the timing), so every run is the
session's first prompt, injection included, not a repeat that the already-injected
check answers with nothing. Beside it: a ``PostToolUse`` with nothing new (the hook's
fast path), ``memory search`` as one process, the prompt path's imports, and the
interpreter floor ``python -c "import apsw"``, measured in the same run.

``--baseline DIR`` times the prompt hook of another checkout of memplug too (``git
archive main | tar -x -C DIR``), its runs interleaved with this one's on the same
database: on a shared machine the two see the same load. Targets (DESIGN.md):
UserPromptSubmit p95 ≤ 100 ms at 100k events, PostToolUse with nothing new ≤ 30 ms,
``memory search`` p50 ≤ 120 ms.
"""

from __future__ import annotations

import argparse
import compileall
import io
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import msgspec
from msgspec import Struct

from bench.report import machine, percentiles, synthetic_events, write_section
from memplug.memory import Memory

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "fixtures" / "claude_code"
MEMORY = str(Path(sys.executable).parent / "memory")
PAGE = 4096
FLOOR = 'floor: python -c "import apsw"'
PROMPT_ROW = "UserPromptSubmit (memory hook claude-code)"
IMPORTS = (
    "import memplug.cli, memplug.hosts.claude_hook, memplug.memory, memplug.base.config, "
    "memplug.recall.assemble, memplug.recall.retrieve, memplug.plugin"
)
# The real session of ../shared/acceptance/claude-code and that check's question.
SHARED_SESSION = "4d5611e5-241a-462a-8d15-5122611a9569"
SHARED_PROMPT = "where did we say the flaky e2e failures after compaction should be recorded?"
SHARED_DECISION = (
    "Decision: flaky e2e failures after compaction go to logs/compaction-flakes.md, "
    "never into the bead itself."
)


class Shape(Struct, frozen=True):
    """A database shape: where the synthetic events live and which session is prompted."""

    name: str
    title: str
    session_id: str
    cwd: str
    prompt: str
    # The synthetic events' working directory (None: synthetic_events' own projects).
    events_cwd: str | None
    sessions: int
    # Text the first prompt's injection must hold (the shape is then what it claims).
    expect: str


OTHER = Shape(
    name="other",
    title="other projects",
    session_id="5e1f0c2a-7b3d-4e8f-9a10-c0ffee000001",
    cwd="/home/ana/shop",
    prompt="Which port does the checkout API listen on, and what did we decide about card numbers?",
    events_cwd=None,
    sessions=50,
    expect="additionalContext",
)
SAME = Shape(
    name="same",
    title="same project as the transcript",
    session_id=SHARED_SESSION,
    cwd="/home/USER/projects/spotter-worktrees/spotter-dov",
    prompt=SHARED_PROMPT,
    events_cwd="/home/USER/projects/spotter-worktrees/spotter-dov",
    sessions=10,
    expect="compaction-flakes",
)
SHAPES = {"other": (OTHER,), "same": (SAME,), "both": (OTHER, SAME)}


class Setup(Struct):
    """A populated database, its transcripts folder, and its files as first captured."""

    shape: Shape
    db: Path
    projects: Path
    snapshot: dict[str, bytes | None]


def _transcripts(shape: Shape, projects: Path, shared: Path) -> None:
    if shape.session_id != SHARED_SESSION:
        shutil.copytree(FIXTURE, projects)
        return
    source = shared / "data" / "claude-code" / f"{SHARED_SESSION}.jsonl"
    if not source.is_file():
        raise SystemExit(f"Error: the same-project shape needs {source} (see --shared)")
    projects.mkdir()
    records = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()]
    (projects / source.name).write_text(
        "".join(json.dumps(r) + "\n" for r in _with_decision(records)), encoding="utf-8"
    )


def _with_decision(records: list[dict]) -> list[dict]:
    """The transcript with the acceptance check's exchange just before its compaction:
    the user's decision is then out of the model's context, what memory brings back."""
    boundary = next(i for i, r in enumerate(records) if r.get("subtype") == "compact_boundary")
    prev = next(
        r for r in reversed(records[:boundary]) if r.get("uuid") and not r.get("isSidechain")
    )
    keys = ("isSidechain", "userType", "cwd", "sessionId", "version", "gitBranch")

    def record(parent: str, kind: str, text: str) -> dict:
        out = {k: prev[k] for k in keys if k in prev}
        out.update(
            parentUuid=parent,
            type=kind,
            uuid=str(uuid.uuid5(uuid.NAMESPACE_URL, f"memplug-bench:{kind}")),
            timestamp=prev.get("timestamp"),
        )
        if kind == "user":
            out["message"] = {"role": "user", "content": text}
        else:
            out["message"] = {
                "id": "msg_acc1",
                "type": "message",
                "role": "assistant",
                "model": "claude-opus-4-6",
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
            }
        return out

    asked = record(prev["uuid"], "user", SHARED_DECISION)
    answered = record(asked["uuid"], "assistant", "Understood, I will record them there.")
    records[boundary]["logicalParentUuid"] = answered["uuid"]
    return [*records[:boundary], asked, answered, *records[boundary:]]


def _events(shape: Shape, count: int) -> Iterator[str]:
    for event in synthetic_events(count, sessions=shape.sessions):
        if shape.events_cwd is not None:
            event["cwd"] = shape.events_cwd
        yield json.dumps(event, ensure_ascii=False)


def populate(root: Path, shape: Shape, count: int, shared: Path) -> Setup:
    db = root / "m.sqlite"
    with Memory.open(db) as memory:
        data = ("\n".join(_events(shape, count)) + "\n").encode()
        summary = memory.import_jsonl([("-", io.BytesIO(data))])
        assert summary.new == count and not summary.rejected
    projects = root / "projects"
    _transcripts(shape, projects, shared)
    _hook(db, projects, shape, "SessionStart", source="startup")
    _hook(db, projects, shape, "Stop", stop_hook_active=False)
    return Setup(shape, db, projects, _files(db))


def _files(db: Path) -> dict[str, bytes | None]:
    """The database's files (the WAL's too) as they are now, flushed to the disk."""
    os.sync()
    names = (db.name, f"{db.name}-wal", f"{db.name}-shm")
    return {n: (db.parent / n).read_bytes() if (db.parent / n).exists() else None for n in names}


def _restore(setup: Setup) -> None:
    """Put the files back as the snapshot holds them, rewriting only the pages a run
    changed, on the disk: a database file rewritten whole would leave every page dirty
    for the next hook's checkpoint to flush — a cost no real prompt pays."""
    for name, data in setup.snapshot.items():
        path = setup.db.parent / name
        if data is None:
            path.unlink(missing_ok=True)
            continue
        if not path.exists():
            path.touch()
        with open(path, "r+b") as stream:
            now, was = memoryview(stream.read()), memoryview(data)
            for start in range(0, len(data), PAGE):
                if now[start : start + PAGE] != was[start : start + PAGE]:
                    stream.seek(start)
                    stream.write(was[start : start + PAGE])
            stream.truncate(len(data))
            stream.flush()
            os.fsync(stream.fileno())


def payload(projects: Path, shape: Shape, event: str, **fields: object) -> str:
    return json.dumps(
        {
            "session_id": shape.session_id,
            "transcript_path": str(projects / f"{shape.session_id}.jsonl"),
            "cwd": shape.cwd,
            "hook_event_name": event,
            **fields,
        }
    )


def _hook(
    db: Path, projects: Path, shape: Shape, event: str, **fields: object
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [MEMORY, "--db", str(db), "hook", "claude-code"],
        input=payload(projects, shape, event, **fields),
        capture_output=True,
        text=True,
        check=True,
    )


class Timed:
    """Wall and CPU (user + system) milliseconds of each run of a process. On a busy
    machine the wall time mostly measures the queue for a core; the CPU time is what
    the process costs."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []

    def run(self, command: list[str], stdin: str, env: dict[str, str]) -> str:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(command, input=stdin, capture_output=True, text=True, env=env)
        self.wall.append((time.perf_counter() - start) * 1000)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        self.cpu.append(used * 1000)
        if done.returncode:
            raise SystemExit(f"hook failed: {done.stderr[-400:]}")
        return done.stdout

    def stats(self) -> dict[str, float]:
        wall, cpu = percentiles(self.wall), percentiles(self.cpu)
        return {"p50": wall["p50"], "p95": wall["p95"], "cpu50": cpu["p50"], "cpu95": cpu["p95"]}


def instructions(command: list[str], stdin: str, env: dict[str, str]) -> float:
    """Millions of instructions one run of ``command`` executes, counted by valgrind's
    callgrind: unlike time, the count does not move with the machine's load."""
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/out", *command],
            input=stdin,
            capture_output=True,
            text=True,
            env=env,
        )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode or found is None:
        raise SystemExit(f"valgrind failed: {done.stderr[-400:]}")
    return int(found[1]) / 1e6


def _repeat(command: list[str], stdin: str, runs: int, env: dict[str, str]) -> dict[str, float]:
    return _stats(_timed(command, stdin, runs, env))


def prompt_runs(
    setup: Setup, runs: int, baseline: Path | None, counted: bool
) -> dict[str, dict[str, float]]:
    """The prompt hook on the first-captured database, ``runs`` times (interleaved with
    the baseline checkout's runs when there is one); every run's answer is checked.
    ``counted``: one more run of each under valgrind, for its instruction count."""
    shape = setup.shape
    stdin = payload(setup.projects, shape, "UserPromptSubmit", prompt=shape.prompt)
    env = {**os.environ, "MEMPLUG_DB": str(setup.db)}
    sides = {"": (env, Timed())}
    if baseline is not None:
        sides[" — baseline"] = ({**env, "PYTHONPATH": str(baseline)}, Timed())
    for _ in range(runs):
        for side_env, timed in sides.values():
            _restore(setup)
            out = timed.run([MEMORY, "hook", "claude-code"], stdin, side_env)
            if shape.expect not in out:
                raise SystemExit(
                    f"the {shape.name} shape's prompt hook did not inject {shape.expect!r}"
                )
    out = {}
    for label, (side_env, timed) in sides.items():
        out[f"{PROMPT_ROW}{label}"] = figures = timed.stats()
        if counted:
            _restore(setup)
            figures["instr"] = instructions([MEMORY, "hook", "claude-code"], stdin, side_env)
    _restore(setup)
    return out


def measure(
    count: int,
    runs: int,
    shapes: tuple[Shape, ...],
    shared: Path,
    baseline: Path | None,
    counted: bool = False,
) -> list[tuple[str, str, dict[str, float]]]:
    """(shape, process, figures) rows; the shape-independent ones once, on the first."""
    rows: list[tuple[str, str, dict[str, float]]] = []
    for index, shape in enumerate(shapes):
        with tempfile.TemporaryDirectory() as tmp:
            setup = populate(Path(tmp), shape, count, shared)
            for name, figures in prompt_runs(setup, runs, baseline, counted).items():
                rows.append((shape.title, name, figures))
            if index:
                continue
            env = {**os.environ, "MEMPLUG_DB": str(setup.db)}
            idle = payload(setup.projects, shape, "PostToolUse")
            search = [MEMORY, "search", "checkout API port", "--scope", "global"]
            others = {
                "PostToolUse, nothing new (memory hook claude-code)": _repeat(
                    [MEMORY, "hook", "claude-code"], idle, runs, env
                ),
                "memory search (one process)": _repeat(search, "", runs, env),
                "the prompt path's imports alone": _repeat(
                    [sys.executable, "-c", IMPORTS], "", runs, env
                ),
                FLOOR: _repeat([sys.executable, "-c", "import apsw"], "", runs, env),
            }
            if counted:
                floor = [sys.executable, "-c", "import apsw"]
                others[FLOOR]["instr"] = instructions(floor, "", env)
            rows.extend((shape.title, name, figures) for name, figures in others.items())
    return rows


# -- the single-shape helpers bench.hook_events, bench.semantic and bench.sync time with --
# Their database: the synthetic events in the fixture session's project, which shares
# few of their words (the shape this benchmark measured before it had two).
SID = OTHER.session_id
PROMPT = OTHER.prompt
FIXTURE_SHAPE = msgspec.structs.replace(OTHER, events_cwd=OTHER.cwd)


def _populate(root: Path, count: int) -> tuple[Path, Path]:
    setup = populate(root, FIXTURE_SHAPE, count, root)
    return setup.db, setup.projects


def _payload(projects: Path, event: str, **fields: object) -> str:
    return payload(projects, FIXTURE_SHAPE, event, **fields)


def _timed(
    command: list[str], stdin: str, runs: int, env: dict[str, str]
) -> tuple[list[float], list[float]]:
    timed = Timed()
    for _ in range(runs):
        timed.run(command, stdin, env)
    return timed.wall, timed.cpu


def _stats(samples: tuple[list[float], list[float]]) -> dict[str, float]:
    timed = Timed()
    timed.wall, timed.cpu = samples
    return timed.stats()


def _row(count: int, shape: str, name: str, p: dict[str, float], floor: dict[str, float]) -> str:
    counted = f"{p['instr']:.0f}" if "instr" in p else "–"
    return (
        f"| {count:,} | {shape} | {name} | {p['p50']:.0f} | {p['p95']:.0f} | {p['cpu50']:.0f} | "
        f"{p['cpu95']:.0f} | {p['cpu50'] / floor['cpu50']:.1f}× | {counted} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shared", default="../shared", help="the shared data folder")
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--shape", choices=sorted(SHAPES), default="both")
    parser.add_argument("--baseline", help="another memplug checkout to time beside this one")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count each prompt hook's instructions too (one more run under valgrind)",
    )
    parser.add_argument("--no-write", action="store_true", help="leave docs/benchmarks.md")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    baseline = Path(args.baseline).resolve() if args.baseline else None
    # A pip-installed memplug has its bytecode compiled at install; without it (as under
    # PYTHONDONTWRITEBYTECODE) every hook process would compile each module from source.
    for checkout in (REPO, baseline):
        if checkout is not None:
            compileall.compile_dir(str(checkout / "memplug"), quiet=1)
    lines = []
    for count in sizes:
        started = time.perf_counter()
        rows = measure(
            count, args.runs, SHAPES[args.shape], Path(args.shared), baseline, args.instructions
        )
        print(f"{count:,} events ({time.perf_counter() - started:.0f} s)")
        floor = next(p for _, name, p in rows if name == FLOOR)
        for shape, name, p in rows:
            print(
                f"  {shape:<31} {name:<53} wall p50 {p['p50']:>6.1f} p95 {p['p95']:>6.1f}  "
                f"cpu p50 {p['cpu50']:>6.1f} p95 {p['cpu95']:>6.1f} ms"
                + (f"  {p['instr']:.0f} M instructions" if "instr" in p else "")
            )
            lines.append(_row(count, shape, name, p, floor))
    load = os.getloadavg()[0]
    flags = " --instructions" if args.instructions else ""
    body = f"""Command: `python -m bench.hook_latency --runs {args.runs} --sizes {args.sizes} --shape {args.shape}{flags}`
(part of `make bench`). Machine: {machine()}; load average at the end {load:.1f}.
Each row is {args.runs} runs of a whole process, spawn to exit: wall time, the process's
CPU time (user + system), and its CPU time as a multiple of the interpreter floor
(`python -c "import apsw"`) measured in the same run — on a loaded machine the wall
time mostly measures the queue for a core. Shapes (see the module docstring): *other
projects* — the synthetic events in four other projects, the fixture session prompted
in its own; *same project as the transcript* — the events in the transcript's project
and the prompt sharing their words (the real session and question of
`../shared/acceptance/claude-code`). Each prompt run starts from the database as first
captured, so each one injects. Bytecode is compiled first, as a pip install does. With
`--instructions`, one more run of each prompt hook (and of the floor) under valgrind
counts the instructions it executes (millions), a figure the machine's load leaves alone.
Targets: UserPromptSubmit p95 ≤ 100 ms at 100k events in both shapes; PostToolUse with
nothing new ≤ 30 ms; `memory search` p50 ≤ 120 ms.

| events | shape | process | wall p50 ms | wall p95 ms | CPU p50 ms | CPU p95 ms | CPU p50 × floor | instructions (M) |
| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |
""" + "\n".join(lines)
    if not args.no_write:
        write_section("Claude Code hook latency", body)


if __name__ == "__main__":
    main()
