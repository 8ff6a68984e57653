"""Cue rules: the labelled examples in the rule table are the test table.

The same examples are rendered into docs/extraction.md; the last tests here fail when
the document and the table disagree.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memplug.base.vocab import MEMORY_KINDS
from memplug.derive.cues import (
    ALL_RULES,
    DOC_BEGIN,
    DOC_END,
    MODIFIERS,
    TASK_FIELDS,
    all_examples,
    analyse,
    canonical,
    classify,
    content_words,
    render_rules_markdown,
    split_sentences,
    subject_key,
)
from memplug.derive.cues.analysis import _AGENT_TRIGGERS, _TRIGGERS, _maybe_cue, _Triggers
from memplug.derive.cues.options import _INLINE, _INLINE_WORDS
from memplug.derive.cues.rules import PICK_RULE, RULES, RULES_BY_ID
from memplug.derive.cues.sentences import (
    _AGENT_SENTENCE_END,
    _BOLD_LABEL,
    _SENTENCE_END,
    _may_end,
    mask_code,
)

DOC = Path(__file__).resolve().parent.parent / "docs" / "extraction.md"
LABELS = set(MEMORY_KINDS) | set(TASK_FIELDS) | set(MODIFIERS)
EXAMPLES = all_examples()


@pytest.mark.parametrize(
    ("rule", "example"),
    EXAMPLES,
    ids=[f"{rule.id}:{i}" for i, (rule, _) in enumerate(EXAMPLES)],
)
def test_labelled_utterance(rule, example) -> None:
    got = classify(example.text, example.role, agent=example.agent, offered=_offered(example))
    assert got == example.expect, (rule.ref, example)


def _offered(example) -> tuple[str, ...]:
    return (example.offered,) if example.offered else ()


def test_the_table_is_large_and_bilingual() -> None:
    assert len(EXAMPLES) >= 60
    chinese = [e for r, e in EXAMPLES if r.lang == "zh"]
    english = [e for r, e in EXAMPLES if r.lang == "en"]
    assert len(chinese) >= 20 and len(english) >= 40
    assert sum(e.expect is None for _, e in EXAMPLES) >= 30


@pytest.mark.parametrize("rule", ALL_RULES, ids=[r.id for r in ALL_RULES])
def test_every_rule_has_its_own_positive_and_negative_examples(rule) -> None:
    assert any(e.expect == rule.kind for e in rule.examples), rule.id
    # At least three negatives, most drawn from real text (issue 12): what a rule must
    # not fire on is where extraction went wrong.
    assert sum(e.expect != rule.kind for e in rule.examples) >= 3, rule.id
    assert rule.version >= 1
    assert rule.kind in LABELS


def test_rule_ids_are_unique_and_named_by_language() -> None:
    ids = [r.id for r in ALL_RULES]
    assert len(ids) == len(set(ids))
    assert all(r.id.split(".")[0] == r.lang for r in ALL_RULES)


def test_every_memory_kind_and_task_field_has_a_rule() -> None:
    kinds = {r.kind for r in ALL_RULES}
    assert set(MEMORY_KINDS) <= kinds
    assert set(TASK_FIELDS) <= kinds


# -- what a candidate carries -------------------------------------------------------------


def one(text: str, role: str = "user"):
    found = analyse(text, role)
    assert len(found) == 1, found
    return found[0]


def test_a_label_is_cut_from_the_content_and_recorded_as_the_extractor() -> None:
    c = one("Decision: we ship the checkout rewrite on Friday.")
    assert (c.kind, c.content, c.rule) == (
        "decision",
        "we ship the checkout rewrite on Friday.",
        "en.decision.label@1",
    )


def test_a_meaningful_cue_stays_in_the_content() -> None:
    c = one("We must never log card numbers.")
    assert c.content == "We must never log card numbers."
    assert c.rule == "en.constraint.must@4"


def test_numbers_and_conditions_ride_along() -> None:
    c = one("The checkout endpoint must keep p95 < 200 ms at 1k rps.")
    assert c.conditions == ("at 1k rps",)
    assert [n.raw for n in c.numbers] == ["p95 < 200 ms"]
    flagged = one("Remember: the retry limit is 5.")
    assert [n.flagged for n in flagged.numbers] == [True]


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("Note: the API port is 8080.", "api port"),
        ("Actually, the API port is 9090 now.", "api port"),
        ("Set the API port to 9090.", "api port"),
        ("Remember: our error budget is 0.1% per month.", "error budget"),
        ("Correction: the cache limit is 4 GB, not 3 GB.", "cache limit"),
        ("记住：API端口是8080。", "api端口"),
        ("决定：测试环境的端口改为 5433。", "测试环境的端口"),
        ("Remember: locally the API listens on port 8080 too.", None),
        ("We must never log card numbers.", None),
    ],
)
def test_subject_keys_are_mechanical(text: str, key: str | None) -> None:
    assert one(text).subject_key == key


def test_an_assistant_proposal_names_the_subject_it_proposes_to_change() -> None:
    c = one("I suggest we set the API port to 9090.", "assistant")
    assert (c.kind, c.subject_key) == ("proposal", "api port")


@pytest.mark.parametrize(
    ("text", "target"),
    [
        ("Instead of pip-tools use uv for locking.", "pip-tools"),
        ("Use uv instead of pip-tools.", "pip-tools"),
        ("Correction: the cache limit is 4 GB, not 3 GB.", "3 GB"),
        ("The deadline is not Friday but Monday.", "Friday"),
        ("数据库不是MySQL，而是Postgres。", "MySQL"),
        ("Actually, the API port is 9090 now.", None),
    ],
)
def test_corrections_name_what_they_replace(text: str, target: str | None) -> None:
    c = one(text)
    assert c.is_correction
    assert c.correction_target == target


def test_a_correction_keeps_the_kind_its_own_cue_gives() -> None:
    c = one("Actually, we decided to ship on Monday.")
    assert (c.kind, c.correction_rule, c.content) == (
        "decision",
        "en.correction.label@1",
        "we decided to ship on Monday.",
    )


def test_retraction_names_its_target() -> None:
    c = one("Forget that the API port is 8080.")
    assert c.is_retraction and c.kind is None
    assert c.retraction_target == "the API port is 8080"
    assert c.subject_key == "api port"


def test_an_uncued_restatement_needs_a_value_that_names_something() -> None:
    assert one("The API port is 9090.").restatement
    assert analyse("The build is broken.", "user") == []
    assert subject_key("the build is broken") == "build"
    assert subject_key("the build is broken", need_value=True) is None


# -- what is never a cue --------------------------------------------------------------------


def test_code_fences_and_quotes_are_not_cues() -> None:
    text = (
        "Here is the snippet:\n```python\n# Remember: we must never log card numbers\n```\n"
        "> Remember: the admin panel password rotates every 90 days.\n"
        "That's all."
    )
    assert analyse(text, "user") == []


def test_inline_code_cannot_carry_a_cue() -> None:
    assert analyse("Try it with `--must-never-retry` again.", "user") == []
    # A flag name is not an instruction even without backticks.
    assert classify("Try it with --must-never-retry again.") is None


def test_questions_only_carry_open_question_labels() -> None:
    assert analyse("Must we use Postgres?", "user") == []
    assert analyse("Should we never deploy on Fridays?", "user") == []
    assert classify("Question: must we use Postgres?") == "open_question"


def test_assistant_text_only_gives_proposals() -> None:
    text = "Decision: we ship Friday. We must never log card numbers. I suggest a canary."
    assert [c.kind for c in analyse(text, "assistant")] == ["proposal"]
    assert [c.kind for c in analyse(text, "user")] == ["decision", "constraint"]


@pytest.mark.parametrize("role", ["tool", "system", "command", ""])
def test_other_roles_give_nothing(role: str) -> None:
    assert analyse("Decision: we ship on Friday.", role) == []


# -- sentences -------------------------------------------------------------------------------


def test_sentences_split_on_ends_but_not_inside_versions_or_decimals() -> None:
    text = "Pin v2.31.5 now. It is 1.5x faster! 记住：端口是8080。不要在周五部署。"
    assert [s.text for s in split_sentences(text)] == [
        "Pin v2.31.5 now.",
        "It is 1.5x faster!",
        "记住：端口是8080。",
        "不要在周五部署。",
    ]


def test_a_label_alone_on_a_line_labels_the_bullets_below_it() -> None:
    text = "Decisions:\n- Postgres for orders\n- Redis for sessions\n\nThanks, see you."
    found = analyse(text, "user")
    assert [(c.kind, c.content, c.rule) for c in found] == [
        ("decision", "Postgres for orders", "en.decision.label@1"),
        ("decision", "Redis for sessions", "en.decision.label@1"),
    ]


def test_bold_labels_count() -> None:
    assert one("**Decision:** we ship on Friday.").content == "we ship on Friday."


def test_several_cues_in_one_message_come_out_in_order() -> None:
    text = (
        "Goal: make checkout p95 under 200 ms. Right now it's around 450 ms on staging. "
        "The checkout endpoint must keep p95 < 200 ms at 1k rps."
    )
    assert [c.label for c in analyse(text, "user")] == ["goal", "constraint"]
    assert [c.index for c in analyse(text, "user")] == [0, 2]


# -- helpers ---------------------------------------------------------------------------------


def test_content_words_drop_stopwords_and_keep_hyphenated_names_whole() -> None:
    words = content_words("Lock files are generated with pip-tools, not 3 GB")
    assert {"lock", "files", "generated", "pip-tools", "pip", "tools", "3", "gb"} <= words
    assert not {"are", "with", "not"} & words
    assert {"端口", "口是"} <= content_words("端口是8080")


def test_canonical_folds_case_space_and_end_punctuation() -> None:
    assert canonical("The  API port is 8080.") == canonical("the API port is 8080")


# -- properties --------------------------------------------------------------------------------

# Tokens of every example in the table, plus line and quote structure: shuffled, they
# make sentences close to real cues in every rule's language.
_TOKENS = sorted(
    {token for _, example in all_examples() for token in example.text.split()}
    | {"\n", "```", "> ", "- ", "?", "。", "`code`", "Decisions:", "：", ","}
)
CUE_SOUP = st.lists(st.sampled_from(_TOKENS), max_size=30)


@settings(max_examples=300, deadline=None)
@pytest.mark.slow
@given(st.text(max_size=400), st.sampled_from(["user", "assistant"]))
def test_arbitrary_text_never_raises_and_is_deterministic(text: str, role: str) -> None:
    first = analyse(text, role)
    assert first == analyse(text, role)
    for candidate in first:
        assert candidate.label in LABELS
        assert candidate.content.strip()


@settings(max_examples=300, deadline=None)
@given(CUE_SOUP, st.sampled_from(["user", "assistant"]))
def test_cue_soup_is_deterministic_and_assistants_only_propose(parts, role) -> None:
    text = " ".join(parts)
    first = analyse(text, role)
    assert first == analyse(text, role)
    if role == "assistant":
        assert {c.kind for c in first} <= {"proposal"}


@pytest.mark.parametrize(
    ("rule", "example"), EXAMPLES, ids=[f"{r.id}:{i}" for i, (r, _) in enumerate(EXAMPLES)]
)
def test_the_prefilter_changes_nothing_on_the_table(rule, example) -> None:
    for agent in (False, True):
        context = {"agent": agent, "offered": _offered(example)}
        assert analyse(example.text, example.role, **context) == analyse(
            example.text, example.role, prefilter=False, **context
        )


@settings(max_examples=500, deadline=None)
@given(CUE_SOUP, st.sampled_from(["user", "assistant"]))
def test_the_prefilter_changes_nothing_on_cue_soup(parts, role) -> None:
    text = " ".join(parts)
    assert analyse(text, role) == analyse(text, role, prefilter=False)
    assert analyse(text, role, agent=True) == analyse(text, role, prefilter=False, agent=True)


# -- the document --------------------------------------------------------------------------------


def test_the_document_shows_exactly_the_rule_table() -> None:
    doc = DOC.read_text(encoding="utf-8")
    start, end = doc.index(DOC_BEGIN), doc.index(DOC_END) + len(DOC_END)
    assert doc[start:end] == render_rules_markdown(), (
        "docs/extraction.md is out of date: regenerate the rules section with "
        "`python -m memplug.derive.cues` and paste it between the markers"
    )


def test_every_rule_is_documented_with_every_example() -> None:
    doc = DOC.read_text(encoding="utf-8")
    for rule, example in EXAMPLES:
        assert f"`{rule.ref}`" in doc
        assert example.text.replace("|", "\\|") in doc


# -- pasted and reported text (issue 12) -------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Melanie: We must never log card numbers.",
        "TypeError: you must pass a str\nError: never call this twice",
        "Checking out the ref\n  Note: switching to 'refs/remotes/pull/15/merge'.",
        "Dear Anna,\nWe must never deploy on Fridays.\n\nBest regards,\nBob",
        'He said: "Please. Don\'t touch the legacy billing module."',
        "The owner must pay the contract price and other money that becomes\n"
        "payable under this contract in the manner stated.",
        "This is an information about the API. Reply acknowledged if you understand:\n"
        "Always run the migrations in a transaction.",
        "x" * 2_100 + "\nWe must never log card numbers.",
    ],
)
def test_pasted_and_reported_text_gives_nothing(text: str) -> None:
    assert analyse(text, "user") == []


def test_labels_still_count_in_pasted_material_and_rules_can_be_announced() -> None:
    pasted = "Does this doc page help?\nTools must be in the PATH.\nDecision: we use uv."
    assert [c.label for c in analyse(pasted, "user")] == ["decision"]
    announced = "Here are the rules for this task:\nAlways answer in English."
    assert [c.label for c in analyse(announced, "user")] == ["constraint"]
    # A long answer is the assistant's own words to its end.
    answer = "x" * 2_100 + "\nI suggest we add a partial index on orders(status)."
    assert [c.label for c in analyse(answer, "assistant")] == ["proposal"]


def test_a_quotation_ends_and_the_person_speaks_again() -> None:
    text = 'He said: "Don\'t tear your clothes so savagely." We must never log card numbers.'
    assert [c.content for c in analyse(text, "user")] == ["We must never log card numbers."]


def test_a_speaker_label_is_no_key_but_a_known_key_is() -> None:
    assert subject_key("Melanie: Thanks, Caroline!") is None
    assert subject_key("Gina: 2 kids") is None
    assert subject_key("Deadline: Friday") == "deadline"
    assert subject_key("api_port: 9090") == "api_port"


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from([*_TRIGGERS, "K", "İ", "x", " ", "\n", "Do", "NOT"]), max_size=6))
def test_the_prefilter_finds_every_trigger_in_any_script(parts) -> None:
    # Its ASCII shortcut must not lose a trigger: texts mixing scripts, cases and spaces.
    text = "".join(parts)
    lowered = " ".join(text.lower().split())
    assert _maybe_cue(text) == any(trigger in lowered for trigger in _TRIGGERS)


# Words of the trigger tables cut up, glued to others and spaced in other scripts: a
# trigger inside a word, across two words, or split by a blank that is no space.
# The halves of the phrases come as often as whole triggers, so that a half without the
# other ("x is", "it isn't") is tried too.
TRIGGER_SOUP = st.lists(
    st.one_of(
        st.sampled_from(_AGENT_TRIGGERS),
        st.sampled_from(
            [*sorted({w for t in _AGENT_TRIGGERS if " " in t for w in t.split(" ")}), "K", "İ", "x",
             " ", " ", " ", "  ", "\n", "\u3000", "\x1c", "Do", "NOT", "ab", "-", "n't"]
        ),
    ),
    max_size=8,
)  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(TRIGGER_SOUP, st.booleans())
def test_the_prefilter_finds_every_agent_trigger(parts, agent) -> None:
    text = "".join(parts)
    lowered = " ".join(text.lower().split())
    triggers = _AGENT_TRIGGERS if agent else _TRIGGERS
    assert _maybe_cue(text, agent) == any(trigger in lowered for trigger in triggers)


@settings(max_examples=300, deadline=None)
@given(st.lists(TRIGGER_SOUP, min_size=1, max_size=6))
def test_words_remembered_never_change_the_answer(texts) -> None:
    # A table that has seen other texts (and forgot them when full) answers as a new one.
    # Learning one new word per text, most texts are scanned whole while words pile up.
    table = _Triggers(_AGENT_TRIGGERS)
    table.WORDS, table.LEARN = 3, 1
    for parts in texts:
        words = "".join(parts).lower().split()
        lowered = " ".join(words)
        fresh = _Triggers(_AGENT_TRIGGERS)
        fresh.LEARN = 1
        expected = any(t in lowered for t in _AGENT_TRIGGERS)
        assert table.any_in(words) == fresh.any_in(words) == expected


# What sentence ends are made of, and what sits around them.
END_SOUP = st.lists(
    st.sampled_from(
        [".", "!", "?", ";", "。", "！", "？", "；", '"', "”", "’", "'", " ", "\t", "\u3000", "a",
         "B", "e.g.", "etc.", "vs.", "😅", "☀", "Z", "x"]
    ),
    max_size=10,
)  # fmt: skip


@settings(max_examples=1000, deadline=None)
@given(END_SOUP)
def test_a_line_the_end_filter_passes_over_splits_into_itself(parts) -> None:
    line = "".join(parts)
    if not _may_end(line):
        assert _SENTENCE_END.split(line) == [line]
        assert _AGENT_SENTENCE_END.split(line) == [line]


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.sampled_from(["*", "_", "**", "Decision", ":", "：", " ", "x", "\n"]), max_size=8)
)
def test_only_a_line_opening_with_markup_has_a_bold_label(parts) -> None:
    line = "".join(parts)
    if not line.startswith(("*", "_")):
        assert _BOLD_LABEL.sub(r"\1 ", line) == line


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["option", "Option", "OPTION", "approach", "choice", "opt", "ion", "A", "2", ":", ")",
             " ", ".", "x", "İ", "ı", "optıon"]
        ),
        max_size=10,
    )
)  # fmt: skip
def test_an_ascii_text_without_an_offer_word_has_no_inline_offer(parts) -> None:
    text = "".join(parts)
    if text.isascii() and not any(word in text.lower() for word in _INLINE_WORDS):
        assert list(_INLINE.finditer(text)) == []


def test_a_cue_pattern_compiles_when_first_used_and_then_is_the_compiled_pattern() -> None:
    # A fresh process: this one's other tests have long since used every pattern.
    code = """
