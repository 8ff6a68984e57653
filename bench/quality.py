"""Retrieval quality on real conversations: LoCoMo and LongMemEval-S dev, side by side.

A *memory* is what one database holds: a LoCoMo conversation (its questions ask about
it), or one LongMemEval question's haystack of ~50 sessions. Each memory is imported
into a fresh database (one project, one ``session_id`` per session, a ``user/message``
or ``assistant/message`` per turn, event time from the session date), twice: with
extraction off and on. Every question is then asked two ways:

* ``memory search`` (``Retriever.search``, global scope, one page of 10): recall@5 and
  recall@10 of the gold turns among the hits (an event hit finds its turn, a memory
  hit the turns in its ``sources``);
* ``memory assemble`` for the memory's last session at the default budget (3,000
  tokens): a gold turn counts as injected when a long run of it is quoted verbatim
  (the acceptance check's rule).

In the same run, on the same turns and budget: plain BM25 (stdlib SQLite FTS5,
``porter unicode61``, question words OR-ed, ``ORDER BY bm25``; each turn costs its
tokens + 8 when packed into the budget) and recency only (the latest turns that fit).
Nothing here is keyed to a dataset: both go through the same import and the same calls.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import sqlite3
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.prestep import quoted
from memplug.base.text import estimate_tokens
from memplug.memory import Memory
from memplug.recall.assemble import AssemblyRequest

BUDGET_TOKENS = 3000
LINE_OVERHEAD = 8
SEARCH_PAGE = 10
HALVES = ("half A", "half B")
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
# The stop list the acceptance check uses for its BM25 baseline, so both sides agree.
BASELINE_STOP = set(
    "a an the of to in on at for and or but is are was were be been being do does did what "
    "when where who whom which why how that this these those with from by as it its i you he "
    "she they we me him her them my your his their our has have had not no yes would could "
    "should will can may might about into than then so if".split()
)


@dataclass
class Turn:
    key: str
    session: str
    seq: int
    role: str
    text: str
    time: str | None


@dataclass
class Question:
    question: str
    gold: list[str]
    category: str


@dataclass
class MemorySet:
    """One database's worth of turns and the questions asked of it."""

    id: str
    turns: list[Turn]
    questions: list[Question]


@dataclass
class Dataset:
    name: str
    memories: list[MemorySet]
    categories: list[str]
    notes: str = ""


# -- loaders ----------------------------------------------------------------------------


def _stamp(moment: datetime | None) -> str | None:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ") if moment else None


def _parse(value: str | None, form: str) -> datetime | None:
    try:
        return datetime.strptime((value or "").strip(), form).replace(tzinfo=UTC)
    except ValueError:
        return None


def _norm_dia(ref: str) -> str | None:
    match = re.fullmatch(r"D(\d+):(\d+)", ref.strip())
    return f"D{int(match.group(1))}:{int(match.group(2))}" if match else None


def load_locomo(path: Path) -> Dataset:
    """Conversations as turns plus their questions of categories 1–4.

    Evidence is normalised: ``"D8:6; D9:17"`` is split, ``"D30:05"`` read as ``D30:5``;
    references to turns that do not exist are dropped, and a question left with none
    is skipped. The note says how many of each.
    """
    raw = json.loads(path.read_text(encoding="utf-8"))
    counts = {"split": 0, "dangling": 0, "skipped": 0}
    memories = []
    for conv in raw:
        c = conv["conversation"]
        keys = sorted(
            (k for k in c if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1])
        )
        turns = []
        for key in keys:
            start = _parse(c.get(f"{key}_date_time"), "%I:%M %p on %d %B, %Y")
            for index, turn in enumerate(c[key]):
                when = start + timedelta(seconds=30 * index) if start else None
                turns.append(
                    Turn(
                        key=_norm_dia(turn["dia_id"]) or turn["dia_id"],
                        session=key,
                        seq=index + 1,
                        role="user",
                        text=f"{turn['speaker']}: {turn['text']}",
                        time=_stamp(when),
                    )
                )
        known = {t.key for t in turns}
        questions = []
        for qa in conv["qa"]:
            if qa.get("category") not in LOCOMO_CATEGORIES:
                continue
            gold = []
            for ref in qa.get("evidence", []):
                parts = [p for p in re.split(r"[;,\s]+", ref) if p]
                if len(parts) > 1 or (parts and _norm_dia(parts[0]) != parts[0]):
                    counts["split"] += 1
                for part in parts:
                    norm = _norm_dia(part)
                    if norm in known:
                        gold.append(norm)
                    else:
                        counts["dangling"] += 1
            if not gold:
                counts["skipped"] += 1
                continue
            category = f"{qa['category']} {LOCOMO_CATEGORIES[qa['category']]}"
            questions.append(Question(qa["question"], sorted(set(gold)), category))
        memories.append(MemorySet(conv["sample_id"], turns, questions))
    notes = (
        f"Evidence normalised: {counts['split']} malformed references split or unpadded "
        f'(`"D8:6; D9:17"`, `"D30:05"`), {counts["dangling"]} pointing at turns that do not '
        f"exist dropped, {counts['skipped']} questions left with no evidence skipped."
    )
    categories = [f"{k} {v}" for k, v in LOCOMO_CATEGORIES.items()]
    return Dataset("LoCoMo", memories, categories, notes)


