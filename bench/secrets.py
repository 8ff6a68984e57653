"""The secret detector measured both ways, on real text, and for speed.

    python -m bench.secrets [--shared ../shared] [--show 40]

1. The labelled corpus (``fixtures/secrets/corpus.jsonl``): recall on the strings that
   hold a secret (caught: each labelled value lies whole in a withheld span), and false
   redactions on the look-alikes (any span found), per group.
2. Real text: every line of LoCoMo's turns and of the Claude Code transcripts in the
   shared folder (by event type), how many the detector would redact, and the redacted
   lines themselves (up to ``--show``), to be read by eye.
3. Speed, on this machine: per line (the corpus), and per 3,000-token message cut from
   LoCoMo, from Claude Code tool output, and from credential-dense text (p50/p95).

Prints a Markdown report; the "Secrets" section of docs/benchmarks.md quotes it.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

from msgspec import Struct

from bench.report import machine, percentiles
from memplug.base.redaction import find_secrets, redact_secrets
from memplug.base.text import estimate_tokens

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "secrets" / "corpus.jsonl"
MESSAGE_TOKENS = 3_000


class Labelled(Struct, frozen=True):
    text: str
    # The values that must not survive redaction; empty for a look-alike.
    secrets: list[str]
    group: str


class Score(Struct, frozen=True):
    secrets: int
    missed: list[Labelled]
    lookalikes: int
    redacted: list[Labelled]

    @property
    def recall(self) -> float:
        return 1 - len(self.missed) / self.secrets

    @property
    def false_rate(self) -> float:
        return len(self.redacted) / self.lookalikes


def load_corpus(path: Path = CORPUS) -> list[Labelled]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            data = json.loads(line)
            rows.append(Labelled(data["text"], list(data["secrets"]), data["group"]))
    return rows


def caught(row: Labelled) -> bool:
    """Every labelled value of ``row``, wherever it occurs, lies whole inside one
    withheld span: a value that redaction cut short ("[redacted:password]!") leaks its
    last character, and its text no longer being in the output would hide that."""
    spans = find_secrets(row.text)
    for secret in row.secrets:
        at = row.text.find(secret)
        while at >= 0:
            if not any(s.start <= at and at + len(secret) <= s.end for s in spans):
                return False
            at = row.text.find(secret, at + 1)
    return True


def score(rows: Sequence[Labelled]) -> Score:
    positives = [r for r in rows if r.secrets]
    negatives = [r for r in rows if not r.secrets]
    return Score(
        secrets=len(positives),
        missed=[r for r in positives if not caught(r)],
        lookalikes=len(negatives),
        redacted=[r for r in negatives if find_secrets(r.text)],
    )


def locomo_lines(shared: Path) -> Iterator[str]:
    data = json.loads((shared / "data" / "locomo" / "locomo10.json").read_text("utf-8"))
    for conversation in data:
        for key, turns in conversation["conversation"].items():
            if key.startswith("session_") and isinstance(turns, list):
                for turn in turns:
                    yield from turn["text"].splitlines()


def claude_code_lines(shared: Path) -> Iterator[tuple[str, str]]:
    """``(event type, line)`` for every line of every event memplug captures from the
    transcripts (tool calls as stored: the tool's name and its JSON input)."""
    from bench.compat import transcripts
    from memplug.hosts import claude_code as cc

    for transcript in transcripts(shared / "data" / "claude-code"):
        result = cc.read_all(transcript.path, session_id=transcript.session_id)
        for event in result.events:
            for line in str(event.get("text") or "").splitlines():
                yield str(event["type"]), line


def messages(lines: Sequence[str], limit: int = 40) -> list[str]:
    """Up to ``limit`` consecutive runs of ``lines`` of about 3,000 tokens each."""
    out: list[str] = []
    current: list[str] = []
    tokens = 0
    for line in lines:
        current.append(line)
        tokens += estimate_tokens(line) + 1
        if tokens >= MESSAGE_TOKENS:
            out.append("\n".join(current))
            current, tokens = [], 0
            if len(out) == limit:
                break
    return out


def timed_ms(texts: Sequence[str], repeat: int = 5) -> list[float]:
    """Per text, the best of ``repeat`` scans, in milliseconds."""
    samples = []
    for text in texts:
        best = float("inf")
        for _ in range(repeat):
            started = time.perf_counter()
            find_secrets(text)
            best = min(best, time.perf_counter() - started)
        samples.append(best * 1000)
    return samples


def _corpus_report(result: Score, rows: Sequence[Labelled]) -> list[str]:
    groups: dict[str, list[Labelled]] = {}
    for row in rows:
        groups.setdefault(row.group, []).append(row)
    out = [
        f"Corpus: {len(rows)} strings ({result.secrets} holding a secret, "
        f"{result.lookalikes} look-alikes).",
        "",
        f"- recall: {result.secrets - len(result.missed)}/{result.secrets} = "
        f"{result.recall:.3f} (target ≥ 0.95)",
        f"- false redactions: {len(result.redacted)}/{result.lookalikes} = "
        f"{result.false_rate:.3f} (target ≤ 0.01)",
        "",
        "| group | strings | caught or passed as labelled |",
        "| --- | ---: | ---: |",
    ]
    wrong = {id(r) for r in result.missed + result.redacted}
    for group, members in groups.items():
        right = sum(1 for r in members if id(r) not in wrong)
        out.append(f"| {group} | {len(members)} | {right} |")
    out.append("")
    for row in result.missed:
        out.append(f"- missed: `{row.text}`")
    for row in result.redacted:
        out.append(
            f"- redacted a look-alike: `{row.text}` → `{redact_secrets(row.text, named=True)}`"
        )
    return out


def _real_report(shared: Path, show: int) -> tuple[list[str], list[str], list[str]]:
    """The real-data table, and the LoCoMo and Claude Code lines (for the speed runs)."""
    seen: Counter[str] = Counter()
    hit: Counter[str] = Counter()
    shown: list[str] = []
    locomo = list(locomo_lines(shared))
    code: list[str] = []
    sources = [("LoCoMo turn", line) for line in locomo]
    sources += [(f"Claude Code {kind}", line) for kind, line in claude_code_lines(shared)]
    for source, line in sources:
        seen[source] += 1
        if source.endswith("tool/result"):
            code.append(line)
        if find_secrets(line):
            hit[source] += 1
            if len(shown) < show:
                shown.append(f"- {source}: `{redact_secrets(line, named=True)[:200]}`")
    out = ["| text | lines | redacted |", "| --- | ---: | ---: |"]
    for source in seen:
        out.append(f"| {source} | {seen[source]:,} | {hit[source]:,} |")
    out.append(f"| all | {sum(seen.values()):,} | {sum(hit.values()):,} |")
    out += ["", "Redacted lines, as redacted:" if shown else "Redacted lines: none.", *shown]
    return out, locomo, code


def _speed_report(rows: Sequence[Labelled], locomo: list[str], code: list[str]) -> list[str]:
    lines = [r.text for r in rows]
    per_line = timed_ms(lines, repeat=20)
    dense = [r.text for r in rows if r.secrets] * 20
    runs = {
        "LoCoMo turns": messages(locomo),
        "Claude Code tool output": messages(code),
        "credential-dense (corpus secrets)": messages(dense, limit=10),
    }
    line = percentiles([ms * 1000 for ms in per_line])
    out = [
        f"Machine: {machine()}.",
        "",
        f"- per line (the {len(lines)} corpus strings): p50 {line['p50']:.1f} µs, "
        f"p95 {line['p95']:.1f} µs",
        "",
        "| 3,000-token message | messages | chars (mean) | p50 ms | p95 ms |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, texts in runs.items():
        if not texts:
            continue
        stats = percentiles(timed_ms(texts))
        chars = sum(len(t) for t in texts) // len(texts)
        out.append(
            f"| {name} | {len(texts)} | {chars:,} | {stats['p50']:.2f} | {stats['p95']:.2f} |"
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shared", default="../shared", help="the shared folder (data sets)")
    parser.add_argument("--show", type=int, default=40, help="redacted real lines to print")
    args = parser.parse_args()
    rows = load_corpus()
    result = score(rows)
    report = ["### The labelled corpus", "", *_corpus_report(result, rows), ""]
    real, locomo, code = _real_report(Path(args.shared), args.show)
    report += ["### Real text", "", *real, ""]
    report += ["### Speed", "", *_speed_report(rows, locomo, code)]
    print("\n".join(report))


if __name__ == "__main__":
    main()