import re
from memplug.derive.cues import classify
from memplug.base.patterns import LazyPattern
from memplug.derive.cues.rules import ALL_RULES
fields = [getattr(rule, name) for rule in ALL_RULES for name in rule.__struct_fields__]
patterns = [value for value in fields if isinstance(value, LazyPattern)]
def compiled():
    return sum(isinstance(getattr(p.search, "__self__", None), re.Pattern) for p in patterns)
before = compiled()
assert classify("Decision: we ship on Friday.") == "decision"
print(len(patterns), before, compiled())
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    total, before, after = map(int, done.stdout.split())
    assert before == 0 and 0 < after < total
    rule = RULES_BY_ID["en.decision.label"]
    assert rule.pattern.search("Decision: x") is not None
    assert rule.pattern.search.__self__ == re.compile(rule.pattern.source, rule.pattern.flags)


def test_every_rule_names_the_fragments_its_matches_hold() -> None:
    # The prefilter is the union of the rules' triggers: a rule whose matches could lack
    # all of its own would lose them to the prefilter. The option pick is read before it.
    for rule in RULES:
        assert bool(rule.triggers) == (rule is not PICK_RULE), rule.id
        for example in rule.examples if rule.triggers else ():
            masked = mask_code(example.text)
            if any(rule.matches(masked, agent=example.agent)):
                lowered = " ".join(masked.lower().split())
                assert any(t in lowered for t in rule.triggers), (rule.id, example.text)