def load_lme(path: Path) -> Dataset:
    """One memory per question: its haystack sessions in date order; gold = the turns
    marked ``has_answer``."""
    raw = json.loads(gzip.decompress(path.read_bytes()))
    memories = []
    for q in raw:
        sessions = sorted(
            zip(
                q["haystack_dates"], q["haystack_session_ids"], q["haystack_sessions"], strict=True
            ),
            key=lambda s: s[0],
        )
        turns, gold = [], []
        for index, (date, sid, body) in enumerate(sessions):
            start = _parse(date[:10] + date[-6:], "%Y/%m/%d %H:%M")
            session = f"{index:03d}-{sid}"
            for n, turn in enumerate(body):
                when = start + timedelta(seconds=30 * n) if start else None
                key = f"{session}:{n + 1}"
                turns.append(Turn(key, session, n + 1, turn["role"], turn["content"], _stamp(when)))
                if turn.get("has_answer"):
                    gold.append(key)
        questions = [Question(q["question"], gold, q["question_type"])] if gold else []
        memories.append(MemorySet(q["question_id"], turns, questions))
    categories = sorted({m.questions[0].category for m in memories if m.questions})
    return Dataset("LongMemEval-S dev", memories, categories)


def load(shared: Path, name: str, quick: bool = False) -> Dataset:
    """``locomo`` or ``lme-dev``; ``quick`` keeps a fixed subset (3 conversations, or
    every second LongMemEval question) for iterating."""
    if name == "locomo":
        data = load_locomo(shared / "data" / "locomo" / "locomo10.json")
        if quick:
            data.memories = data.memories[:3]
    elif name == "lme-dev":
        data = load_lme(shared / "data" / "longmemeval" / "longmemeval_s_dev.json.gz")
        if quick:
            data.memories = data.memories[::2]
    else:
        raise ValueError(f"unknown dataset {name!r}")
    return data


# -- scoring ----------------------------------------------------------------------------


class Tally:
    """Sums of per-question recall by metric and category (``"all"`` for the total,
    ``HALVES`` for the memories of even and odd position, to cross-check a weight)."""

    def __init__(self) -> None:
        self.sums: dict[tuple[str, str], float] = defaultdict(float)
        self.counts: dict[str, int] = defaultdict(int)

    def add(self, category: str, values: dict[str, float], *extra: str) -> None:
        for key in (category, "all", *extra):
            self.counts[key] += 1
            for name, value in values.items():
                self.sums[(name, key)] += value

    def get(self, name: str, key: str = "all") -> float:
        return self.sums[(name, key)] / max(1, self.counts[key])


def pack(ranked: Iterable[str], text_of: dict[str, str], budget: int = BUDGET_TOKENS) -> set[str]:
    """The ranked turns that fit the budget, best first, each costing its tokens + 8."""
    spent, got = 0, set()
    for key in ranked:
        cost = estimate_tokens(text_of[key]) + LINE_OVERHEAD
        if spent + cost > budget:
            break
        spent += cost
        got.add(key)
    return got


def _recall(gold: Sequence[str], found: Iterable[str]) -> float:
    return len(set(gold) & set(found)) / len(gold)


def _bm25_index(turns: Sequence[Turn]) -> sqlite3.Connection:
    index = sqlite3.connect(":memory:")
    index.execute(
        "CREATE VIRTUAL TABLE t USING fts5(d UNINDEXED, body, tokenize='porter unicode61')"
    )
    index.executemany("INSERT INTO t VALUES (?, ?)", [(t.key, t.text) for t in turns])
    return index


def _bm25_ranked(index: sqlite3.Connection, question: str) -> list[str]:
    words = [w for w in re.findall(r"[a-z0-9]+", question.lower()) if w not in BASELINE_STOP]
    if not words:
        return []
    rows = index.execute(
        "SELECT d FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 200",
        (" OR ".join(f'"{w}"' for w in words),),
    ).fetchall()
    return [r[0] for r in rows]


