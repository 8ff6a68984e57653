"""Shared helpers for benchmarks: synthetic events, percentiles, and the report file."""

from __future__ import annotations

import json
import os
import random
import re
import statistics
from collections.abc import Iterator, Sequence
from pathlib import Path

REPORT = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
# bench.run points the benchmarks at a staged copy of the report through this variable.
# Not MEMPLUG_*: config reads every MEMPLUG_ variable as a key and rejects unknown ones.
REPORT_ENV = "BENCH_REPORT"
_HEADER = """# Benchmarks

Produced by `make bench` (`python -m bench.run --shared ../shared`) on the machine
named in each section; each section says the exact command that produced it. Figures
are from one run; ratios and percentiles are measured against baselines in the same
run. Targets are from DESIGN.md ("Performance").
"""

WORDS = (
    "deploy cache tenant migration schema index query latency budget token session worker "
    "queue retry timeout failure config service endpoint payload build release branch commit "
    "review test fixture golden parser lexer router handler metrics"
).split()
CJK = ["测试环境的端口", "数据库迁移", "值班室分机号", "部署流程", "缓存失效"]
TYPES = (
    ("user/message", "user"),
    ("assistant/message", "assistant"),
    ("tool/call", "assistant"),
    ("tool/result", "tool"),
)


def synthetic_events(count: int, sessions: int = 20, seed: int = 0) -> Iterator[dict[str, object]]:
    """Deterministic host events with the realistic mix the acceptance checks use."""
    rng = random.Random(seed)
    for i in range(count):
        kind, role = TYPES[(i // sessions) % 4]
        words = [rng.choice(WORDS) for _ in range(rng.randint(8, 60))]
        if rng.random() < 0.2:
            words.insert(
                rng.randrange(len(words)), f"src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.py"
            )
        if rng.random() < 0.2:
            words.insert(rng.randrange(len(words)), str(rng.randint(1000, 65000)))
        if rng.random() < 0.05:
            words.append(rng.choice(CJK) + str(rng.randint(10, 9999)))
        event: dict[str, object] = {
            "session_id": f"s{i % sessions}",
            "seq": i // sessions + 1,
            "type": kind,
            "role": role,
            "time": f"2026-01-{1 + (i // sessions) % 28:02d}T10:{i % 60:02d}:00Z",
            "text": " ".join(words),
            "cwd": f"/home/ana/project{i % sessions % 4}",
        }
        if kind.startswith("tool"):
            event["tool_name"] = "bash"
            event["call_id"] = f"c{i}"
        yield event


def synthetic_jsonl(count: int, sessions: int = 20, seed: int = 0) -> bytes:
    lines = (json.dumps(e, ensure_ascii=False) for e in synthetic_events(count, sessions, seed))
    return ("\n".join(lines) + "\n").encode("utf-8")


def percentiles(samples_ms: Sequence[float]) -> dict[str, float]:
    ordered = sorted(samples_ms)
    if not ordered:
        return {"p50": 0.0, "p95": 0.0, "p99": 0.0}

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))], 2)

    return {"p50": round(statistics.median(ordered), 2), "p95": at(0.95), "p99": at(0.99)}


def write_section(heading: str, body: str) -> None:
    """Replace (or append) the ``## heading`` section of docs/benchmarks.md (or of the
    staged copy that ``$BENCH_REPORT`` names)."""
    report = Path(os.environ.get(REPORT_ENV) or REPORT)
    text = report.read_text(encoding="utf-8") if report.exists() else _HEADER
    section = f"## {heading}\n\n{body.strip()}\n"
    pattern = re.compile(rf"^## {re.escape(heading)}\n.*?(?=^## |\Z)", re.DOTALL | re.MULTILINE)
    if pattern.search(text):
        text = pattern.sub(lambda _: section + "\n", text).rstrip() + "\n"
    else:
        text = text.rstrip() + "\n\n" + section
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(text, encoding="utf-8")


def machine() -> str:
    import platform

    import apsw

    return (
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"SQLite {apsw.sqlite_lib_version()} (apsw {apsw.apsw_version()})"
    )
