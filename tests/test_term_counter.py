"""TermCounter remembers how it judged each word match (memplug/recall/retrieve/lexical.py):
what one text counts must not depend on the texts counted before it."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from memplug.recall.query import parse_query
from memplug.recall.retrieve.lexical import TermCounter, pin_patterns

QUERY = "painted billing port checkout"
WORDS = ["painted", "painting", "painter", "paint", "billing", "bill", "port", "portal",
         "ports", "checkout", "checked", "x9", "端口"]  # fmt: skip
texts = st.lists(st.sampled_from(WORDS), max_size=12).map(lambda ws: " ".join(ws))


@given(st.lists(texts, min_size=1, max_size=6), st.sampled_from([1.0, 0.5, 0.0]))
def test_counts_are_those_of_a_fresh_counter(seq: list[str], prefix_weight: float) -> None:
    signals = parse_query(QUERY)
    shared = TermCounter(signals, prefix_weight)
    for text in seq:
        assert shared.counts(text) == TermCounter(signals, prefix_weight).counts(text)


def test_a_word_that_only_begins_like_the_query_word_counts_its_prefix_weight() -> None:
    counter = TermCounter(parse_query("painted"), 0.5)
    counter.counts("painter")
    found, whole = counter.counts("painting painter painting")
    assert found == {"paint": 2.5}
    assert whole == {"painting", "painter"}


# The word scan looks for the stems themselves and tests each match's left boundary in
# code; the pins put their lookbehind after the symbol. Both must find exactly what a
# pattern that tests the boundary first, at every offset, finds.
SCAN_QUERY = "where did we say the flaky e2e failures after compaction in v2.31 with x9?"
PIECES = ["say", "said", "flaky", "failur", "failures", "compact", "e2e", "v2.31", "2.31",
          "x9", "x", "9", "a", "Z", " ", "_", "-", ".", "É", "é", "e2e5", "\n"]  # fmt: skip
scan_texts = st.lists(st.sampled_from(PIECES), max_size=16).map("".join)


@given(scan_texts)
def test_word_counts_are_those_of_a_boundary_tested_at_every_offset(text: str) -> None:
    signals = parse_query(SCAN_QUERY)
    stems = {t.text for g in signals.groups for t in g if t.kind == "word" and not t.short_word}
    alternation = "|".join(re.escape(s) for s in sorted(stems, key=lambda s: (-len(s), s)))
    reference = re.compile(rf"(?<![a-z0-9])({alternation})([a-z0-9]*)")
    expected: dict[str, float] = {}
    for stem, _ in reference.findall(text.lower()):
        expected[stem] = expected.get(stem, 0.0) + 1
    found, whole = TermCounter(signals).counts(text.lower())
    assert {k: v for k, v in found.items() if k in stems} == expected
    assert whole == {stem + rest for stem, rest in reference.findall(text.lower())}


@given(scan_texts)
def test_pins_match_where_a_leading_lookbehind_would(text: str) -> None:
    signals = parse_query(SCAN_QUERY)
    for pin, pattern in pin_patterns(signals):
        body = re.escape(pin)
        if re.fullmatch(r"v\d+(\.\d+)+.*", pin):
            body = "v?" + re.escape(pin[1:])
        reference = re.compile(rf"(?<![^\W_]){body}(?![0-9]|\.[0-9])")
        assert bool(pattern.search(text.lower())) == bool(reference.search(text.lower())), pin
