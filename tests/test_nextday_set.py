"""The next-day question sets (bench/nextday/*.json) are well formed: each question names
its shared transcript, a gold answer and its source event (the gold text being in that
event is checked by `python -m bench.nextday`, where ../shared is)."""

from __future__ import annotations

import re

from bench.nextday import HERE, load, norm


def test_every_question_has_a_transcript_a_gold_answer_and_a_source_event() -> None:
    sets = sorted(p.stem for p in HERE.glob("*.json"))
    assert sets == ["claude-code", "codex"]
    questions = load("codex")
    assert len(questions) == 8 and len({q["question"] for q in questions}) == 8
    assert len({q["file"] for q in questions}) == 2
    for q in questions:
        assert q["file"].endswith(".jsonl") and q["question"].endswith("?")
        assert re.fullmatch(r"[0-9a-f-]{36}:\d+", q["source"]), q["source"]
        assert norm(q["gold"]) and norm(q["gold"]) not in norm(q["question"])


def test_the_claude_code_set_spans_sessions_and_authors() -> None:
    """Issue 39's floor: 40 questions or more, from 8 sessions or more, by 3 authors or
    more, each source event in the session its transcript is imported as."""
    questions = load("claude-code")
    assert len(questions) >= 40 and len({q["question"] for q in questions}) == len(questions)
    assert len({q["file"] for q in questions}) >= 8
    assert len({q["author"] for q in questions}) >= 3
    for q in questions:
        session, seq = q["source"].rsplit(":", 1)
        assert q["file"] == session + ".jsonl" and seq.isdigit(), q["source"]
        assert q["file"].startswith(q["author"] + "__") and q["question"].endswith("?")
        assert norm(q["gold"]) and norm(q["gold"]) not in norm(q["question"])
