"""Which phrase filters of assembly earn their place.

python -m bench.filter_audit --shared ../shared [--only NAME]

Each phrase filter of ``memplug/recall/assemble`` and ``memplug/recall/retrieve/precision.py`` is
turned off in turn (its word list emptied, or its test made to answer as if no phrase
matched), and two benches run with it off, in this process:

- the next-day questions (``bench.nextday``, the Claude Code set): how many questions the
  pushed message answers, per author, and per half of the authors (daaain and napoli,
  entireio and obra);
- the replayed sessions (``bench.sessions``, labelled prompts after compactions, all of
  one author): injected tokens, quoted lines and the useful share.

A filter earns its place when turning it off costs no next-day question in either half
and no useful share on the labelled sessions, and it removes something: with it off,
more lines or tokens are pushed for the same answers. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench import nextday, sessions
from memplug.recall.assemble.sections import evidence
from memplug.recall.retrieve import phrases, precision

HALVES = {"daaain": "A", "napoli": "A", "entireio": "B", "obra": "B"}
_NEVER = re.compile(r"(?!)")


def _swap(original: object, replacement: object) -> list[tuple[Any, str, object]]:
    """Rebind every memplug module's name for ``original`` to ``replacement``."""
    swapped = []
    for name, module in list(sys.modules.items()):
        if not name.startswith("memplug") or module is None:
            continue
        for attr, value in list(vars(module).items()):
            if value is original:
                swapped.append((module, attr, value))
                setattr(module, attr, replacement)
    return swapped


@contextmanager
def _off(pairs: list[tuple[object, object]]) -> Iterator[None]:
    """Each ``(original, replacement)`` swapped; an ``original`` given as ``(class, name)``
    is a method, rebound on its class."""
    swapped: list[tuple[Any, str, object]] = []
    for original, replacement in pairs:
        if isinstance(original, tuple):
            owner, attr = original
            swapped.append((owner, attr, getattr(owner, attr)))
            setattr(owner, attr, replacement)
        else:
            swapped += _swap(original, replacement)
    try:
        yield
    finally:
        for module, attr, value in swapped:
            setattr(module, attr, value)


def _always(answer: bool) -> Callable[..., bool]:
    return lambda *args, **kwargs: answer


# name -> (what turning it off means, the objects to swap)
FILTERS: dict[str, tuple[str, Callable[[], list[tuple[object, object]]]]] = {
    "narration": (
        "no agent message is an announcement (`narration`)",
        lambda: [((evidence.EvidenceSections, "_narration"), _always(False))],
    ),
    "finding words": (
        "no phrase marks a finding (`_FINDING`): a short status is narration",
        lambda: [(phrases.FINDING, _NEVER)],
    ),
    "lead-in words": (
        "no lead-in is cut from a quote (`LEAD_IN`)",
        lambda: [(phrases.LEAD_IN, _NEVER)],
    ),
    "generic words": (
        "no word is generic (`GENERIC_WORDS`): `continue` is a query",
        lambda: [(phrases.GENERIC_WORDS, frozenset())],
    ),
    "earlier-work questions: never": (
        "no request asks about earlier work: always strict (`asks_about_earlier_work`)",
        lambda: [(precision.asks_about_earlier_work, _always(False))],
    ),
    "earlier-work questions: always": (
        "every request asks about earlier work: never strict",
        lambda: [(precision.asks_about_earlier_work, _always(True))],
    ),
    "questions only": (
        "no message is only questions (`asks_only`, `on the way`)",
        lambda: [(precision.asks_only, _always(False))],
    ),
    "step questions": (
        "no request asks for a step (`asks_for_steps`)",
        lambda: [(precision.asks_for_steps, _always(False))],
    ),
}


def measure(shared: Path) -> dict[str, Any]:
    rows = nextday.run(shared, "claude-code")["rows"]
    by_author: dict[str, int] = {}
    halves = {"A": 0, "B": 0}
    for row in rows:
        by_author[row["author"]] = by_author.get(row["author"], 0) + row["pushed"]
        halves[HALVES[row["author"]]] += row["pushed"]
    steps = []
    labels = sessions.load_labels(sessions.LABELS)
    for path in sessions.transcripts(shared):
        steps += sessions.replay(path, labels)
    replayed = sessions.summary(steps)
    return {"pushed": sum(r["pushed"] for r in rows), "halves": halves, "authors": by_author,
            "tokens": replayed["tokens"], "lines": replayed["lines"],
            "useful": replayed["useful_share"], "got": replayed["got"]}  # fmt: skip


def _row(name: str, m: dict[str, Any], base: dict[str, Any] | None) -> str:
    def delta(key: str) -> str:
        return "" if base is None else f" ({m[key] - base[key]:+})"

    halves = f"{m['halves']['A']} / {m['halves']['B']}"
    if base is not None:
        halves += f" ({m['halves']['A'] - base['halves']['A']:+} / "
        halves += f"{m['halves']['B'] - base['halves']['B']:+})"
    useful = f"{m['useful']:.3f}" + (
        "" if base is None else f" ({m['useful'] - base['useful']:+.3f})"
    )
    return (f"| {name} | {m['pushed']}{delta('pushed')} | {halves} | {m['tokens']:,}{delta('tokens')} "
            f"| {m['lines']}{delta('lines')} | {useful} | {m['got']}{delta('got')} |")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shared", type=Path, default=sessions.REPO.parent / "shared")
    parser.add_argument("--only", help="audit only the filters whose name holds this")
    args = parser.parse_args(argv)
    base = measure(args.shared)
    print("| turned off | next-day pushed (45) | halves A / B | sessions tokens | lines "
          "| useful share | useful evidence (31) |")  # fmt: skip
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    print(_row("nothing (all filters on)", base, None))
    for name, (meaning, pairs) in FILTERS.items():
        if args.only and args.only not in name:
            continue
        with _off(pairs()):
            found = measure(args.shared)
        print(_row(f"{name}: {meaning}", found, base), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
