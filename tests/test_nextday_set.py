"""The next-day question sets (bench/nextday/*.json) are well formed: each question names
its shared transcript, a gold answer and its source event (the gold text being in that
event is checked by `python -m bench.nextday`, where ../shared is)."""

from __future__ import annotations

import re

from bench.nextday import HERE, load, norm


def test_every_question_has_a_transcript_a_gold_answer_and_a_source_event() -> None:
    sets = sorted(p.stem for p in HERE.glob("*.json"))
    assert sets == ["codex"]
    questions = load("codex")
    assert len(questions) == 8 and len({q["question"] for q in questions}) == 8
    assert len({q["file"] for q in questions}) == 2
    for q in questions:
        assert q["file"].endswith(".jsonl") and q["question"].endswith("?")
        assert re.fullmatch(r"[0-9a-f-]{36}:\d+", q["source"]), q["source"]
        assert norm(q["gold"]) and norm(q["gold"]) not in norm(q["question"])
