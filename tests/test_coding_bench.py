"""bench.coding on the hand-written Claude Code fixture: the question set's machinery
(capture every transcript in a folder, resolve gold keys, ask from a new session or
after the compaction, count cited gold) runs in CI, and the work section and the
agent's own words answer what the user-only message of before could not."""

from __future__ import annotations

from pathlib import Path

from bench.coding import load_questions, report, run

REPO = Path(__file__).resolve().parent.parent
QUESTIONS = REPO / "fixtures" / "coding" / "fixture_questions.json"


def test_the_question_set_runs_on_the_fixture_session() -> None:
    questions, results = run(REPO / "fixtures" / "claude_code", QUESTIONS)
    assert [q.id for q in questions] == ["f01", "f02", "f03", "f04"]
    figures = {f.name: f for f in results}
    assert set(figures) == {"memplug", "today", "bm25-any"}
    # Every fixture question is answered by the message memplug injects now …
    assert {q: o.answered for q, o in figures["memplug"].outcomes.items()} == dict.fromkeys(
        ["f01", "f02", "f03", "f04"], True
    )
    # … and the work ones by none of the user-only message of before (f04 it answers
    # through the proposal item extracted from the agent's message).
    today = {q: o.answered for q, o in figures["today"].outcomes.items()}
    assert today == {"f01": False, "f02": False, "f03": False, "f04": True}
    # What was counted is what the message cites: the failed command's call event.
    assert "5e1f0c2a-7b3d-4e8f-9a10-c0ffee000001:19" in figures["memplug"].outcomes["f01"].cited
    table = report(questions, results)
    assert "| memplug | 1.00 |" in table and "| today | 0.25 |" in table


def test_the_real_question_set_names_its_gold_by_stable_keys() -> None:
    questions = load_questions(REPO / "fixtures" / "coding" / "questions.json")
    assert len(questions) >= 40
    assert {q.kind for q in questions} == {"next-session", "after-compaction"}
    for q in questions:
        assert q.gold and all(group for group in q.gold), q.id
        for group in q.gold:
            for key in group:
                assert key["session"] == q.session or key["session"].startswith(q.session)
                assert set(key) in ({"session", "uuid"}, {"session", "call"}), q.id
