"""Precise, not full: which ranked events are worth quoting (memplug.recall.assemble.relevance)."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from msgspec.structs import replace

from memplug.memory import Memory
from memplug.recall.assemble import AssemblyRequest, EventCandidate
from memplug.recall.assemble.relevance import (
    CARRIED,
    FELL_OFF,
    FEW_OWN,
    LITTLE,
    WEAK_TERMS,
    Relevance,
    asks_about_earlier_work,
    asks_for_steps,
    asks_only,
)
from memplug.recall.query import parse_query
from memplug.recall.retrieve.ranking import Ranking
from memplug.recall.retrieve.strength import QueryTerms


def _terms(query: str, df: dict[str, float], n: float = 1000.0) -> QueryTerms:
    return QueryTerms(parse_query(query), df, n, Ranking())


def _event(seq: int, text: str, score: float = 1.0, why: str = "word:x") -> EventCandidate:
    return EventCandidate("s", seq, "user/message", text, role="user", score=score, why=why)


def test_weak_is_measured_on_the_querys_own_terms_in_scope() -> None:
    # "check" is in half the scope, "stripe" in three events: check is weak beside it.
    terms = _terms("check the stripe key", {"check": 500, "stripe": 3, "key": 20})
    assert terms.weak_terms() == ["check"]
    assert terms.found("please check this").enough is False
    assert terms.found("the stripe sandbox").enough is True
    # Two weak terms are enough; alone, the same word is strong when nothing rarer is asked.
    two = _terms("check status", {"check": 500, "statu": 450, "stripe": 3})
    assert two.found("check the status").enough
    alone = _terms("check", {"check": 500})
    assert alone.weak_terms() == [] and alone.found("check it").enough


def test_an_event_is_quoted_only_for_what_its_item_does_not_carry() -> None:
    terms = _terms("staging database indexes", {"stag": 5, "database": 4, "index": 6})
    said = "the staging database is db-staging-2 on port 5433."
    only = _event(1, "Remember: the staging database is db-staging-2 on port 5433.")
    more = _event(
        2, "Remember: the staging database is db-staging-2 on port 5433. Which indexes exist?"
    )
    carried = {only.ref: [said], more.ref: [said]}
    judge = Relevance(terms, [only, more], [only, more], carried, 0.3, 0.15)
    assert judge.reason(only) == (CARRIED, "nothing but labels left")
    assert judge.reason(more) is None
    # Without the item in the message, the event stands on its own terms.
    alone = Relevance(terms, [only], [only], {}, 0.5, 0.15)
    assert alone.reason(only) is None


def test_a_line_needs_a_strong_term_or_a_neighbour_that_holds_one() -> None:
    terms = _terms("check the stripe key", {"check": 500, "stripe": 3, "key": 20})
    strong = _event(2, "Waiting for the Stripe key.")
    near = _event(4, "No reply yet.", 0.9)
    weak_near = _event(5, "Can you check the logs?")
    far = _event(9, "ok", 0.9)
    weak_far = _event(20, "Can you check the logs?")
    events = [strong, near, weak_near, far, weak_far]
    judge = Relevance(terms, events, events, {}, 0.0, 0.15)
    assert judge.reason(strong) is None
    # Within three seqs of a line that holds the query: evidence sits next to hits.
    assert judge.reason(near) is None and judge.reason(weak_near) is None
    assert judge.reason(far) == (WEAK_TERMS, "no query term")
    assert judge.reason(weak_far) == (WEAK_TERMS, "check (weak)")


def test_one_common_word_of_a_long_request_is_too_little() -> None:
    # Eight words of similar rarity: a line with one of them holds an eighth of the query.
    query = "port api listen latency target compose settings match"
    # Document frequencies are kept by needle (a word's stem prefix: `settings` → `set`).
    terms = _terms(query, {t.text: 10 for t in parse_query(query).ranking_terms})
    one = _event(1, "That matches the wrapper.")
    two = _event(9, "The API port is 8080.")
    judge = Relevance(terms, [one, two], [one, two], {}, 0.0, 0.15)
    assert judge.reason(two) is None
    reason = judge.reason(one)
    assert reason is not None and reason[0] == LITTLE and "match" in reason[1]
    # The same word is a match when it is most of a short request.
    short = _terms("match port", {"match": 10, "port": 10})
    assert Relevance(short, [one], [one], {}, 0.0, 0.15).reason(one) is None
    assert Relevance(terms, [one], [one], {}, 0.0, 0.0).reason(one) is None


def test_only_a_line_that_holds_much_of_the_query_lends_its_neighbours() -> None:
    words = "stripe key staging env file back lunch check".split()
    terms = _terms(" ".join(words), {w: 10 for w in words})
    # A tool result with one word of eight lends nothing; one with four lends.
    weak_anchor = EventCandidate("s", 10, "tool/result", "the file", role="tool", score=1.0)
    after_weak = _event(11, "Done, moving on.")
    anchor = EventCandidate(
        "s", 20, "tool/result", "STRIPE_KEY missing from the staging env", role="tool", score=1.0
    )
    after = _event(21, "So we wait for it.")
    ranked = [weak_anchor, after_weak, anchor, after]
    judge = Relevance(terms, ranked, [after_weak, after], {}, 0.0, 0.15)
    assert judge.reason(after) is None
    assert judge.reason(after_weak) == (WEAK_TERMS, "no query term")
    # What an included item already says lends nothing either.
    said = {anchor.ref: ["STRIPE_KEY missing from the staging env"]}
    carried = Relevance(terms, ranked, [after_weak, after], said, 0.0, 0.15)
    assert carried.reason(after) == (WEAK_TERMS, "no query term")


def test_relevance_falls_off_relative_to_the_best_quotable_lines_score() -> None:
    terms = _terms("stripe key", {"stripe": 3, "key": 20})
    best = _event(1, "the stripe key", 2.0)
    close = _event(10, "stripe webhooks", 1.2)
    far = _event(20, "a key ring", 0.5)
    # The best score of a line that would not be quoted anyway sets no bar.
    loud = _event(30, "nothing relevant here", 9.0)
    events = [loud, best, close, far]
    judge = Relevance(terms, events, events, {}, 0.5, 0.15)
    assert judge.reason(best) is None and judge.reason(close) is None
    assert judge.reason(far) == (FELL_OFF, "score 0.50 < 0.5 x 2.00")
    assert Relevance(terms, events, events, {}, 0.0, 0.15).reason(far) is None


def test_with_own_terms_a_neighbour_must_hold_the_query_itself() -> None:
    words = "stripe key staging env".split()
    terms = _terms(" ".join(words), {w: 10 for w in words})
    anchor = _event(20, "STRIPE_KEY missing from the staging env")
    after = _event(21, "So we wait for the staging box.")
    both = _event(22, "The stripe key goes in the env file.")
    ranked = [anchor, after, both]
    assert Relevance(terms, ranked, ranked, {}, 0.0, 0.15).reason(after) is None
    judge = Relevance(terms, ranked, ranked, {}, 0.0, 0.15, own_terms=2)
    assert judge.reason(after) == (FEW_OWN, "staging: fewer than 2")
    assert judge.reason(both) is None and judge.reason(anchor) is None
    # A request of one term group (a CJK phrase, one identifier) asks for just that one.
    one = _terms("值班室分机号是多少？", {"值班室分机号": 3})
    line = _event(30, "值班室分机号是 4417。")
    assert Relevance(one, [line], [line], {}, 0.0, 0.15, own_terms=2).reason(line) is None


@given(st.text(max_size=200))
def test_judging_any_text_never_fails_and_is_stable(text: str) -> None:
    terms = _terms("stripe key check", {"stripe": 3, "key": 20, "check": 500})
    event = _event(1, text)
    first = Relevance(terms, [event], [event], {event.ref: [text[:20]]}, 0.5, 0.15).reason(event)
    again = Relevance(terms, [event], [event], {event.ref: [text[:20]]}, 0.5, 0.15).reason(event)
    assert first == again


def _import(memory: Memory, events: list[dict[str, Any]]) -> None:
    data = "\n".join(json.dumps(e) for e in events) + "\n"
    assert not memory.import_jsonl([("-", io.BytesIO(data.encode()))]).rejected


def test_the_message_quotes_less_and_says_why(memory: Memory) -> None:
    texts = [f"Please check step {i} of the rollout." for i in range(30)]
    texts += ["Lunch now.", "Back soon.", "Coffee first.", "Meeting at two."]
    texts += ["The Stripe sandbox key arrives on Monday."]
    _import(
        memory,
        [
            {"session_id": "s", "seq": i + 1, "type": "user/message", "role": "user",
             "text": t, "cwd": "/p"}
            for i, t in enumerate(texts)
        ],
    )  # fmt: skip
    result = memory.assemble(AssemblyRequest("s", query="check the stripe key"))
    quoted = [e.ref for e in result.included if e.section == "evidence"]
    # The hit; the turns beside it that the neighbour spread brought in stand on it, but
    # say nothing ("Lunch now.", "Meeting at two."): a quote of them carries nothing.
    assert quoted == ["s:35"]
    reasons = {o.ref: o.reason for o in result.omitted if o.section == "evidence"}
    assert {reasons[f"s:{seq}"] for seq in (32, 33, 34)} == {"nothing left after the cut"}
    assert set(reasons.values()) <= {WEAK_TERMS, "over limit", "nothing left after the cut"}
    assert "check" in result.signals["weak"]
    assembly = replace(memory.config.assembly, precise=False)
    config = replace(memory.config, assembly=assembly)
    loose = Memory(memory.db, replace(memory.loaded, config=config))
    before = loose.assemble(AssemblyRequest("s", query="check the stripe key"))
    assert len([e for e in before.included if e.section == "evidence"]) > 10
    assert result.used_tokens * 3 < before.used_tokens


@pytest.mark.parametrize(
    ("request_text", "earlier", "steps"),
    [
        ("which command runs just the renderer tests?", True, True),
        ("where does the AshComputer library live?", True, True),
        ("how do we reinstall the tool so it picks up the new code?", True, True),
        ("why did git push fail the first time?", True, False),
        ("how many tests passed after the renderer change?", True, False),
        ("is the spotter-dov epic finished?", True, False),
        ("does AshComputer generate the toggle handler for us?", True, False),
        ("in scope of what we did since Monday, is anything left?", True, False),
        # What to do next, not what was done.
        ("can we check the whole code base for this?", False, False),
        ("what if the agent commits while a subagent runs?", False, False),
        ("how does a metadata.json look today?", False, False),
        ("let's fix it, write the test first", False, False),
        # A question inside a pasted block is not the person's.
        ('```\nunknown command "session"\nDid you mean this?\n```\nfix it', False, False),
        # Questions among instructions and thoughts (over 25 words): a discussion.
        (
            "okay, UX improvement time. I think we can drop the committed marker and mark "
            "the temporary ones instead, the list reads like a poor git log right now. why "
            "do some checkpoints have a prompt and others not?",
            False,
            False,
        ),
    ],
)
def test_which_requests_ask_about_earlier_work_and_which_a_step_answers(
    request_text: str, earlier: bool, steps: bool
) -> None:
    assert asks_about_earlier_work(request_text) is earlier
    assert asks_for_steps(request_text) is steps


@pytest.mark.parametrize(
    ("text", "only"),
    [
        ("how is the pre-commit deciding how to add the trailer?", True),
        ("does this version write to the v1 branch?", True),
        ("how do I invoke the migration script? is it documented?", True),
        ("Q: where is it getting the Author from?", True),
        # A proposal is the person's idea, not a request for a fact.
        ("What if we just include both sessions with a checkpoint?", False),
        ("can we change the message to name both sessions?", False),
        ("- let's keep both sessions?", False),
        # A statement beside the question says something itself.
        ("I checked out the branch with the issue. can you take a look?", False),
        ("push it with force-with-lease", False),
        ("", False),
    ],
)
def test_which_messages_only_ask(text: str, only: bool) -> None:
    assert asks_only(text) is only


@pytest.fixture(autouse=True)
def _one_tier(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests judge which lines are worth quoting at all: every line that passes is
    quoted (one tier), so that the two tiers' own criterion (test_index.py) is not what
    they measure."""
    monkeypatch.setenv("MEMPLUG_ASSEMBLY__QUOTE_SPECIFIC", "0")
    monkeypatch.setenv("MEMPLUG_ASSEMBLY__QUOTES", "100")
