"""`make compat`: import the real Claude Code transcripts and account for every record.

    python -m bench.compat --shared ../shared

Reads every transcript under ``<shared>/data/claude-code/`` (sessions and their
``<session>/subagents/`` files) through the hook's own capture path into a fresh
database, prints the records by type, the events they became, what was dropped and
why, then captures again to check nothing is added twice. Exits 1 on any error: a
malformed line, an event that fails validation, a capture error, or a second pass
that adds anything.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from memplug.hosts import claude_code as cc
from memplug.hosts import claude_hook
from memplug.plugin import Plugin


def transcripts(folder: Path) -> list[claude_hook.Transcript]:
    found = []
    for path in sorted(folder.glob("*.jsonl")):
        found.append(claude_hook.Transcript(path, path.stem, True))
        for sub in cc.subagent_paths(path):
            found.append(claude_hook.Transcript(sub, f"{path.stem}/{sub.stem}", True))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shared", default="../shared", help="the shared folder (data sets)")
    args = parser.parse_args()
    folder = Path(args.shared) / "data" / "claude-code"
    files = transcripts(folder)
    if not files:
        sys.exit(f"compat: no transcripts under {folder}")
    problems: list[str] = []
    records: Counter[str] = Counter()
    types: Counter[str] = Counter()
    forms: Counter[str] = Counter()
    dropped: Counter[str] = Counter()
    print(f"{'transcript':<62} {'records':>7} {'events':>6} {'dropped':>7} {'ms':>6}")
    for transcript in files:
        started = time.perf_counter()
        result = cc.read_all(transcript.path, session_id=transcript.session_id)
        elapsed = (time.perf_counter() - started) * 1000
        try:
            result.host_events()
        except Exception as error:
            problems.append(f"{transcript.path.name}: an event fails validation: {error}")
        problems += [f"{transcript.path.name}: {e}" for e in result.errors]
        records.update(result.record_types)
        types.update(e["type"] for e in result.events)
        forms.update(
            f"{e['source']['kind']}/{e['source']['form']}" for e in result.events if "source" in e
        )
        dropped.update(result.dropped)
        name = str(transcript.path.relative_to(folder))
        print(
            f"{name:<62} {sum(result.record_types.values()):>7} {len(result.events):>6} "
            f"{sum(result.dropped.values()):>7} {elapsed:>6.1f}"
        )
    _table("records by type", records)
    _table("events by type", types)
    _table("events by source (kind/form)", forms)
    _table("dropped, and why", dropped)
    problems += _capture_twice(files)
    if problems:
        print("\ncompat FAILED:")
        for problem in problems:
            print(f"  {problem}")
        sys.exit(1)
    print("\ncompat ok: every record accounted for, no errors, a second capture added nothing")


def _capture_twice(files: list[claude_hook.Transcript]) -> list[str]:
    from memplug.memory import Memory

    problems = []
    with tempfile.TemporaryDirectory() as temp, Memory.open(Path(temp) / "m.sqlite") as memory:
        totals = []
        for attempt in (1, 2):
            report = claude_hook.HookReport(event="compat")
            started = time.perf_counter()
            claude_hook.capture_all(Plugin(memory), files, report, claude_hook.Deadline(600_000))
            elapsed = time.perf_counter() - started
            problems += [f"capture pass {attempt}: {e}" for e in report.errors]
            totals.append(report.captured)
            print(
                f"\ncapture pass {attempt}: {report.captured} new, {report.present} present, "
                f"{report.transcripts} transcripts in {elapsed:.2f} s"
            )
        stored = memory.store.counts()["events"]
        if totals[1]:
            problems.append(f"the second capture added {totals[1]} events")
        if stored != totals[0]:
            problems.append(f"{totals[0]} events captured but {stored} stored")
        problems += [f"error_log: {e['message']}" for e in memory.store.events.latest_errors()]
    return problems


def _table(title: str, counts: Counter[str]) -> None:
    print(f"\n{title}:")
    for key, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {count:>7,}  {key}")


if __name__ == "__main__":
    main()