def baselines(data: Dataset) -> dict[str, Tally]:
    """Plain BM25 and recency over the same turns, packed into the same budget."""
    bm25, recency = Tally(), Tally()
    for n, memory in enumerate(data.memories):
        half = HALVES[n % 2]
        text_of = {t.key: t.text for t in memory.turns}
        newest = [t.key for t in reversed(memory.turns)]
        recent = pack(newest, text_of)
        index = _bm25_index(memory.turns)
        for q in memory.questions:
            ranked = _bm25_ranked(index, q.question)
            bm25.add(
                q.category,
                {
                    "r5": _recall(q.gold, ranked[:5]),
                    "r10": _recall(q.gold, ranked[:10]),
                    "budget": _recall(q.gold, pack(ranked, text_of)),
                },
                half,
            )
            recency.add(
                q.category,
                {
                    "r5": _recall(q.gold, newest[:5]),
                    "r10": _recall(q.gold, newest[:10]),
                    "budget": _recall(q.gold, recent),
                },
                half,
            )
        index.close()
    return {"bm25": bm25, "recency": recency}


# -- memplug ----------------------------------------------------------------------------


def _jsonl(memory: MemorySet) -> bytes:
    lines = []
    for t in memory.turns:
        event: dict[str, Any] = {
            "session_id": t.session,
            "seq": t.seq,
            "type": f"{t.role}/message",
            "role": t.role,
            "text": t.text,
            "cwd": f"/eval/{memory.id}",
        }
        if t.time:
            event["time"] = t.time
        lines.append(json.dumps(event, ensure_ascii=False))
    return ("\n".join(lines) + "\n").encode("utf-8")


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in base.items()}
    for section, values in extra.items():
        out.setdefault(section, {}).update(values)
    return out


@dataclass
class Variant:
    """A named config (overrides of the defaults) run over a database built with
    extraction on or off."""

    name: str
    config: dict[str, Any] = field(default_factory=dict)
    extraction: bool = False
    assemble: bool = True


def _hit_turns(hit: Any, key_of: dict[tuple[str, int], str]) -> list[str]:
    if hit.kind == "event":
        key = key_of.get((hit.session_id, hit.seq))
        return [key] if key else []
    sources = getattr(hit, "sources", None) or []
    return [k for s in sources if (k := key_of.get((s["session_id"], s["seq"])))]


def _ask(
    memory: Memory,
    turns: MemorySet,
    variant: Variant,
    tally: Tally,
    times: list[float],
    half: str,
) -> None:
    key_of = {(t.session, t.seq): t.key for t in turns.turns}
    text_of = {t.key: t.text for t in turns.turns}
    retriever = memory.retriever  # with the semantic provider, when the variant turns it on
    last = turns.turns[-1].session
    for q in turns.questions:
        t0 = time.perf_counter()
        page = retriever.search(q.question, scope="global", limit=SEARCH_PAGE)
        times.append((time.perf_counter() - t0) * 1000)
        found: list[list[str]] = [_hit_turns(h, key_of) for h in page.hits]
        values = {
            "r5": _recall(q.gold, [k for keys in found[:5] for k in keys]),
            "r10": _recall(q.gold, [k for keys in found[:10] for k in keys]),
        }
        if variant.assemble:
            result = memory.assemble(AssemblyRequest(last, query=q.question, trigger="bench"))
            values["budget"] = sum(quoted(text_of[g], result.text) for g in q.gold) / len(q.gold)
            values["used"] = result.used_tokens
        tally.add(q.category, values, half)


def evaluate(
    data: Dataset,
    variants: Sequence[Variant],
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, tuple[Tally, list[float]]]:
    """Every variant over every memory of ``data``: ``{name: (tally, search ms)}``.

    Each memory is imported once per extraction setting; variants differing only in
    ranking reopen the same file with their config.
    """
    out: dict[str, tuple[Tally, list[float]]] = {v.name: (Tally(), []) for v in variants}
    settings = sorted({v.extraction for v in variants})
    for n, turns in enumerate(data.memories):
        with tempfile.TemporaryDirectory() as tmp:
            for extraction in settings:
                path = Path(tmp) / f"m{int(extraction)}.sqlite"
                build = {"extraction": {"enabled": extraction}}
                with Memory.open(path, config=build) as memory:
                    memory.import_jsonl([("-", io.BytesIO(_jsonl(turns)))])
                for variant in variants:
                    if variant.extraction != extraction:
                        continue
                    tally, times = out[variant.name]
                    with Memory.open(path, config=_merge(build, variant.config)) as memory:
                        # A semantic variant embeds what the shared import did not (its
                        # provider was off); nothing happens for the others.
                        memory.embed_vectors()
                        _ask(memory, turns, variant, tally, times, HALVES[n % 2])
        progress(f"{data.name}: {n + 1}/{len(data.memories)} memories")
    return out
